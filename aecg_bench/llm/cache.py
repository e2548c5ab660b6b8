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
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal

from aecg_bench.errors import CacheMissError, ConfigError, RunStateError

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


def cache_key(payload: dict[str, Any]) -> str:
    """sha256 over canonical JSON (sorted keys, no whitespace)."""
    blob = json.dumps({"v": KEY_VERSION, **payload}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _locked(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


class ResponseCache:
    def __init__(self, path: Path | None, mode: CacheMode = "read_write", *, lock_timeout_s: float = 10.0) -> None:
        if mode not in CACHE_MODES:
            raise ConfigError(f"unknown cache mode {mode!r}; valid choices: {', '.join(CACHE_MODES)}")
        if mode != "off" and path is None:
            raise ConfigError(f"cache mode {mode!r} needs a cache path")
        self.path = path
        self.mode: CacheMode = mode
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self.lock_timeout_s = lock_timeout_s
        self.skipped_writes = 0
        self._writes_off = False
        if mode == "read_only" and path is not None and not path.exists():
            raise CacheMissError(f"read_only cache {path} does not exist")
        if mode != "off" and path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
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

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            assert self.path is not None
            uri = f"file:{self.path}?mode=ro" if self.mode == "read_only" else f"file:{self.path}"
            conn = sqlite3.connect(
                uri, uri=True, timeout=self.lock_timeout_s, isolation_level=None, check_same_thread=False
            )
            if self.mode != "read_only":
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response, or None (mode off, or a miss in read_write)."""
        if self.mode == "off":
            return None
        try:
            row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        if row is None:
            self.misses += 1
            if self.mode == "read_only":
                raise CacheMissError(
                    f"cache miss in read_only mode for key {key} (cache {self.path}); "
                    "rerun with runtime.cache.mode=read_write to fill it"
                )
            return None
        self.hits += 1
        return json.loads(row[0])

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

    def __len__(self) -> int:
        if self.mode == "off":
            return 0
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def export(self, dest: Path, keys: set[str] | None = None) -> int:
        """Copy entries (all, or the given keys) into a new cache file: a replay bundle."""
        if self.mode == "off":
            raise ConfigError("cannot export a cache in mode 'off'")
        dest.parent.mkdir(parents=True, exist_ok=True)
        out = sqlite3.connect(dest, isolation_level=None)
        out.execute(_SCHEMA)
        rows = self._conn().execute("SELECT key, model, value, created FROM responses").fetchall()
        chosen = [r for r in rows if keys is None or r[0] in keys]
        out.execute("BEGIN")
        out.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", chosen)
        out.execute("COMMIT")
        out.close()
        return len(chosen)
