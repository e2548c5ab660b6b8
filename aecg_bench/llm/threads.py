"""How many CPU threads the embedded model may use: the cores shared out among the runs in flight.

A sweep runs `hydra.launcher.n_jobs` processes at once, each loading its own
copy of the embedded model. llama.cpp threads that outnumber the cores spin
and preempt each other, and llama-cpp-python's default for prompt evaluation
(`n_threads_batch`) is every core of the machine, so two jobs on two cores ran
four threads. The rule here: the threads of the runs in flight add up to the
usable cores, at least one thread each.

"In flight" is counted, not assumed: the process that launches a sweep names a
folder (`AECG_SWEEP_FLIGHT`), each run of the sweep holds a file named after
its pid there while it runs, and the model asks before every call how many
live runs hold one. So when a sweep's last run is left alone it gets every
core (issue 32: with threads fixed per job at the start, `edv_epochs2` ran
~478 s on one thread while the other core idled). Outside a sweep, or when the
folder cannot be read, the launcher's `n_jobs` decides, as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

FLIGHT_ENV = "AECG_SWEEP_FLIGHT"  # folder of the runs in flight: one file per run, named after its pid
FLIGHT_HOST_ENV = "AECG_SWEEP_FLIGHT_HOST"  # pids name processes on this host only (SLURM/Ray run elsewhere)

_concurrent_jobs = 1


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return max(os.cpu_count() or 1, 1)


def effective_jobs(n_jobs: int | None, cores: int) -> int:
    """joblib's meaning of n_jobs: None is 1, -1 all cores, -2 all but one, ...; 0 is invalid there, 1 here."""
    if n_jobs is None or n_jobs == 0:
        return 1
    if n_jobs < 0:
        return max(cores + 1 + n_jobs, 1)
    return n_jobs


def threads_per_job(cores: int, jobs: int) -> int:
    """The largest thread count t with t x jobs <= cores, and never below 1."""
    return max(cores // max(jobs, 1), 1)


def share_of_cores(cores: int, runs: list[int], me: int) -> int:
    """This run's threads when `runs` (pids, `me` among them) share `cores`: an even share, the
    remainder one core each to the lowest pids, so the shares add up to the cores; at least 1."""
    ranked = sorted(set(runs) | {me})
    n = len(ranked)
    return max(cores // n + (1 if ranked.index(me) < cores % n else 0), 1)


def set_concurrent_jobs(n_jobs: int | None) -> None:
    """Record how many runs of the sweep share this machine (the launcher's n_jobs)."""
    global _concurrent_jobs
    _concurrent_jobs = effective_jobs(n_jobs, usable_cores())


def concurrent_jobs() -> int:
    return _concurrent_jobs


# -- runs in flight ----------------------------------------------------------------


def _flight_dir() -> Path | None:
    folder = os.environ.get(FLIGHT_ENV)
    if not folder or os.environ.get(FLIGHT_HOST_ENV, socket.gethostname()) != socket.gethostname():
        return None
    return Path(folder)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def runs_in_flight(folder: Path) -> list[int]:
    """Pids of the live runs holding a file in `folder` (a run killed with -9 leaves its file; it
    is not counted, and removed)."""
    live = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        if _alive(int(name)):
            live.append(int(name))
        else:
            with contextlib.suppress(OSError):
                (folder / name).unlink()
    return live


@contextlib.contextmanager
def sweep_flight() -> Iterator[Path]:
    """Around a whole sweep, in the process that launches it: the folder its runs report to. Folders
    left by launchers that were killed (kill -9 cannot clean up) are removed here."""
    for stale in Path(tempfile.gettempdir()).glob("aecg-flight-*-*"):
        owner = stale.name.split("-")[2]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"aecg-flight-{os.getpid()}-"))
    saved = {k: os.environ.get(k) for k in (FLIGHT_ENV, FLIGHT_HOST_ENV)}
    os.environ[FLIGHT_ENV] = str(folder)
    os.environ[FLIGHT_HOST_ENV] = socket.gethostname()
    try:
        yield folder
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def run_in_flight() -> Iterator[None]:
    """Around one run of a sweep: counted among the runs in flight until it ends (or dies)."""
    folder = _flight_dir()
    mark = folder / str(os.getpid()) if folder is not None else None
    if mark is not None:
        try:
            mark.touch()
        except OSError:  # the sweep's folder is gone: the launcher's n_jobs decides
            mark = None
    try:
        yield
    finally:
        if mark is not None:
            mark.unlink(missing_ok=True)


def auto_threads() -> int:
    """What `n_threads: auto` gives now: this run's share of the cores among the runs in flight, or,
    outside a sweep's count, the cores over the launcher's jobs."""
    cores = usable_cores()
    folder = _flight_dir()
    if folder is not None:
        runs = runs_in_flight(folder)
        if os.getpid() in runs:
            return share_of_cores(cores, runs, os.getpid())
    return threads_per_job(cores, concurrent_jobs())


def model_threads(requested: object = "auto") -> int:
    """Threads for one embedded model: an explicit positive integer wins, `auto`/None shares the cores
    among the runs in flight (asked again before every call: see `local.py`)."""
    if requested is None or requested == "auto":
        return auto_threads()
    try:
        n = int(str(requested))
    except ValueError:
        n = 0
    if n < 1:
        from aecg_bench.errors import ConfigError

        raise ConfigError(f"model option n_threads={requested!r}; valid: 'auto' or a positive integer")
    return n
