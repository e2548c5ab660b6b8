"""The files a run writes, and how a resumed run reads them back (names and reader: results_format).

    run.json            header: identity, resolved config (scrubbed), versions, data
                        hashes, protocol; final status, counts, usage, cost
    samples.jsonl       one record per executed stream item, appended (and fsynced, or
                        group-committed: `runtime.fsync_interval_s`) as it finishes
                        (the commit point of a sample)
    trajectories/       per item: the episodes its rollouts produced (replay, rescoring)
    memory/snapshot-*.json[.gz]  memory + framework state every N records (+ audit sequence):
                        compact JSON, gzipped when large; the newest few and those at phase or
                        epoch ends are kept, older ones deleted (disk bounded by the memory's size)
    memory/audit.jsonl  the memory method's audit log
    run.log             log lines (secrets redacted)

A record with status `infra_error` does not count as done: a rerun redoes it
and appends a new record with a higher `attempt`; readers take the latest
attempt per stream position.

Damage done outside the harness is reported, not guessed around: an unreadable
run.json, samples.jsonl line or needed trajectory raises `RunStateError` naming
the file and what to do; a bad snapshot is moved aside and the previous one (or
replay from the start) is used. `.reserve` holds a little disk space so a full
disk can still record the run's final status; a run that cannot make it does
not start (it records `failed` if a small write still fits).
"""

from __future__ import annotations

import errno
import fcntl
import gzip
import json
import logging
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.errors import RunRefused, RunStateError
from aecg_bench.jsonl import (
    BadLine,
    append_jsonl,
    fsync_file,
    read_jsonl,
    repair,
    write_bytes_atomic,
    write_json_atomic,
)
from aecg_bench.results_format import RUN_JSON, SAMPLES, latest_by_position, snapshot_bytes, snapshot_files
from aecg_bench.runner.identity import Redactor
from aecg_bench.types import Status

__all__ = ["RUN_JSON", "SAMPLES", "RunDir", "Snapshot", "done_positions", "latest_by_position"]

log = logging.getLogger("aecg_bench.run")

RESERVE = ".reserve"
RESERVE_BYTES = 1 << 20  # room for the final run.json (a few tens of KB) even on a full disk
GZIP_OVER = 1 << 20  # snapshots of more JSON bytes than this are gzipped (level 1: ~5x smaller, fast)


@dataclass(frozen=True)
class Snapshot:
    records_seq: int  # number of records in samples.jsonl when it was taken
    audit_seq: int
    state: dict[str, Any]
    path: Path
    nbytes: int = 0  # its JSON text's length (uncompressed): what the snapshot cadence is scaled by


