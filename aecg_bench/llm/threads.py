"""How many CPU threads the embedded model may use: the cores shared out among a sweep's jobs.

A sweep runs `hydra.launcher.n_jobs` processes at once, each loading its own
copy of the embedded model. llama.cpp threads that outnumber the cores spin
and preempt each other, and llama-cpp-python's default for prompt evaluation
(`n_threads_batch`) is every core of the machine, so two jobs on two cores ran
four threads. The rule here: threads per model x concurrent jobs <= usable
cores, at least one thread. It is decided, not configured: the run entry point
records how many jobs its launcher runs, and the model asks at load time.
"""

from __future__ import annotations

import os

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


def set_concurrent_jobs(n_jobs: int | None) -> None:
    """Record how many runs of the sweep share this machine (the launcher's n_jobs)."""
    global _concurrent_jobs
    _concurrent_jobs = effective_jobs(n_jobs, usable_cores())


def concurrent_jobs() -> int:
    return _concurrent_jobs


def model_threads(requested: object = "auto") -> int:
    """Threads for one embedded model: an explicit positive integer wins, `auto`/None shares the cores."""
    if requested is None or requested == "auto":
        return threads_per_job(usable_cores(), concurrent_jobs())
    try:
        n = int(str(requested))
    except ValueError:
        n = 0
    if n < 1:
        from aecg_bench.errors import ConfigError

        raise ConfigError(f"model option n_threads={requested!r}; valid: 'auto' or a positive integer")
    return n
