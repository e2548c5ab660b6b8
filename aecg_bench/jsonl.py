"""Append-only JSON-lines files that survive a kill -9.

A process killed mid-write leaves at most one partial last line; readers skip
it and `repair` cuts it off before appending, so a resumed run never glues a
new record onto a broken one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete record; a torn final line (no newline, bad JSON) is ignored."""
    if not path.exists():
        return []
    data = path.read_bytes()
    records = []
    lines = data.split(b"\n")
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            records.append(json.loads(raw))
        except json.JSONDecodeError:
            if i == len(lines) - 1:  # torn tail from a crash
                break
            raise ValueError(f"{path}: line {i + 1} is not valid JSON") from None
    return records


def repair(path: Path) -> None:
    """Cut a torn last line left by a crash, so appends start on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with path.open("r+b") as fh:
        fh.truncate(keep)


def append_jsonl(path: Path, record: dict[str, Any], *, fsync: bool = True) -> None:
    """Append one record and push it to disk (it is the commit point of a sample)."""
    line = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    with path.open("ab") as fh:
        fh.write(line)
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write via a temp file and rename, so readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