class RunDir:
    """Every write goes through the redactor (removes secret values), so no file holds a key."""

    def __init__(
        self, path: Path, *, fsync: bool = True, redactor: Redactor | None = None, fsync_interval_s: float = 0.0
    ) -> None:
        self.path = path
        self.fsync = fsync
        self.fsync_interval_s = fsync_interval_s
        self._synced_at = float("-inf")
        self._unsynced = False
        self.redactor = redactor or Redactor.none()
        self.redact: Callable[[Any], Any] = self.redactor.deep
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
        """Take the run's lock, then (only then) tidy what a crash left: torn tails, temp files."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock()
        for d in (self.trajectories, self.memory_dir):
            d.mkdir(parents=True, exist_ok=True)
        for stale in (*self.path.glob("*.tmp"), *self.memory_dir.glob("*.tmp"), *self.trajectories.glob("*.tmp")):
            stale.unlink(missing_ok=True)  # a write_json_atomic/trajectory write cut short by a kill
        repair(self.samples_file)
        repair(self.audit_file)
        self.reserved = self._reserve()

    def _lock(self) -> None:
        """One process per run directory: a second one (a stray sweep worker, a double launch)
        would append duplicate records. The OS drops the lock when its holder dies. The process
        that loses touches nothing: it only reads the holder's pid."""
        fh = (self.path / ".lock").open("a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise RunRefused(
                f"{self.path} is being run by {holder}; wait for it to finish or stop it, then rerun"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        self._lock_fh = fh

    def _reserve(self) -> bool:
        """Hold RESERVE_BYTES of real disk blocks, given back only to write the final status. False when
        the disk has not that much left: the run must not start (it could not record how it ends)."""
        path = self.path / RESERVE
        if path.exists() and path.stat().st_size >= RESERVE_BYTES:
            return True
        try:
            allocate(path, RESERVE_BYTES)
        except OSError as exc:
            path.unlink(missing_ok=True)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                return False
            raise
        return True

    def write_final_header(self, header: dict[str, Any]) -> None:
        """The last write of a run (its outcome), after its records are on disk; on a full disk the
        reserve makes room for it."""
        self.sync_records()
        try:
            self.write_header(header)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not (self.path / RESERVE).exists():
                raise
            (self.path / RESERVE).unlink()
            self.write_header(header)

    def release(self) -> None:
        fh = getattr(self, "_lock_fh", None)
        if fh is not None:
            try:
                self.sync_records()
            except OSError as exc:  # the run's outcome is already recorded or being raised
                log.warning("could not fsync %s: %s", self.samples_file, exc)
            (self.path / RESERVE).unlink(missing_ok=True)
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()
            self._lock_fh = None

    # -- header --------------------------------------------------------------

    def read_header(self) -> dict[str, Any] | None:
        if not self.run_json.exists():
            return None
        try:
            header = json.loads(self.run_json.read_text(encoding="utf-8"))
            if not isinstance(header, dict) or not isinstance(header.get("identity"), dict):
                raise ValueError("not a run header")
            return header
        except (ValueError, UnicodeDecodeError):
            raise RunStateError(
                f"{self.run_json} is damaged (not a valid run header); move it aside "
                f"(mv {self.run_json} {self.run_json}.damaged) and rerun to rebuild it from this command"
            ) from None

    def write_header(self, header: dict[str, Any]) -> None:
        write_json_atomic(self.run_json, self.redact(header))

    # -- records -------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        try:
            records = read_jsonl(self.samples_file)
        except BadLine as exc:
            raise RunStateError(
                f"{self.samples_file}: line {exc.line} is damaged (not a JSON record); restore the file from a "
                "backup, or delete that line and memory/snapshot-*.json to rerun its sample (memory is rebuilt "
                "by replay)"
            ) from None
        for i, rec in enumerate(records):
            if not all(k in rec for k in ("position", "attempt", "status")):
                raise RunStateError(
                    f"{self.samples_file}: record {i + 1} lacks position/attempt/status; restore the file "
                    "from a backup, or delete that line and memory/snapshot-*.json to rerun its sample"
                )
        return records

    def append_record(self, record: dict[str, Any]) -> None:
        """Append and flush to the OS (a kill -9 then loses nothing); fsync each record, or with a group
        commit interval only the first record after the interval has passed (a power cut can then lose
        the records of the last interval, which a rerun runs again) and at the run's end."""
        now = time.monotonic()
        sync = self.fsync and now - self._synced_at >= self.fsync_interval_s
        append_jsonl(self.samples_file, self.redact(record), fsync=sync)
        if sync:
            self._synced_at, self._unsynced = now, False
        else:
            self._unsynced = self.fsync

    def sync_records(self) -> None:
        """fsync records a group commit has not pushed to disk yet."""
        if self._unsynced:
            fsync_file(self.samples_file)
            self._synced_at, self._unsynced = time.monotonic(), False

    # -- trajectories --------------------------------------------------------

    def trajectory_path(self, position: int, attempt: int) -> Path:
        return self.trajectories / f"{position:06d}-a{attempt}.json.gz"

    def write_trajectory(self, position: int, attempt: int, payload: dict[str, Any]) -> Path:
        path = self.trajectory_path(position, attempt)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wb", compresslevel=6) as fh:
            fh.write(self.redactor.dumps(payload).encode("utf-8"))
        tmp.replace(path)
        return path

    def read_trajectory(self, position: int, attempt: int) -> dict[str, Any]:
        path = self.trajectory_path(position, attempt)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                data = json.load(fh)
            if not isinstance(data, dict) or not isinstance(data.get("rollouts"), list):
                raise ValueError("no rollouts")
            return data
        except (OSError, EOFError, ValueError, UnicodeDecodeError) as exc:
            raise RunStateError(
                f"{path} is damaged or missing ({type(exc).__name__}); resume needs it to replay memory: "
                f"restore it from a backup, or move {self.path} aside to start the run over"
            ) from None

    # -- memory snapshots ----------------------------------------------------

    def write_snapshot(self, records_seq: int, audit_seq: int, state: dict[str, Any]) -> Snapshot:
        """Compact JSON (gzipped over GZIP_OVER bytes) via a temp file and a rename: a kill leaves the
        previous snapshots and at most a .tmp, which `create` removes."""
        text = self.redactor.dumps({"records_seq": records_seq, "audit_seq": audit_seq, "state": state})
        data = text.encode("utf-8")
        plain = self.memory_dir / f"snapshot-{records_seq:06d}.json"
        packed = plain.with_name(plain.name + ".gz")
        path, other = (packed, plain) if len(data) > GZIP_OVER else (plain, packed)
        write_bytes_atomic(path, gzip.compress(data, compresslevel=1, mtime=0) if path is packed else data)
        other.unlink(missing_ok=True)  # the same point written again (the last record is also a phase end)
        return Snapshot(records_seq, audit_seq, state, path, len(data))

    def prune_snapshots(self, keep: int, pinned: set[int]) -> list[Path]:
        """Delete every snapshot but the `keep` newest and those at `pinned` record counts (protocol
        phase and epoch ends); returns what was deleted. Called after a write, so a kill in between
        only leaves one more file than needed."""
        snaps = snapshot_files(self.memory_dir)
        newest = {seq for seq, _ in snaps[-keep:]} if keep > 0 else set()
        gone = [path for seq, path in snaps if seq not in newest and seq not in pinned]
        for path in gone:
            path.unlink(missing_ok=True)
        return gone

    def snapshots(self, max_records_seq: int) -> list[Path]:
        """Snapshot files, newest first, that cover no more records than exist (a snapshot is
        written after its record, so a newer one can only exist if the record survived)."""
        return [p for seq, p in reversed(snapshot_files(self.memory_dir)) if seq <= max_records_seq]

    def read_snapshot(self, path: Path) -> Snapshot:
        """One snapshot (plain or gzipped); RunStateError if it is truncated or has the wrong shape."""
        try:
            raw = snapshot_bytes(path)
            data = json.loads(raw)
            snap = Snapshot(int(data["records_seq"]), int(data["audit_seq"]), data["state"], path, len(raw))
            if not isinstance(snap.state, dict) or not {"memory", "framework"} <= set(snap.state):
                raise ValueError("state lacks memory/framework")
            return snap
        except (gzip.BadGzipFile, zlib.error, EOFError, ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
            raise RunStateError(f"{path} is damaged ({type(exc).__name__}: {exc})") from None

    def set_aside(self, path: Path) -> Path:
        """Keep a damaged file for inspection under a name no reader picks up."""
        dest = path.with_name(path.name + ".damaged")
        os.replace(path, dest)
        return dest

    def latest_snapshot(self, max_records_seq: int) -> Snapshot | None:
        """The newest readable snapshot (see `snapshots`)."""
        for path in self.snapshots(max_records_seq):
            try:
                return self.read_snapshot(path)
            except RunStateError:
                continue
        return None


def allocate(path: Path, size: int) -> None:
    """A file of `size` bytes of real blocks (fallocate: no delayed allocation to fail later)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.write(fd, b"\0" * size)  # a file system without fallocate
            os.fsync(fd)
    finally:
        os.close(fd)


def done_positions(records: list[dict[str, Any]]) -> set[int]:
    return {p for p, r in latest_by_position(records).items() if r["status"] != Status.INFRA_ERROR}
