"""Progress bar for long runs: items, ETA, status counts, tokens and dollars so far."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any


class Progress:
    def __init__(self, *, total: int, done: int, enabled: bool, desc: str) -> None:
        self.enabled = enabled and total > 0
        self.statuses: Counter[str] = Counter()
        self.tokens = 0
        self.cost = 0.0
        self.successes = 0
        self.scored = 0
        self._bar: Any = None
        if self.enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, initial=done, desc=desc, unit="sample", dynamic_ncols=True, file=sys.stderr, smoothing=0.1
            )

    def seed_from(self, records: Iterable[dict[str, Any]]) -> None:
        """Count what a resumed run already has, so the bar shows whole-run figures."""
        for rec in records:
            self._count(rec)
        self._refresh()

    def update(self, record: dict[str, Any]) -> None:
        self._count(record)
        self._refresh()
        if self._bar is not None:
            self._bar.update(1)  # redraws with the new postfix

    def _count(self, rec: dict[str, Any]) -> None:
        self.statuses[rec["status"]] += 1
        total = rec["usage"]["total"]
        self.tokens += int(total["input_tokens"] + total["output_tokens"])
        self.cost += float(total["cost"])
        if rec["status"] != "infra_error" and rec["phase"] == "eval":
            self.scored += 1
            self.successes += int(bool(rec["success"]))

    def _refresh(self) -> None:
        if self._bar is None:
            return
        acc = f"{self.successes / self.scored:.0%}" if self.scored else "-"
        errs = self.statuses.get("infra_error", 0)
        self._bar.set_postfix_str(f"acc={acc} err={errs} tok={self.tokens:,} ${self.cost:.4f}", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
