"""`no_memory`: no cross-task memory. Native within-task context (the framework's own
history) is untouched; nothing is stored, nothing is recalled."""

from __future__ import annotations

from typing import Any

from aecg_bench.contracts import MemoryMethod
from aecg_bench.types import Episode, MemoryItem, RecallQuery


class NoMemory(MemoryMethod):
    name = "no_memory"
    version = "1"
    pure_recall = True
    learns_nothing = True  # so its samples may run at once under any protocol (runner/concurrent.py)

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        return []

    def observe(self, episode: Episode) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None
