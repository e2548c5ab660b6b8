"""A sweep's dollar budget (`runtime.max_cost_usd`), shared by every process of the sweep, on any machine.

Each process keeps its own running total in its own small file under the
budget directory (rewritten atomically after every paid call: one writer per
file, so it is safe on a network file system, where SQLite is not). Before a
provider call, a process adds up every file (rescanned at most every
`rescan_s` seconds; its own total is always current) and the call's
worst-case price (estimated prompt tokens + the output length it allows); if
that would pass the budget, it raises `BudgetExceededError` and its run stops
as `stopped`, resumable: the sample in flight is not recorded, so raising the
budget and rerunning continues where it stopped. Cached answers cost nothing
and are never refused. Totals accumulate over reruns, so the budget bounds
the sweep's whole spend. Processes running at the same moment can each pass
the check, so the overshoot is at most one call per process plus what they
spend within `rescan_s`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from aecg_bench.errors import BudgetExceededError


def would_exceed(spent: float, estimate: float, limit: float) -> bool:
    return spent + estimate > limit


class SweepBudget:
    def __init__(
        self,
        directory: Path,
        max_usd: float,
        *,
        name: str,
        rescan_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = directory
        self.max_usd = max_usd
        self.path = directory / f"{name}.json"
        self.rescan_s = rescan_s
        self.clock = clock
        directory.mkdir(parents=True, exist_ok=True)
        self.mine = _read(self.path)
        self._others = 0.0
        self._scanned_at: float | None = None
        self._lock = threading.Lock()  # a run's concurrent samples (runner/concurrent.py) add from threads

    def spent(self) -> float:
        now = self.clock()
        if self._scanned_at is None or now - self._scanned_at >= self.rescan_s:
            self._others = sum(_read(p) for p in self.directory.glob("*.json") if p != self.path)
            self._scanned_at = now
        return self._others + self.mine

    def check(self, estimate_usd: float) -> None:
        """Refuse a call whose worst-case price would take the sweep past its budget."""
        spent = self.spent()
        if would_exceed(spent, estimate_usd, self.max_usd):
            raise BudgetExceededError(
                f"budget of ${self.max_usd:.2f} reached: the sweep has spent ${spent:.4f} and the next call may "
                f"cost up to ${estimate_usd:.4f}; raise runtime.max_cost_usd and rerun to continue"
            )

    def add(self, usd: float) -> None:
        if usd <= 0:
            return
        with self._lock:
            self.mine += usd
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"usd": self.mine}))
            os.replace(tmp, self.path)


def _read(path: Path) -> float:
    try:
        return float(json.loads(path.read_text())["usd"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return 0.0
