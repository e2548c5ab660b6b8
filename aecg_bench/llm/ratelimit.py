"""Rate limits shared by every process of a sweep on one machine: a token bucket in SQLite.

A provider limits a key, not a process: four Hydra jobs that each pace
themselves to the limit together send four times too much and live on 429s.
Here every process that calls a model with a `rate_limit` takes from the same
bucket, kept in one SQLite file (a transaction per call, `BEGIN IMMEDIATE`
serialises them), keyed by the provider key (model id, endpoint, key variable).

Two budgets per key, each optional: requests per minute and tokens per minute.
A call reserves one request and its estimated tokens (prompt characters / 4
plus the output length it allows, the way providers count a request against a
token limit) and sleeps until its reservation is due; after the call the
estimate is corrected by the measured usage. Reservations may drive a bucket
below zero, so waiting callers are served in arrival order and the admitted
rate never exceeds the limit, whatever the number of processes. A 429 with
`Retry-After` blocks the key for every process until that time and voids
every reservation not yet served: each caller that was waiting queues again
when it wakes, behind the block, one interval after the previous one, so the
queue resumes at the rate (no burst of everyone who waited, and no two callers
released at one instant).

The arithmetic is pure (`reserve`, `Bucket`) and takes the time as an
argument, so it is tested without clocks; SQLite and sleeping live at the edge
(`SharedRateLimiter`). SQLite file locks are unreliable on network file
systems: across machines, put a LiteLLM proxy with its own limits in front of
the provider (docs/infra/scale-out.md).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RateLimit(BaseModel):
    """A provider key's limits (per minute) and how much of them may be spent at once."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    burst_s: float = Field(1.0, gt=0)  # bucket capacity, in seconds of the rate (at least one request)
    key: str | None = None  # provider key shared by models; default: model id + endpoint + key variable

    @model_validator(mode="after")
    def _some_limit(self) -> RateLimit:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("rate_limit needs requests_per_minute or tokens_per_minute")
        return self


@dataclass(frozen=True)
class Bucket:
    """One budget's state: `level` units available at time `updated` (may be negative: reserved ahead).
    `updated` lies in the future while the key is blocked (Retry-After): nothing refills before then."""

    level: float
    updated: float


def capacity(rate_per_s: float, burst_s: float, minimum: float) -> float:
    return max(rate_per_s * burst_s, minimum)


def refill(bucket: Bucket, rate_per_s: float, cap: float, now: float) -> Bucket:
    """The bucket at `now`: refilled at `rate_per_s` since its last update, never above `cap`."""
    elapsed = max(now - bucket.updated, 0.0)
    return replace(bucket, level=min(cap, bucket.level + elapsed * rate_per_s), updated=max(now, bucket.updated))


def reserve(bucket: Bucket, cost: float, rate_per_s: float, cap: float, now: float) -> tuple[Bucket, float]:
    """Take `cost` units at `now`; returns the new state and how long the caller must wait first.

    The units are taken even when the bucket cannot cover them yet; the caller then waits until the
    refill has paid the debt, so later callers queue behind it. A `cost` above the capacity is still
    admitted (a long prompt under a small token budget), after a correspondingly long wait."""
    current = refill(bucket, rate_per_s, cap, now)
    level = current.level - cost
    due = current.updated + (-level / rate_per_s if level < 0 else 0.0)
    return replace(current, level=level), max(due - now, 0.0)


def settle(bucket: Bucket, delta: float, rate_per_s: float, cap: float, now: float) -> Bucket:
    """Correct an earlier reservation by `delta` units (negative: a refund), never above `cap`."""
    current = refill(bucket, rate_per_s, cap, now)
    return replace(current, level=min(cap, current.level - delta))


def block(bucket: Bucket, until: float) -> Bucket:
    """Nothing is due before `until`; from then on the queue resumes at the rate, without a burst: the
    saved-up capacity is dropped, and so are the reservations of callers still waiting (they queue
    again, `SharedRateLimiter.acquire`), so the first one after the block is due one interval after
    `until` and the others follow at the rate."""
    return Bucket(level=0.0, updated=max(bucket.updated, until))


