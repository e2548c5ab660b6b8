"""Test one solution on a task's base and plus inputs with EvalPlus's semantics.

As EvalPlus's `check_correctness` / `untrusted_check` (v0.3.1): base and plus
inputs are checked in two separate runs; input i gets the time limit
`max(min_time_limit, gt_time_limit_factor * reference_time_i)` (defaults 1.0 s
and 4.0); the whole run may take `min(max_run_seconds, sum(limits)) + 1`
seconds (EVALPLUS_TIMEOUT_PER_TASK = 60); with `fast_check` (EvalPlus's
default) a run stops at its first failing input. A run passes when every input
returned an output that `oracle.Comparator` accepts. MBPP+'s pass@1 counts a
solution as correct when both runs pass.

Differences, all to make verdicts reproducible on shared machines:
- limits count CPU time (see `aecg_bench.sandbox.calls_program`), so a slow
  neighbour cannot turn a pass into a time-out; the wall-clock budget of a run
  gets `startup_seconds` extra for starting the sandboxed interpreter;
- statuses are `pass`, `fail` (wrong output, exception, crash) and `timeout`
  (an input's time limit or the run's budget); EvalPlus reports per-input
  time-outs as `fail` and a crashed process as `timeout`. Pass@1 is unaffected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aecg_bench.benchmarks.mbpp_plus.data import Problem
from aecg_bench.benchmarks.mbpp_plus.groundtruth import Expected
from aecg_bench.benchmarks.mbpp_plus.oracle import Comparator
from aecg_bench.errors import InfraError
from aecg_bench.sandbox import Limits
from aecg_bench.sandbox.functions import CallOutcome, CallReport, run_calls
from aecg_bench.sandbox.limits import MiB


@dataclass(frozen=True)
class Settings:
    min_time_limit: float = 1.0
    gt_time_limit_factor: float = 4.0
    max_run_seconds: float = 60.0
    startup_seconds: float = 3.0
    fast_check: bool = True
    memory_bytes: int = 4096 * MiB  # EvalPlus's default EVALPLUS_MAX_MEMORY_BYTES
    max_processes: int = 32
    max_output_bytes: int = 256 * MiB
    mode: str = "auto"
    strict_isolation: bool = False


@dataclass(frozen=True)
class RunResult:
    """One run (the base or the plus inputs)."""

    status: str  # pass | fail | timeout
    tests: int  # inputs in the set
    run: int  # inputs whose outcome was seen before the run ended
    failed: int  # of those, the ones that did not pass
    detail: str = ""  # why the first failure failed (no input or output values: they are hidden tests)

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def time_limits(reference_seconds: list[float], settings: Settings) -> list[float]:
    return [max(settings.min_time_limit, settings.gt_time_limit_factor * t) for t in reference_seconds]


def run_limits(per_input: list[float], settings: Settings) -> Limits:
    budget = min(settings.max_run_seconds, sum(per_input)) + 1.0 + settings.startup_seconds
    return Limits(
        wall_seconds=budget,
        cpu_seconds=math.ceil(budget) + 1,
        memory_bytes=settings.memory_bytes,
        stack_bytes=settings.memory_bytes,
        max_processes=settings.max_processes,
        max_output_bytes=settings.max_output_bytes,
        mode=settings.mode,  # type: ignore[arg-type]
        strict=settings.strict_isolation,
    )


def check(
    solution: str, problem: Problem, inputs: list[list[Any]], expected: Expected, settings: Settings
) -> RunResult:
    """Run `solution` on one input set and judge every output as it arrives."""
    per_input = time_limits(expected.seconds, settings)
    limits = run_limits(per_input, settings)
    compare = Comparator(problem.entry_point, problem.atol)
    failures: list[tuple[int, str, bool]] = []

    def judge(outcome: CallOutcome) -> bool:
        i = outcome.index
        if not outcome.ok:
            failures.append((i, outcome.error, outcome.timed_out))
        elif expected.errors[i]:
            failures.append((i, "the reference solution itself fails on this input", False))
        elif not compare(outcome.value, expected.outputs[i], inputs[i]):
            failures.append((i, "wrong output", False))
        else:
            return False
        return settings.fast_check

    report = run_calls(
        solution, problem.entry_point, inputs, per_input, limits, load_seconds=limits.wall_seconds, on_outcome=judge
    )
    return _verdict(report, failures, len(inputs))


def _verdict(report: CallReport, failures: list[tuple[int, str, bool]], n: int) -> RunResult:
    box = report.sandbox
    if box is None or box.error:
        raise InfraError(f"sandbox failure: {box.error if box else 'no result'}")
    seen = len(report.outcomes)
    if failures:
        index, why, timed_out = failures[0]
        return RunResult("timeout" if timed_out else "fail", n, seen, len(failures), f"input {index}: {why}")
    if report.finished:
        return RunResult("pass", n, seen, 0)
    if box.timed_out:
        return RunResult("timeout", n, seen, n - seen, f"run exceeded its {box.wall_seconds:.1f}s budget")
    if not report.loaded:
        return RunResult("fail", n, 0, n, report.load_error or _crash(report))
    return RunResult("fail", n, seen, n - seen, report.protocol_error or _crash(report))


def _crash(report: CallReport) -> str:
    box = report.sandbox
    assert box is not None
    if box.output_exceeded:
        return "output limit exceeded"
    if box.signal:
        return f"the program was killed by signal {box.signal}"
    return f"the program ended early (exit code {box.exit_code})"
