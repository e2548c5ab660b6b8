"""Append-only JSON-lines files that survive a kill -9.

A process killed mid-write leaves at most one partial last line; readers skip
it and `repair` cuts it off before appending, so a resumed run never glues a
new record onto a broken one. A damaged line elsewhere (the file was changed
outside the harness) raises `BadLine`; the caller decides whether that is
fatal (samples.jsonl) or can be set aside (the audit log).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class BadLine(ValueError):
    """A line before the last one is not a JSON object."""

    def __init__(self, path: Path, line: int) -> None:
        super().__init__(f"{path}: line {line} is not valid JSON")
        self.path = path
        self.line = line


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


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
        obj = _parse(raw)
        if obj is None:
            if i == len(lines) - 1:  # torn tail from a crash
                break
            raise BadLine(path, i + 1)
        records.append(obj)
    return records


def set_aside_bad_lines(path: Path) -> int:
    """Move every line that is not a JSON object to `<file>.damaged` (appended, so nothing is
    lost) and keep the rest; returns how many lines were moved."""
    if not path.exists():
        return 0
    lines = path.read_bytes().split(b"\n")
    good = [raw for raw in lines if raw.strip() and _parse(raw) is not None]
    bad = [raw for raw in lines[:-1] if raw.strip() and _parse(raw) is None]
    if not bad:
        return 0
    with path.with_name(path.name + ".damaged").open("ab") as fh:
        fh.write(b"".join(raw + b"\n" for raw in bad))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(raw + b"\n" for raw in good))
    os.replace(tmp, path)
    return len(bad)


def repair(path: Path) -> None:
    """Cut a torn last line left by a crash, so appends start on a fresh line; a complete
    record that only lacks its newline is kept (its newline is added)."""
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    if _parse(data[keep:]) is not None:
        with path.open("ab") as fh:
            fh.write(b"\n")
        return
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


def fsync_file(path: Path) -> None:
    """Push a file's written data to disk (the group commit of records appended without fsync)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write via a temp file and rename, so readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write via a temp file and rename, so readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
