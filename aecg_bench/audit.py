"""Append-only audit log of what a memory method admitted, changed, reviewed, rejected and why.

Each event gets a sequence number. The number is part of the memory snapshot,
so on resume the runner truncates the file back to the snapshot and replays,
and the log never holds an event twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aecg_bench.jsonl import read_jsonl, set_aside_bad_lines
from aecg_bench.types import to_jsonable


class AuditLog:
    def __init__(self, path: Path | None = None, redact: Callable[[Any], Any] | None = None) -> None:
        self.path = path
        self.redact = redact or (lambda obj: obj)
        self.seq = 0
        self.context: dict[str, Any] = {}  # e.g. {"sample_id": ..., "position": ...}
        self.events: list[dict[str, Any]] = []  # kept in memory only when there is no file
        self._fh = None

    def record(self, event: str, **data: Any) -> dict[str, Any]:
        self.seq += 1
        entry = self.redact({"seq": self.seq, "event": event, **self.context, **to_jsonable(data)})
        if self.path is None:
            self.events.append(entry)
        else:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            self._fh.write(json.dumps(entry, sort_keys=True) + "\n")
            self._fh.flush()
        return entry

    def read(self) -> list[dict[str, Any]]:
        if self.path is None:
            return list(self.events)
        if self._fh is not None:
            self._fh.flush()
        if not self.path.exists():
            return []
        return read_jsonl(self.path)

    def set_aside_damaged(self) -> int:
        """Move lines damaged outside the harness to `audit.jsonl.damaged`: the log explains
        memory, it does not rebuild it, so a bad line is kept for reading but never fatal."""
        if self.path is None:
            return 0
        self.close()
        return set_aside_bad_lines(self.path)

    def truncate_to(self, seq: int) -> None:
        """Drop events after `seq` (events recorded after the snapshot being restored)."""
        self.close()
        kept = [e for e in self.read() if e["seq"] <= seq]
        if self.path is None:
            self.events = kept
        else:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in kept), encoding="utf-8")
            tmp.replace(self.path)
        self.seq = seq

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
