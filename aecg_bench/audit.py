"""Append-only audit log of what a memory method admitted, changed, reviewed, rejected and why.

Each event gets a sequence number. The number is part of the memory snapshot,
so on resume the runner truncates the file back to the snapshot and replays,
and the log never holds an event twice. The events cut are first appended to
`audit.jsonl.cut`, and dropped from there only once the replay has written them
again (`discard_cut`): a resume that fails midway loses no line.
"""

from __future__ import annotations

import json
import os
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

    @property
    def cut_path(self) -> Path | None:
        return self.path.with_name(self.path.name + ".cut") if self.path is not None else None

    def truncate_to(self, seq: int) -> None:
        """Drop events after `seq` (events recorded after the snapshot being restored); they are kept in
        `cut_path` until the replay has recorded them again."""
        self.close()
        events = self.read()
        kept = [e for e in events if e["seq"] <= seq]
        if self.path is None:
            self.events = kept
        else:
            cut = [e for e in events if e["seq"] > seq]
            if cut:
                assert self.cut_path is not None
                with self.cut_path.open("a", encoding="utf-8") as fh:
                    fh.write("".join(json.dumps(e, sort_keys=True) + "\n" for e in cut))
                    fh.flush()
                    os.fsync(fh.fileno())
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in kept), encoding="utf-8")
            tmp.replace(self.path)
        self.seq = seq

    def discard_cut(self) -> None:
        """The replay recorded the cut events again: their copy is no longer needed."""
        if self.cut_path is not None:
            self.cut_path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
