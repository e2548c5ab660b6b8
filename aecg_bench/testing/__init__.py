"""Test and measurement tooling that ships with the harness (never part of a paper table)."""

from aecg_bench.testing.memory import RecorderMemory

__all__ = ["RecorderMemory"]