def estimate_tokens(messages: list[dict[str, Any]], max_tokens: int) -> int:
    """What a request counts against a token limit before it runs: prompt characters / 4 + output allowance."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return chars // 4 + max_tokens


_SCHEMA = """
CREATE TABLE IF NOT EXISTS buckets (
    key TEXT PRIMARY KEY,
    level REAL NOT NULL,
    updated REAL NOT NULL
)
"""


class SharedRateLimiter:
    """The SQLite edge of the bucket arithmetic: one row per (provider key, budget)."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.path = path
        self.clock = clock  # wall time: the buckets are shared between processes
        self.sleep = sleep
        self._local = threading.local()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=120.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    def _transaction(self, changes: list[tuple[str, float, Change]], blocks: str, new_block: bool) -> tuple[float, int]:
        """Apply `changes` (row key, capacity, change) in one transaction; returns the longest wait and
        the key's block generation (counted up first when `new_block`)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            now, wait = self.clock(), 0.0
            for row_key, cap, change in changes:
                row = conn.execute("SELECT level, updated FROM buckets WHERE key = ?", (row_key,)).fetchone()
                bucket, waited = change(Bucket(*row) if row else Bucket(level=cap, updated=now), now)
                conn.execute("INSERT OR REPLACE INTO buckets VALUES (?, ?, ?)", (row_key, bucket.level, bucket.updated))
                wait = max(wait, waited)
            row = conn.execute("SELECT level FROM buckets WHERE key = ?", (blocks,)).fetchone()
            generation = int(row[0]) if row else 0
            if new_block:
                generation += 1
                conn.execute("INSERT OR REPLACE INTO buckets VALUES (?, ?, ?)", (blocks, generation, now))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return wait, generation

    def acquire(self, key: str, limit: RateLimit, tokens: int) -> float:
        """Reserve one request and `tokens` under `key`, sleep until due; returns the seconds waited.
        A caller whose reservation a block voided while it slept (a 429 elsewhere) queues again, behind
        the block and behind the callers that woke before it."""
        waited = 0.0
        while True:
            changes = [
                (row, cap, partial(_reserve_at, cost=cost, rate=rate, cap=cap))
                for row, cost, rate, cap in _buckets(key, limit, tokens)
            ]
            wait, generation = self._transaction(changes, f"{key}|blocks", new_block=False)
            if wait > 0:
                self.sleep(wait)
            waited += wait
            if self._transaction([], f"{key}|blocks", new_block=False)[1] == generation:
                return waited

    def settle(self, key: str, limit: RateLimit, estimated: int, actual: int) -> None:
        """Replace a call's estimated tokens by the tokens it used."""
        if limit.tokens_per_minute is None or actual == estimated:
            return
        row, _, rate, cap = _buckets(key, limit, estimated)[-1]  # the token budget is listed last
        change = partial(_settle_at, delta=actual - estimated, rate=rate, cap=cap)
        self._transaction([(row, cap, change)], f"{key}|blocks", new_block=False)

    def block(self, key: str, limit: RateLimit, seconds: float) -> None:
        """A provider said Retry-After: no process calls this key before then, and every caller still
        waiting for its turn queues again behind the block."""
        changes = [(row, cap, partial(_block_at, seconds=seconds)) for row, _, _, cap in _buckets(key, limit, 0)]
        self._transaction(changes, f"{key}|blocks", new_block=True)


Change = Callable[[Bucket, float], tuple[Bucket, float]]


def _reserve_at(bucket: Bucket, now: float, *, cost: float, rate: float, cap: float) -> tuple[Bucket, float]:
    return reserve(bucket, cost, rate, cap, now)


def _settle_at(bucket: Bucket, now: float, *, delta: float, rate: float, cap: float) -> tuple[Bucket, float]:
    return settle(bucket, delta, rate, cap, now), 0.0


def _block_at(bucket: Bucket, now: float, *, seconds: float) -> tuple[Bucket, float]:
    return block(bucket, now + seconds), 0.0


def _buckets(key: str, limit: RateLimit, tokens: int) -> list[tuple[str, float, float, float]]:
    """(row key, cost of this call, rate per second, capacity) of each budget the limit sets."""
    out: list[tuple[str, float, float, float]] = []
    for budget, per_minute, cost in (
        ("requests", limit.requests_per_minute, 1.0),
        ("tokens", limit.tokens_per_minute, float(tokens)),
    ):
        if per_minute is not None:
            rate = per_minute / 60.0
            out.append((f"{key}|{budget}", cost, rate, capacity(rate, limit.burst_s, 1.0)))
    return out
