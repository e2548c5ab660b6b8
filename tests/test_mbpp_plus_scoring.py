"""MBPP+ verdicts without the sandbox: EvalPlus's limits, the per-input judge and the run verdict (issue 17).

`evaluate.check` is driven with a stand-in for `run_calls` that replays scripted call outcomes, so every branch
of the judge and of `_verdict` is pinned in milliseconds; tests/test_mbpp_plus.py runs real solutions.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aecg_bench.benchmarks.mbpp_plus import evaluate
from aecg_bench.benchmarks.mbpp_plus.data import Problem
from aecg_bench.benchmarks.mbpp_plus.evaluate import RunResult, Settings, check, run_limits, time_limits
from aecg_bench.benchmarks.mbpp_plus.groundtruth import Expected
from aecg_bench.benchmarks.mbpp_plus.oracle import (
    FLOAT_ATOL,
    Comparator,
    is_floats,
    padded_digit_distance,
    pyramid_surface_area,
)
from aecg_bench.errors import InfraError
from aecg_bench.sandbox.functions import CallOutcome, CallReport
from aecg_bench.sandbox.limits import MiB
from aecg_bench.sandbox.runner import SandboxResult

# -- EvalPlus's limits ----------------------------------------------------------------------------------------


def test_time_limits_are_evalplus_defaults():
    s = Settings()
    assert (s.min_time_limit, s.gt_time_limit_factor, s.max_run_seconds, s.fast_check) == (1.0, 4.0, 60.0, True)
    assert s.memory_bytes == 4096 * MiB
    assert time_limits([0.1, 0.25, 0.3, 2.0], s) == [1.0, 1.0, 1.2, 8.0]  # max(1, 4 * t)
    assert time_limits([0.5], Settings(min_time_limit=0.1, gt_time_limit_factor=2.0)) == [1.0]


def test_run_limits_budget_and_bounds():
    s = Settings(startup_seconds=3.0, max_processes=7, max_output_bytes=5, mode="rlimits", strict_isolation=True)
    lim = run_limits([1.0, 2.5], s)
    assert lim.wall_seconds == 3.5 + 1.0 + 3.0 and lim.cpu_seconds == math.ceil(7.5) + 1
    assert lim.memory_bytes == s.memory_bytes and lim.stack_bytes == s.memory_bytes
    assert (lim.max_processes, lim.max_output_bytes, lim.mode, lim.strict) == (7, 5, "rlimits", True)
    capped = run_limits([50.0, 50.0], Settings(startup_seconds=0.0))
    assert capped.wall_seconds == 61.0 and capped.cpu_seconds == 62  # min(60, sum) + 1


# -- the judge ------------------------------------------------------------------------------------------------

PROBLEM = Problem("Mbpp/1", "", "f", "", [[1], [2], [3]], [[1], [2], [3]], 0.0, "")


class FakeCalls:
    """Replays outcomes to `on_outcome` the way run_calls does, stopping when it returns True."""

    def __init__(self, outcomes: list[CallOutcome], *, finished: bool = True, **box: Any) -> None:
        self.outcomes, self.finished, self.box, self.calls = outcomes, finished, box, []

    def __call__(self, code, entry_point, inputs, per_input, limits, *, load_seconds, on_outcome):
        self.calls.append((code, entry_point, inputs, per_input, limits, load_seconds))
        seen = []
        for outcome in self.outcomes:
            seen.append(outcome)
            if on_outcome(outcome):
                return CallReport(seen, loaded=True, finished=False, sandbox=SandboxResult(stopped=True))
        return CallReport(seen, loaded=True, finished=self.finished, sandbox=SandboxResult(exit_code=0, **self.box))


def ok(i: int, value: Any) -> CallOutcome:
    return CallOutcome(index=i, ok=True, value=value)


def expected(outputs: list[Any], errors: list[str] | None = None) -> Expected:
    return Expected(outputs=outputs, seconds=[0.1] * len(outputs), errors=errors or [""] * len(outputs))


def run(monkeypatch, outcomes, exp, settings: Settings | None = None, **fake) -> tuple[RunResult, FakeCalls]:
    calls = FakeCalls(outcomes, **fake)
    monkeypatch.setattr(evaluate, "run_calls", calls)
    return check("def f(x): return x", PROBLEM, PROBLEM.base_inputs, exp, settings or Settings()), calls


def test_all_right_passes_and_the_sandbox_gets_evalplus_limits(monkeypatch):
    result, calls = run(monkeypatch, [ok(0, 1), ok(1, 2), ok(2, 3)], expected([1, 2, 3]))
    assert result == RunResult("pass", 3, 3, 0) and result.passed
    code, entry, inputs, per_input, limits, load = calls.calls[0]
    assert (code, entry, inputs, per_input) == ("def f(x): return x", "f", [[1], [2], [3]], [1.0, 1.0, 1.0])
    assert limits == run_limits(per_input, Settings()) and load == limits.wall_seconds


def test_first_wrong_output_stops_a_fast_check(monkeypatch):
    result, _ = run(monkeypatch, [ok(0, 1), ok(1, 99), ok(2, 98)], expected([1, 2, 3]))
    assert result == RunResult("fail", 3, 2, 1, "input 1: wrong output") and not result.passed
    full, _ = run(monkeypatch, [ok(0, 1), ok(1, 99), ok(2, 98)], expected([1, 2, 3]), Settings(fast_check=False))
    assert full == RunResult("fail", 3, 3, 2, "input 1: wrong output")


def test_errors_time_outs_and_failing_references(monkeypatch):
    crash = CallOutcome(index=0, ok=False, error="ZeroDivisionError: division by zero")
    result, _ = run(monkeypatch, [crash], expected([1, 2, 3]))
    assert result == RunResult("fail", 3, 1, 1, "input 0: ZeroDivisionError: division by zero")
    slow = CallOutcome(index=1, ok=False, error="time limit", timed_out=True)
    result, _ = run(monkeypatch, [ok(0, 1), slow], expected([1, 2, 3]))
    assert result == RunResult("timeout", 3, 2, 1, "input 1: time limit")
    result, _ = run(monkeypatch, [ok(0, 1), ok(1, 2), ok(2, 3)], expected([1, 2, 3], ["", "", "ValueError"]))
    assert result == RunResult("fail", 3, 3, 1, "input 2: the reference solution itself fails on this input")


def test_run_level_verdicts(monkeypatch):
    early, _ = run(monkeypatch, [ok(0, 1)], expected([1, 2, 3]), finished=False, timed_out=True, wall_seconds=7.25)
    assert early == RunResult("timeout", 3, 1, 2, "run exceeded its 7.2s budget")
    cut, _ = run(monkeypatch, [ok(0, 1)], expected([1, 2, 3]), finished=False, output_exceeded=True)
    assert cut == RunResult("fail", 3, 1, 2, "output limit exceeded")
    killed, _ = run(monkeypatch, [], expected([1, 2, 3]), finished=False, signal=9)
    assert killed == RunResult("fail", 3, 0, 3, "the program was killed by signal 9")
    ended, _ = run(monkeypatch, [ok(0, 1)], expected([1, 2, 3]), finished=False)
    assert ended == RunResult("fail", 3, 1, 2, "the program ended early (exit code 0)")


def test_load_and_protocol_failures_and_a_broken_sandbox(monkeypatch):
    def report(**kw):
        return lambda *a, **k: CallReport(**kw)

    monkeypatch.setattr(evaluate, "run_calls", report(loaded=False, load_error="SyntaxError", sandbox=SandboxResult()))
    assert check("x", PROBLEM, [[1]], expected([1]), Settings()) == RunResult("fail", 1, 0, 1, "SyntaxError")
    monkeypatch.setattr(evaluate, "run_calls", report(loaded=False, sandbox=SandboxResult(exit_code=2)))
    assert check("x", PROBLEM, [[1]], expected([1]), Settings()).detail == "the program ended early (exit code 2)"
    monkeypatch.setattr(evaluate, "run_calls", report(loaded=True, protocol_error="bad line", sandbox=SandboxResult()))
    assert check("x", PROBLEM, [[1]], expected([1]), Settings()) == RunResult("fail", 1, 0, 1, "bad line")
    monkeypatch.setattr(evaluate, "run_calls", report(sandbox=SandboxResult(error="no user namespaces")))
    with pytest.raises(InfraError, match="sandbox failure: no user namespaces"):
        check("x", PROBLEM, [[1]], expected([1]), Settings())
    monkeypatch.setattr(evaluate, "run_calls", report(sandbox=None))
    with pytest.raises(InfraError, match="sandbox failure: no result"):
        check("x", PROBLEM, [[1]], expected([1]), Settings())


# -- the oracle -----------------------------------------------------------------------------------------------


def test_is_floats():
    assert is_floats(1.5) and is_floats([1.0, 2.0]) and is_floats((0.5,))
    assert not is_floats(1) and not is_floats([]) and not is_floats([1.0, 2]) and not is_floats("1.0")
    import numpy as np

    assert is_floats(np.array([1.0])) and is_floats(np.array([1.0], dtype=np.float32))
    assert not is_floats(np.array([1]))


def test_alternative_readings_of_two_tasks():
    assert pyramid_surface_area(3, 4) == round(9 + 6 * math.sqrt(2.25 + 16))
    assert pyramid_surface_area(10, 12) == 360  # 100 + 20 * 13
    assert padded_digit_distance(123, 256) == 1 + 3 + 3
    assert padded_digit_distance(10, 1) == 2 and padded_digit_distance(1, 10) == 2  # "10" vs "01"


def test_comparator_tolerance_rules():
    exact_int = Comparator("f", 0.0)
    assert exact_int(3, 3, []) and not exact_int(3, 4, []) and exact_int.atol == 0.0
    floats = Comparator("f", 0.0)
    assert floats(1.0, 1.0, []) and floats.atol == FLOAT_ATOL  # raised by a float expectation, even on a match
    assert floats(2.0000005, 2.0, []) and not floats(2.00001, 2.0, [])
    assert Comparator("f", 0.0)(1, 1.0, [])  # exact equality needs no types
    assert not Comparator("f", 0.0)(1, 1.0000001, [])  # with a tolerance the types must agree
    relative = Comparator("f", 0.0)
    assert relative(1e7 + 0.5, 1e7, []) and not relative(1e7 + 5.0, 1e7, [])  # rtol 1e-7 of 1e7 = 1
    loose = Comparator("f", 0.5)
    assert loose(3.4, 3.0, []) and not loose(3.6, 3.0, []) and loose([1.0, 2.4], [1.0, 2.0], [])
    assert not loose([1.0, 2.4, 3.0], [1.0, 2.0], [])


def test_comparator_special_tasks():
    area = Comparator("surface_Area", 0)
    assert area(33, 33, [3, 4]) and area(35, 33, [3, 4]) and not area(36, 33, [3, 4])
    assert Comparator("surface_Area", 1.0)(36, 33, [3, 4])  # within atol of the alternative reading
    digits = Comparator("digit_distance_nums", 0)
    assert digits(7, 7, [123, 256]) and digits(2, 1, [10, 1]) and not digits(3, 1, [10, 1])
    sets = Comparator("Diff", 0)
    assert sets([1, 2, 2], [2, 1], []) and not sets([1, 3], [1, 2], [])
    assert not Comparator("f", 0)([1, 2, 2], [2, 1], [])
    not_none = Comparator("text_match_three", 0)
    assert not_none("match", True, []) and not_none(None, False, []) and not not_none("match", False, [])
    assert not_none(False, False, []) and not not_none(False, True, [])
    for name in ("check_str", "text_match_three", "text_starta_endb"):
        assert Comparator(name, 0)(object(), True, [])
    for name in ("similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly"):
        assert Comparator(name, 0)((3, 1), [1, 3], [])
    for name in ("larg_nnum", "intersection_array", "find_dissimilar", "Diff"):
        assert Comparator(name, 0)((3, 1), [1, 3], [])


@given(st.lists(st.integers(-50, 50), max_size=6))
def test_exact_matches_always_pass(values):
    assert Comparator("f", 0.0)(list(values), list(values), [])
