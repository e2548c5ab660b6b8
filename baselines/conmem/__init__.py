"""ConMem: typed memory cards with admission, graph, per-role rendering (see method.py for the spec)."""

from baselines.conmem.method import ConMem

__all__ = ["ConMem"]
