"""How a run process starts and ends: signals, its sweep parent, and the sweep's outcome list.

- SIGTERM becomes `Terminated` (a KeyboardInterrupt), so a stopped run is
  recorded as `interrupted`, releases its lock and exits, like Ctrl-C.
- A sweep (Hydra multirun) parent names a file in `AECG_SWEEP_OUTCOMES`, its
  pid in `AECG_SWEEP_PARENT` and the command's id in `AECG_SWEEP_ID` (Hydra's
  sweep folder `<results_root>/.sweeps/<id>`, so two sweeps on one results root
  keep their own `multirun.yaml`); each run appends one JSON line with its
  outcome, and the parent prints the list at the end. A worker whose parent
  died (kill -9 of the sweep) stops its run instead of running on unseen.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

OUTCOMES_ENV = "AECG_SWEEP_OUTCOMES"
PARENT_ENV = "AECG_SWEEP_PARENT"
HOST_ENV = "AECG_SWEEP_HOST"  # a pid names a process on this host only (SLURM and Ray jobs run elsewhere)
ID_ENV = "AECG_SWEEP_ID"  # one command's id: its Hydra sweep folder (.sweeps/<id>) and its circuit breakers
OK_STATUSES = ("complete", "incomplete")  # incomplete = recorded infra errors, redone by a rerun
PARENT_POLL_S = 1.0
EXIT_GRACE_S = 30.0


class Terminated(KeyboardInterrupt):
    """SIGTERM: stop the run the way Ctrl-C does."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


def install_sigterm() -> None:
    """SIGTERM -> Terminated; only the main thread may install handlers (a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_sweep(outcomes_dir: Path | None = None) -> Path:
    """Called by the process that launches Hydra: where the runs report their outcomes. Files
    left by launchers that were killed (kill -9 cannot clean up) are removed here."""
    where = Path(outcomes_dir or tempfile.gettempdir())
    for stale in where.glob("aecg-sweep-*-*.jsonl"):
        owner = stale.name.split("-")[2]
        if owner.isdigit() and not _pid_alive(int(owner)):
            stale.unlink(missing_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"aecg-sweep-{os.getpid()}-", suffix=".jsonl", dir=where)
    os.close(fd)
    os.environ[ID_ENV] = f"{time.strftime('%Y%m%d-%H%M%S')}-{Path(name).stem.rsplit('-', 1)[-1]}"
    os.environ[OUTCOMES_ENV] = name
    os.environ[PARENT_ENV] = str(os.getpid())
    os.environ[HOST_ENV] = socket.gethostname()
    return Path(name)


def sweep_id() -> str | None:
    """What the runs of one command share: its sweep folder, its circuit breakers (set by `start_sweep`)."""
    return os.environ.get(ID_ENV) or None


def record_outcome(run_dir: str, status: str, detail: str = "") -> None:
    """Append this run's outcome for the sweep parent (one short O_APPEND write: atomic). If the
    parent is gone, so is its file, and there is no one to tell."""
    path = os.environ.get(OUTCOMES_ENV)
    if not path:
        return
    line = json.dumps({"run": run_dir, "status": status, "detail": detail}) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        return
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def read_outcomes(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return out


def summarise_sweep(outcomes: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Lines to print and the sweep's exit code (2 if any run failed, was refused or stopped)."""
    counts = Counter(o["status"] for o in outcomes)
    head = f"sweep: {len(outcomes)} runs: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    lines = [head]
    for o in outcomes:
        if o["status"] not in OK_STATUSES:
            lines.append(f"  {o['status']}: {o['run']}: {o['detail']}")
    bad = any(o["status"] not in OK_STATUSES for o in outcomes)
    return lines, 2 if bad else 0


def in_worker() -> bool:
    """True in a sweep worker process (not the process that launched the sweep)."""
    parent = os.environ.get(PARENT_ENV)
    return bool(parent) and int(parent) != os.getpid()


def exit_worker(code: int) -> None:
    """End a sweep worker now: its run is recorded and unlocked, and a pool worker would
    otherwise wait for the next job of a sweep whose parent may be gone."""
    import contextlib
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _stop_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(EXIT_GRACE_S)
    os._exit(143)


_watching = False


def watch_parent(
    *,
    poll_s: float = PARENT_POLL_S,
    getppid: Callable[[], int] = os.getppid,
    on_gone: Callable[[], None] = _stop_self,
) -> threading.Thread | None:
    """In a sweep worker: when the sweep parent dies, SIGTERM ourselves (the run is recorded as
    interrupted and its lock released); if that does not end the process, exit hard. Returns the
    watching thread (None outside a worker, or if one is already watching)."""
    global _watching
    parent = os.environ.get(PARENT_ENV)
    if not parent or int(parent) == os.getpid() or (_watching and on_gone is _stop_self):
        return None
    if os.environ.get(HOST_ENV, socket.gethostname()) != socket.gethostname():
        return None  # a cluster job on another node: the launcher's pid means nothing here
    parent_pid = int(parent)
    direct_child = getppid() == parent_pid

    def alive() -> bool:
        if direct_child:
            return getppid() == parent_pid  # reparented once the parent is gone
        return _pid_alive(parent_pid)

    def loop() -> None:
        while alive():
            time.sleep(poll_s)
        on_gone()

    if on_gone is _stop_self:
        _watching = True
    thread = threading.Thread(target=loop, name="aecg-parent-watch", daemon=True)
    thread.start()
    return thread
