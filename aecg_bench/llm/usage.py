"""Token and dollar accounting, per call and aggregated per role and per model."""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # input tokens the provider served from its prompt cache

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )


_FIELDS = (
    "calls",
    "provider_calls",
    "cache_hits",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost",
    "spent",
    "errors",
    "retries",
)


class UsageMeter:
    """Thread-safe accumulator; one per sample plus one per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: dict.fromkeys(_FIELDS, 0))

    def add(self, *, role: str, model: str, usage: Usage, cost: float, cache_hit: bool, retries: int = 0) -> None:
        with self._lock:
            row = self._by[(role, model)]
            row["calls"] += 1
            row["cache_hits"] += int(cache_hit)
            row["provider_calls"] += int(not cache_hit)
            row["input_tokens"] += usage.input_tokens
            row["output_tokens"] += usage.output_tokens
            row["cached_tokens"] += usage.cached_tokens
            row["cost"] += cost  # list-price value of the outputs, cached or not
            row["spent"] += 0.0 if cache_hit else cost  # dollars actually paid in this process
            row["retries"] += retries

    def add_error(self, *, role: str, model: str, retries: int = 0) -> None:
        with self._lock:
            row = self._by[(role, model)]
            row["errors"] += 1
            row["retries"] += retries

    def merge(self, other: UsageMeter) -> None:
        with self._lock, other._lock:
            for key, row in other._by.items():
                mine = self._by[key]
                for f in _FIELDS:
                    mine[f] += row[f]

    def by_role(self) -> dict[str, dict[str, float]]:
        return self._group(0)

    def by_model(self) -> dict[str, dict[str, float]]:
        return self._group(1)

    def total(self) -> dict[str, float]:
        out = dict.fromkeys(_FIELDS, 0)
        with self._lock:
            for row in self._by.values():
                for f in _FIELDS:
                    out[f] += row[f]
        return out

    def _group(self, idx: int) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(_FIELDS, 0))
        with self._lock:
            for key, row in self._by.items():
                for f in _FIELDS:
                    out[key[idx]][f] += row[f]
        return dict(out)

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total(), "by_role": self.by_role(), "by_model": self.by_model()}

    def state_dict(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{"role": r, "model": m, **row} for (r, m), row in self._by.items()]

    def load_state_dict(self, rows: list[dict[str, Any]]) -> None:
        with self._lock:
            for row in rows:
                mine = self._by[(row["role"], row["model"])]
                for f in _FIELDS:
                    mine[f] += row.get(f, 0)
