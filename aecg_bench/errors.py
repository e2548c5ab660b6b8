"""Exceptions with a meaning for the runner.

The runner turns each into a recorded outcome instead of a crash:
`InfraError` ends a sample as `infra_error` (redone on resume), `ConfigError`
and `DataError` stop before any sample runs, with one clear line.
"""

from __future__ import annotations

import difflib
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


def unknown_choice(kind: str, value: object, choices: Iterable[str]) -> ConfigError:
    """One-line error naming the bad value, the valid choices and the closest match."""
    options = sorted(choices)
    close = difflib.get_close_matches(str(value), options, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {kind} {value!r}; valid choices: {', '.join(options)}{hint}")
