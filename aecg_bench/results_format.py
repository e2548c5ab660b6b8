"""The record format of a results folder: file names, schema version, and the reader.

Below both the runner (which writes run folders through `runner.records.RunDir`) and the
analysis (which only reads them), so neither imports the other's internals.

    <results_root>/<experiment>/<benchmark>/<framework>/<memory>/<model>/seed=<n>/
        run.json        header (schema SCHEMA_VERSION): labels, identity, protocol, models, roles, status
        samples.jsonl   one record per executed stream item; a rerun appends a higher `attempt`
        trajectories/   every rollout of an item (format TRAJECTORY_FORMAT)
        memory/snapshot-<records>.json[.gz]  memory + framework state after that many records: compact
                        JSON, gzipped when large; only the newest few and those at phase/epoch ends are kept
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.jsonl import read_jsonl

RUN_JSON = "run.json"
SAMPLES = "samples.jsonl"
SCHEMA_VERSION = 1
# trajectories/<position>-a<attempt>.json.gz: {"format": 2, "rollouts": [{episode, score, recalls, recalled_items}]}.
# Format 2 added `recalled_items` (each recalled memory item's text as the agents saw it, for the run viewer);
# files without "format" are format 1 and hold ids only.
TRAJECTORY_FORMAT = 2


# memory/snapshot-000120.json or snapshot-000120.json.gz; temp (.tmp) and set-aside (.damaged) files never match
SNAPSHOT_NAME = re.compile(r"snapshot-(\d+)\.json(\.gz)?")

SIZE_KEYS = ("limit", "max_steps")  # protocol keys that cut a run below the paper's size (the smoke presets)


def size_label(protocol: dict[str, Any]) -> str:
    """'full', or the size cuts a run was made under ('limit=2, max_steps=3'): runs of different presets
    are never pooled."""
    return ", ".join(f"{k}={protocol[k]}" for k in SIZE_KEYS if protocol.get(k) is not None) or "full"


@dataclass(frozen=True)
class Run:
    """One run folder as written: its header and the latest attempt of every stream position."""

    path: Path
    header: dict[str, Any]
    records: list[dict[str, Any]]


def latest_by_position(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The last attempt's record for every stream position."""
    out: dict[int, dict[str, Any]] = {}
    for rec in records:
        pos = rec["position"]
        if pos not in out or rec["attempt"] >= out[pos]["attempt"]:
            out[pos] = rec
    return out


def find_runs(root: Path) -> list[Path]:
    """Every run directory under `root` (a directory holding run.json), hidden folders skipped. A run's
    own folders (trajectories, memory) are not searched: a paper-sized tree holds tens of thousands of files."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if RUN_JSON in filenames:
            found.append(Path(dirpath))
            dirnames.clear()
        else:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
    return sorted(found)


def read_run(run_dir: Path) -> Run:
    """Header and latest records of one run folder (no records if samples.jsonl is absent)."""
    header = json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))
    schema = header.get("schema", SCHEMA_VERSION)
    if schema > SCHEMA_VERSION:
        raise ValueError(f"{run_dir / RUN_JSON}: schema {schema} is newer than this reader ({SCHEMA_VERSION})")
    samples = run_dir / SAMPLES
    records = list(latest_by_position(read_jsonl(samples)).values()) if samples.exists() else []
    return Run(run_dir, header, sorted(records, key=lambda r: r["position"]))


def read_runs(root: Path) -> list[Run]:
    return [read_run(d) for d in find_runs(root)]


def snapshot_files(memory_dir: Path) -> list[tuple[int, Path]]:
    """(records_seq, path) of every snapshot file of a run's memory folder, oldest first."""
    if not memory_dir.is_dir():
        return []
    found = []
    for path in memory_dir.iterdir():
        match = SNAPSHOT_NAME.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def snapshot_bytes(path: Path) -> bytes:
    """A snapshot's JSON text, whether written plain or gzipped."""
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.name.endswith(".gz") else raw


def latest_snapshot_state(run_dir: Path) -> dict[str, Any] | None:
    """The `state` ({memory, framework}) of a run's newest snapshot; None when it has none."""
    snaps = snapshot_files(Path(run_dir) / "memory")
    if not snaps:
        return None
    return json.loads(snapshot_bytes(snaps[-1][1]))["state"]
