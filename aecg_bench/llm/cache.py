"""SQLite response cache: makes reruns exact and free.

Key: sha256 of the canonical JSON of {key version, provider, model id, api
base, messages, tools, generation parameters (no transport settings), seed,
sample_index, scope}. Modes: `off`, `read_write`, `read_only` (a miss raises
`CacheMissError` naming the key). Errors and empty outputs are never stored.

First writer wins: when two runs of a parallel sweep send the same request
(same-seed ablations share their construction calls) and both miss, the reply
stored first is the one both use (`put` returns it), so no later reply can
replace one a run already built memory from, and a resumed run replays
exactly what it saw.

One connection per thread (SQLite connections are not shareable), WAL so
readers never block the writer, and several processes (Hydra multirun jobs)
may share one file. A writer that holds the file longer than `lock_timeout_s`
costs one wait: the response is used but not stored, and this process stops
storing (one warning) instead of waiting again on every call. A file that is
not a usable SQLite database (garbage, truncated) stops the run with one line.

SQLite on a network file system is unsafe for concurrent writers (its locks
are unreliable there, and WAL needs shared memory), so runs on a cluster write
shards instead (`shard=`): each run writes its own file under `<cache>.shards/`
(named after the run's directory, so a requeued job continues its run's shard)
in rollback-journal mode and reads the main cache as an immutable file. Reads
look in the run's shard first, then in the main cache, so a run, its resume and
its replay see exactly the answers the run saw. `merge_shards` folds the shards
into the main cache after the sweep: a key already there is never replaced, a
new key gets its earliest answer, and a run whose shard holds another answer
for a key is listed in the main cache's `conflicts` table. Runs of one sharded
sweep do not share answers they both miss (each keeps its own); a `read_only`
replay whose shard is gone refuses, naming the key, where the merged answer is
not the one the run saw.

Files are opened by path or by a percent-encoded `file:` URI, never by
formatting a path into a URI: `#`, `?`, `%`, spaces and non-ASCII characters in
a results path are fine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal

from aecg_bench.errors import CacheMissError, ConfigError, RunStateError, one_line

CacheMode = Literal["off", "read_write", "read_only"]
CACHE_MODES: tuple[str, ...] = ("off", "read_write", "read_only")
KEY_VERSION = 1
log = logging.getLogger("aecg_bench.cache")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""
# Written by merge_shards: runs (shards) that saw another answer for a key than the main cache holds.
_CONFLICTS = "CREATE TABLE IF NOT EXISTS conflicts (key TEXT NOT NULL, shard TEXT NOT NULL, PRIMARY KEY (key, shard))"


def cache_key(payload: dict[str, Any]) -> str:
    """sha256 over canonical JSON (sorted keys, no whitespace)."""
    blob = json.dumps({"v": KEY_VERSION, **payload}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _locked(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def shard_dir(path: Path) -> Path:
    return path.with_name(path.name + ".shards")


def shard_name() -> str:
    """A name per process: host and pid (the sweep budget's files)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def run_shard(run_dir: Path, results_root: Path) -> str:
    """A run's shard: its directory below the results root, one file name (the same on every node)."""
    try:
        parts = run_dir.relative_to(results_root).parts
    except ValueError:
        parts = run_dir.parts[-6:]
    return "+".join(parts)


def sqlite_uri(path: Path, **query: str) -> str:
    """A `file:` URI for SQLite that survives any character in the path (`#`, `?`, `%`, spaces)."""
    uri = path.absolute().as_uri()
    return uri + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


class ResponseCache:
    def __init__(
        self,
        path: Path | None,
        mode: CacheMode = "read_write",
        *,
        lock_timeout_s: float = 10.0,
        shard: str | None = None,
        shard_writes: bool = True,
    ) -> None:
        """`shard` names the run's shard: read first in every mode; written in `read_write` when
        `shard_writes` (clusters); otherwise the run writes the main cache."""
        if mode not in CACHE_MODES:
            raise ConfigError(f"unknown cache mode {mode!r}; valid choices: {', '.join(CACHE_MODES)}")
        if mode != "off" and path is None:
            raise ConfigError(f"cache mode {mode!r} needs a cache path")
        self.path = path
        self.mode: CacheMode = mode
        self.shard = shard
        self.shard_path = shard_dir(path) / f"{shard}.sqlite" if shard and path else None
        # Where this run writes: the main file, or its own shard next to it.
        self.write_path = self.shard_path if shard_writes and mode == "read_write" and self.shard_path else path
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self.lock_timeout_s = lock_timeout_s
        self.skipped_writes = 0
        self._writes_off = False
        if mode == "read_only" and path is not None and not path.exists():
            raise CacheMissError(f"read_only cache {path} does not exist")
        if mode != "off" and self.write_path is not None:
            self.write_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._conn()  # create the schema up front
                self._conn().execute("SELECT key FROM responses LIMIT 1").fetchone()
            except sqlite3.Error as exc:
                raise self._unusable(exc) from None

    def _unusable(self, exc: sqlite3.Error) -> RunStateError:
        """One line for a cache file that cannot serve: damaged, unwritable, or a full disk."""
        text = str(exc)
        if "full" in text:
            advice = "free disk space, then rerun to resume"
        elif "readonly" in text or "unable to open" in text:
            advice = "make it writable, or set runtime.cache.path to a writable file"
        elif _locked(exc):
            advice = "stop the process holding it, or set runtime.cache.path to another file"
        else:
            advice = (
                f"move it aside (mv {self.path} {self.path}.damaged) to start an empty cache, or set runtime.cache.path"
            )
        return RunStateError(f"response cache {self.path} is not usable ({text}); {advice}")

    @property
    def sharded(self) -> bool:
        return self.write_path != self.path

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection to the file it writes (or reads, in read_only mode)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            assert self.write_path is not None
            uri = sqlite_uri(self.write_path, **({"mode": "ro"} if self.mode == "read_only" else {}))
            conn = _connect(uri, self.lock_timeout_s)
            if self.mode != "read_only":
                # one writer per shard: no shared memory needed (WAL's would not work on a network file system)
                conn.execute(f"PRAGMA journal_mode={'DELETE' if self.sharded else 'WAL'}")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    def _merged(self) -> sqlite3.Connection | None:
        """A sharded process's read-only view of the main cache (None before the first merge)."""
        if not self.sharded:
            return None
        conn = getattr(self._local, "merged", None)
        if conn is None:
            assert self.path is not None
            if not self.path.exists():
                return None
            conn = _connect(_read_only_uri(self.path), self.lock_timeout_s)
            self._local.merged = conn
        return conn

    def _own_shard(self) -> sqlite3.Connection | None:
        """The run's shard when this run does not write it (a replay, a resume off the cluster)."""
        if self.sharded or self.shard_path is None or self.mode == "off":
            return None
        conn = getattr(self._local, "shard", None)
        if conn is None:
            if not self.shard_path.exists():
                return None
            conn = _connect(sqlite_uri(self.shard_path, mode="ro"), self.lock_timeout_s)
            self._local.shard = conn
        return conn

    def _sources(self) -> list[sqlite3.Connection]:
        """Where a key is looked up, in order: the run's own shard, then the main cache."""
        if self.sharded:
            return [c for c in (self._conn(), self._merged()) if c is not None]
        return [c for c in (self._own_shard(), self._conn()) if c is not None]

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response, or None (mode off, or a miss in read_write)."""
        if self.mode == "off":
            return None
        row = None
        try:
            for conn in self._sources():
                row = conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    main = conn is (self._merged() if self.sharded else self._conn())
                    if main and self.mode == "read_only" and self.shard and self._conflicts(conn, key):
                        raise CacheMissError(
                            f"replay refused: run {self.shard} saw another answer for key {key} than the merged cache "
                            f"{self.path} holds (its sweep wrote shards), and its shard {self.shard_path} is gone; "
                            "restore the shard to replay this run exactly"
                        )
                    break
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        if row is None:
            self.misses += 1
            if self.mode == "read_only":
                assert self.path is not None
                unmerged = any(shard_dir(self.path).glob("*.sqlite"))
                hint = f"; shards not yet merged? python -m aecg_bench.llm.cache merge {self.path}" if unmerged else ""
                raise CacheMissError(
                    f"cache miss in read_only mode for key {key} (cache {self.path}); "
                    f"rerun with runtime.cache.mode=read_write to fill it{hint}"
                )
            return None
        self.hits += 1
        return json.loads(row[0])

    def _conflicts(self, conn: sqlite3.Connection, key: str) -> bool:
        try:
            found = conn.execute("SELECT 1 FROM conflicts WHERE key = ? AND shard = ?", (key, self.shard)).fetchone()
        except sqlite3.OperationalError:  # a cache no merge has written to
            return False
        return found is not None

    def put(self, key: str, model: str, value: dict[str, Any]) -> dict[str, Any]:
        """Store `value` unless the key is already stored; returns the stored (first-written) value."""
        if self.mode != "read_write":
            return value
        if self._writes_off:
            self.skipped_writes += 1
            return value
        conn = self._conn()
        try:
            cur = conn.execute(
                "INSERT OR IGNORE INTO responses (key, model, value, created) VALUES (?, ?, ?, ?)",
                (key, model, json.dumps(value, ensure_ascii=False), time.time()),
            )
            if cur.rowcount == 1:
                return value
            row = conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            if not _locked(exc):
                raise self._unusable(exc) from None
            self._writes_off = True
            self.skipped_writes += 1
            log.warning(
                "response cache %s is locked by another writer (waited %.0f s); this run goes on without "
                "storing responses, so a rerun calls the model again for them",
                self.path,
                self.lock_timeout_s,
            )
            return value
        return value if row is None else json.loads(row[0])

    def _rows(self) -> dict[str, tuple[str, str, str, float]]:
        rows: dict[str, tuple[str, str, str, float]] = {}
        for conn in reversed(self._sources()):  # the main cache, then the run's shard (which wins, as in `get`)
            rows.update({r[0]: r for r in conn.execute("SELECT key, model, value, created FROM responses")})
        return rows

    def __len__(self) -> int:
        if self.mode == "off":
            return 0
        if len(self._sources()) == 1:
            return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return len(self._rows())

    def export(self, dest: Path, keys: set[str] | None = None) -> int:
        """Copy entries (all, or the given keys) into a new cache file: a replay bundle."""
        if self.mode == "off":
            raise ConfigError("cannot export a cache in mode 'off'")
        dest.parent.mkdir(parents=True, exist_ok=True)
        out = sqlite3.connect(dest, isolation_level=None)
        out.execute(_SCHEMA)
        chosen = [r for k, r in self._rows().items() if keys is None or k in keys]
        out.execute("BEGIN")
        out.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", chosen)
        out.execute("COMMIT")
        out.close()
        return len(chosen)


def merge_shards(path: Path) -> tuple[int, int]:
    """Fold every shard of the cache at `path` into it. A key already in the main cache keeps its answer
    (a run may have read it); a new key gets the earliest answer any shard holds (ties: shard name), so
    the result does not depend on the order of merging; every shard whose answer differs from the one
    kept is recorded in `conflicts` (its run's replay needs its shard). Idempotent (shards are kept).
    Returns (shards merged, entries added)."""
    shards = sorted(shard_dir(path).glob("*.sqlite"))
    main = _writable(path, "WAL")
    main.execute(_CONFLICTS)
    before = main.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    main.execute("CREATE TEMP TABLE incoming (key TEXT, model TEXT, value TEXT, created REAL, shard TEXT)")
    for shard in shards:
        main.execute("ATTACH DATABASE ? AS shard", (sqlite_uri(shard, mode="ro"),))
        main.execute("INSERT INTO incoming SELECT key, model, value, created, ? FROM shard.responses", (shard.stem,))
        main.execute("DETACH DATABASE shard")
    main.execute("BEGIN IMMEDIATE")
    main.execute(
        "INSERT OR IGNORE INTO responses SELECT key, model, value, created FROM incoming ORDER BY created, shard"
    )
    main.execute(
        "INSERT OR IGNORE INTO conflicts SELECT i.key, i.shard FROM incoming i "
        "JOIN responses r ON r.key = i.key WHERE i.value != r.value"
    )
    main.execute("COMMIT")
    main.execute("DROP TABLE incoming")
    after = main.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    main.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # readers that open it immutable see everything
    main.close()
    return len(shards), after - before


def _read_only_uri(path: Path) -> str:
    """The main cache as sharded processes read it: immutable (no locks, no shared memory, safe on a network
    file system) when everything is checkpointed into the file, as `merge_shards` leaves it; read-only with
    locks while a writer on this machine still holds entries in its write-ahead log."""
    wal = path.with_name(path.name + "-wal")
    pending = wal.exists() and wal.stat().st_size > 0
    return sqlite_uri(path, mode="ro") if pending else sqlite_uri(path, mode="ro", immutable="1")


def _connect(uri: str, timeout_s: float) -> sqlite3.Connection:
    return sqlite3.connect(uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False)


def _writable(path: Path, journal: str) -> sqlite3.Connection:
    conn = _connect(sqlite_uri(path), 60.0)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(_SCHEMA)
    return conn


def main(argv: list[str] | None = None) -> int:
    """`python -m aecg_bench.llm.cache merge results/.cache/llm.sqlite`: fold a cluster sweep's shards."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("command", choices=["merge"])
    parser.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    try:
        n_shards, added = merge_shards(args.path)
    except sqlite3.Error as exc:
        print(f"error: cannot merge the shards of {args.path}: {one_line(exc)}", file=sys.stderr)
        return 2
    print(f"merged {n_shards} shards into {args.path}: {added} new entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
