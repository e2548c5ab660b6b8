"""The files a run writes, and how a resumed run reads them back (names and reader: results_format).

    run.json            header: identity, resolved config (scrubbed), versions, data
                        hashes, protocol; final status, counts, usage, cost
    samples.jsonl       one record per executed stream item, appended and fsynced
                        as it finishes (the commit point of a sample)
    trajectories/       per item: the episodes its rollouts produced (replay, rescoring)
    memory/snapshot-*.json  memory state every N records (+ audit sequence)
    memory/audit.jsonl  the memory method's audit log
    run.log             log lines (secrets redacted)

A record with status `infra_error` does not count as done: a rerun redoes it
and appends a new record with a higher `attempt`; readers take the latest
attempt per stream position.
"""

from __future__ import annotations

import fcntl
import gzip
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.errors import ConfigError
from aecg_bench.jsonl import append_jsonl, read_jsonl, repair, write_json_atomic
from aecg_bench.results_format import RUN_JSON, SAMPLES, latest_by_position
from aecg_bench.types import Status

__all__ = ["RUN_JSON", "SAMPLES", "RunDir", "Snapshot", "done_positions", "latest_by_position"]


@dataclass(frozen=True)
class Snapshot:
    records_seq: int  # number of records in samples.jsonl when it was taken
    audit_seq: int
    state: dict[str, Any]
    path: Path


class RunDir:
    """Every write goes through `redact` (removes secret values), so no file holds a key."""

    def __init__(self, path: Path, *, fsync: bool = True, redact: Callable[[Any], Any] | None = None) -> None:
        self.path = path
        self.fsync = fsync
        self.redact = redact or (lambda obj: obj)
        self.trajectories = path / "trajectories"
        self.memory_dir = path / "memory"

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def samples_file(self) -> Path:
        return self.path / SAMPLES

    @property
    def audit_file(self) -> Path:
        return self.memory_dir / "audit.jsonl"

    def create(self) -> None:
        """Make the directories, take the run's lock, and cut torn tails left by a crash."""
        for d in (self.path, self.trajectories, self.memory_dir):
            d.mkdir(parents=True, exist_ok=True)
        self._lock()
        repair(self.samples_file)
        repair(self.audit_file)

    def _lock(self) -> None:
        """One process per run directory: a second one (a stray sweep worker, a double launch)
        would append duplicate records. The OS drops the lock when its holder dies."""
        fh = (self.path / ".lock").open("a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise ConfigError(f"{self.path} is being run by {holder}; wait for it or stop it first") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        self._lock_fh = fh

    def release(self) -> None:
        fh = getattr(self, "_lock_fh", None)
        if fh is not None:
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()
            self._lock_fh = None

    # -- header --------------------------------------------------------------

    def read_header(self) -> dict[str, Any] | None:
        if not self.run_json.exists():
            return None
        return json.loads(self.run_json.read_text(encoding="utf-8"))

    def write_header(self, header: dict[str, Any]) -> None:
        write_json_atomic(self.run_json, self.redact(header))

    # -- records -------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        return read_jsonl(self.samples_file)

    def append_record(self, record: dict[str, Any]) -> None:
        append_jsonl(self.samples_file, self.redact(record), fsync=self.fsync)

    # -- trajectories --------------------------------------------------------

    def trajectory_path(self, position: int, attempt: int) -> Path:
        return self.trajectories / f"{position:06d}-a{attempt}.json.gz"

    def write_trajectory(self, position: int, attempt: int, payload: dict[str, Any]) -> Path:
        path = self.trajectory_path(position, attempt)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as fh:
            json.dump(self.redact(payload), fh, sort_keys=True, ensure_ascii=False)
        tmp.replace(path)
        return path

    def read_trajectory(self, position: int, attempt: int) -> dict[str, Any]:
        with gzip.open(self.trajectory_path(position, attempt), "rt", encoding="utf-8") as fh:
            return json.load(fh)

    # -- memory snapshots ----------------------------------------------------

    def write_snapshot(self, records_seq: int, audit_seq: int, state: dict[str, Any]) -> Path:
        path = self.memory_dir / f"snapshot-{records_seq:06d}.json"
        write_json_atomic(path, self.redact({"records_seq": records_seq, "audit_seq": audit_seq, "state": state}))
        return path

    def latest_snapshot(self, max_records_seq: int) -> Snapshot | None:
        """The newest snapshot that covers no more records than exist (a snapshot is written
        after its record, so a newer one can only exist if the record survived)."""
        best: Snapshot | None = None
        for path in sorted(self.memory_dir.glob("snapshot-*.json")):
            seq = int(path.stem.split("-")[1])
            if seq <= max_records_seq:
                data = json.loads(path.read_text(encoding="utf-8"))
                best = Snapshot(data["records_seq"], data["audit_seq"], data["state"], path)
        return best


def done_positions(records: list[dict[str, Any]]) -> set[int]:
    return {p for p, r in latest_by_position(records).items() if r["status"] != Status.INFRA_ERROR}
