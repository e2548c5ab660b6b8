"""G-Memory: interaction graphs, a query graph and scored insights (see method.py for the spec)."""

from baselines.g_memory.method import GMemory

__all__ = ["GMemory"]
