"""Whether a model endpoint can be reached: a circuit breaker shared by the processes of a sweep.

Two transport failures look alike on the wire and mean different things:

- An endpoint that has not answered once in this sweep (or single run) and fails to connect through
  a whole retry cycle (refused, unresolvable host, TLS handshake, or a server that accepts and never
  answers) is misconfigured: every later call would fail the same way. The run stops `failed` with
  one line (`EndpointUnreachable`), and so does every other run of the sweep that uses the endpoint,
  without spending its own retries: one caller probes (the first to fail), the others wait for its
  verdict, and runs that start later read it before their first call.
- An endpoint that has answered and then refuses connections is having an outage: calls keep
  retrying with backoff, without an attempt limit, until it answers again or `outage_window_s` has
  passed since it went down; then the run stops `interrupted` (`ProviderOutage`), resumable, so no
  sample is recorded as an `infra_error` because of it. (A read timeout from an endpoint that has
  answered is an ordinary transient failure: the server is up, that request is slow.)

State lives in a `Store`: in memory for one process, or one SQLite file shared by a sweep's processes
(next to the rate limiter's buckets), keyed by the sweep's id, so a verdict never outlives the command
that reached it: a rerun after the fix starts with a clean slate. The transitions are pure functions
of the stored state; the store and the clock are the edges.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from aecg_bench.errors import ProviderOutage
from aecg_bench.llm.providers import FatalProviderError

STALE_S = 86400.0  # rows of sweeps older than this are dropped when a store opens
Role = Literal["probe", "wait", "answered", "dead"]


class EndpointUnreachable(FatalProviderError):
    """The endpoint never answered in this sweep and no retry could connect: stop the run (`failed`)."""


@dataclass(frozen=True)
class EndpointState:
    answered: bool = False  # some call got an HTTP reply from it (in this sweep)
    prober: str | None = None  # the caller whose retry cycle decides for everyone
    beat: float = 0.0  # the prober's last failure (a prober silent longer than its lease is gone)
    dead: str | None = None  # the verdict: why it cannot be reached


def claim(state: EndpointState, me: str, now: float, lease_s: float, gone: Callable[[str], bool]) -> EndpointState:
    """After a connection failure: the caller becomes (or stays) the prober unless someone alive is."""
    if state.answered or state.dead is not None:
        return state
    if state.prober is None or state.prober == me or now - state.beat > lease_s or gone(state.prober):
        return replace(state, prober=me, beat=now)
    return state


def role_of(state: EndpointState, me: str) -> Role:
    if state.dead is not None:
        return "dead"
    if state.answered:
        return "answered"
    return "probe" if state.prober == me else "wait"


class Store:
    """Endpoint states of one process (the SQLite subclass shares them between processes)."""

    def __init__(self) -> None:
        self._rows: dict[str, EndpointState] = {}
        self._lock = threading.Lock()

    def update(self, key: str, change: Callable[[EndpointState], EndpointState]) -> EndpointState:
        with self._lock:
            self._rows[key] = change(self._rows.get(key, EndpointState()))
            return self._rows[key]

    def read(self, key: str) -> EndpointState:
        with self._lock:
            return self._rows.get(key, EndpointState())


_SCHEMA = """
CREATE TABLE IF NOT EXISTS endpoints (
    key TEXT PRIMARY KEY,
    answered INTEGER NOT NULL,
    prober TEXT,
    beat REAL NOT NULL,
    dead TEXT,
    updated REAL NOT NULL
)
"""


class SqliteStore(Store):
    """One SQLite file shared by a sweep's processes on one machine (a transaction per change)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._local = threading.local()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn().execute("DELETE FROM endpoints WHERE updated < ?", (time.time() - STALE_S,))

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=120.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    @staticmethod
    def _row(conn: sqlite3.Connection, key: str) -> EndpointState:
        found = conn.execute("SELECT answered, prober, beat, dead FROM endpoints WHERE key = ?", (key,)).fetchone()
        return EndpointState(bool(found[0]), found[1], found[2], found[3]) if found else EndpointState()

    def update(self, key: str, change: Callable[[EndpointState], EndpointState]) -> EndpointState:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            state = change(self._row(conn, key))
            conn.execute(
                "INSERT OR REPLACE INTO endpoints VALUES (?, ?, ?, ?, ?, ?)",
                (key, int(state.answered), state.prober, state.beat, state.dead, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return state

    def read(self, key: str) -> EndpointState:
        return self._row(self._conn(), key)


def caller_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def caller_gone(owner: str) -> bool:
    """A prober on this machine whose process (or, in this process, thread) has ended."""
    host, _, rest = owner.partition(":")
    pid, _, thread = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine: only its lease tells
    if int(pid) == os.getpid():
        return thread not in {str(t.ident) for t in threading.enumerate()}
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class EndpointWatch:
    """The client's view of its endpoints: call `check` before a call, `answered` after any HTTP reply,
    `failed` after a connection failure (it says whether to go on), `give_up` after a cycle that never
    connected."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        scope: str = "",
        outage_window_s: float = 300.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        poll_s: float = 0.25,
    ) -> None:
        self.store = store or Store()
        self.scope = scope
        self.outage_window_s = outage_window_s
        self.clock = clock
        self.sleep = sleep
        self.poll_s = poll_s
        self._answered: set[str] = set()
        self._down_since: dict[str, float] = {}
        self._lock = threading.Lock()

    def _key(self, endpoint: str) -> str:
        return f"{self.scope}|{endpoint}"

    def check(self, endpoint: str, lease_s: float = 0.0) -> str | None:
        """The sweep's verdict on an endpoint this process has not heard from (None: go ahead). While
        another caller probes it (alive, within `lease_s`), wait for the outcome instead of spending
        an attempt of one's own."""
        if endpoint in self._answered:
            return None
        while True:
            state = self.store.read(self._key(endpoint))
            idle = state.prober is None or self.clock() - state.beat > lease_s or caller_gone(state.prober)
            if state.dead is not None or state.answered or idle or state.prober == caller_id():
                return state.dead
            self.sleep(self.poll_s)

    def answered(self, endpoint: str) -> None:
        with self._lock:
            self._down_since.pop(endpoint, None)
            if endpoint in self._answered:
                return
            self._answered.add(endpoint)
        self.store.update(self._key(endpoint), lambda s: replace(s, answered=True, dead=None))

    def failed(
        self, endpoint: str, *, connected: bool, lease_s: float
    ) -> Literal["outage", "transient", "probe", "dead"]:
        """After a connection failure (`connected`: the server accepted, then never answered):
        `outage` (it answered before and now refuses: retry until the window ends), `transient` (an
        ordinary counted retry: a slow answer from a live server, or another caller's probe saw it
        answer), `probe` (this caller's retry cycle decides for everyone), `dead` (another caller's
        verdict, which `check` returns). Waits while another caller probes."""
        me = caller_id()
        while True:
            if endpoint in self._answered:
                return self._outage(endpoint) if not connected else "transient"
            state = self.store.update(self._key(endpoint), lambda s: claim(s, me, self.clock(), lease_s, caller_gone))
            role = role_of(state, me)
            if role == "answered":
                self._answered.add(endpoint)
                continue
            if role == "probe" or role == "dead":
                return role
            self.sleep(self.poll_s)

    def _outage(self, endpoint: str) -> Literal["outage"]:
        with self._lock:
            self._down_since.setdefault(endpoint, self.clock())
        return "outage"

    def outage_over(self, endpoint: str) -> float | None:
        """Seconds the endpoint has been down, once that is past the outage window."""
        since = self._down_since.get(endpoint)
        if since is None:
            return None
        down = self.clock() - since
        return down if down >= self.outage_window_s else None

    def give_up(self, endpoint: str, reason: str) -> str | None:
        """The prober's cycle never connected: the verdict for every caller of this sweep (None if some
        caller got an answer from it meanwhile: then it is reachable after all)."""
        state = self.store.update(self._key(endpoint), lambda s: s if s.answered else replace(s, dead=s.dead or reason))
        return state.dead

    def outage(self, label: str, endpoint: str, down_s: float, error: str) -> ProviderOutage:
        return ProviderOutage(
            f"model {label!r} at {endpoint} stopped answering {down_s:.0f} s ago, longer than the outage window "
            f"(runtime.retry.outage_window_s={self.outage_window_s:g}); last error: {error}; the sample in flight "
            "was not recorded: rerun the same command to resume once it is back"
        )
