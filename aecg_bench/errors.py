"""Exceptions with a meaning for the runner.

The runner turns each into a recorded outcome instead of a crash:
`InfraError` ends a sample as `infra_error` (redone on resume), `ConfigError`
and `DataError` stop before any sample runs, with one clear line.
`ProviderOutage` stops the run as `interrupted` (resumable);
`RunStateError` (a damaged or unwritable run file) stops the run with one line
naming the file and what to do; `RunRefused` (the run is locked by another
process, or holds another configuration) stops before touching anything.
"""

from __future__ import annotations

import difflib
import errno
from collections.abc import Iterable


class AecgBenchError(Exception):
    """Base of the harness's own errors."""


class ConfigError(AecgBenchError):
    """A configuration names something that does not exist or has a bad value."""


class DataError(AecgBenchError):
    """A data file is missing, malformed or differs from its pinned hash."""


class InfraError(AecgBenchError):
    """A provider, simulator or sandbox failed after its bounded retries."""


class CacheMissError(AecgBenchError):
    """`read_only` cache mode met a call it has no answer for."""


class BudgetExceededError(AecgBenchError):
    """The next paid call would take the sweep past `runtime.max_cost_usd`; the run stops, resumable."""


class ProviderOutage(AecgBenchError):
    """A model endpoint that had answered stopped answering for longer than the outage window: the run
    stops `interrupted` (nothing of the sample in flight is recorded), resumable once it is back."""


class RunStateError(AecgBenchError):
    """A file the run reads or writes is damaged or cannot be written (disk full, read-only)."""


class RunRefused(ConfigError):
    """This process will not run it (another process holds it, or it holds another config):
    nothing of the run is touched."""


# A full or read-only disk: every later write fails too. (EACCES is not here: a sandboxed
# program or a benchmark may meet it on its own business.)
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def one_line(text: object, limit: int = 500) -> str:
    """An error message as one line (provider bodies and pydantic errors span many)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def io_error(exc: OSError) -> RunStateError:
    """A failed write as one line: which file, why, and what to do."""
    where = exc.filename or "a results file"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        advice = "free disk space, then rerun the same command to resume"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        advice = "make it writable or set runtime.results_root to a writable directory, then rerun"
    else:
        return RunStateError(f"{where}: {exc.strerror or exc}; fix it, then rerun the same command to resume")
    return RunStateError(f"cannot write {where}: {exc.strerror or exc}; {advice}")


def unknown_choice(kind: str, value: object, choices: Iterable[str]) -> ConfigError:
    """One-line error naming the bad value, the valid choices and the closest match."""
    options = sorted(choices)
    close = difflib.get_close_matches(str(value), options, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {kind} {value!r}; valid choices: {', '.join(options)}{hint}")
