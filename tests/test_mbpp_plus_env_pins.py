"""Pins of MBPP+'s environment around the verdict (`mbpp_plus/benchmark.py`: `MbppPlusEnv.step`/`score`, the
tasks a run takes), written against the mutants of `make mutants PATHS=mbpp_plus_env` (docs/quality.md).

The verdict is EvalPlus's: a solution passes when it passes both the base and the plus inputs; an answer with
no code is a failure on every input. A hand-made problem with its ground truth computed once per module (the
sandbox runs the canonical solution), no data files, no network.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aecg_bench.benchmarks.mbpp_plus import MbppPlusBenchmark
from aecg_bench.benchmarks.mbpp_plus.benchmark import MbppPlusEnv
from aecg_bench.benchmarks.mbpp_plus.data import Problem
from aecg_bench.benchmarks.mbpp_plus.evaluate import RunResult, Settings
from aecg_bench.benchmarks.mbpp_plus.groundtruth import GroundTruthStore
from aecg_bench.errors import ConfigError
from aecg_bench.types import Action

PROBLEM = Problem(
    task_id="Mbpp/9002",
    prompt="",  # the ground-truth run executes prompt + canonical solution, as EvalPlus
    entry_point="count_lines",
    canonical_solution="def count_lines(text):\n    return len(text.splitlines())",
    base_inputs=[["a\nb"], ["one line"]],
    plus_inputs=[["x"], ["a\nb\nc\n"], [""]],
    atol=0.0,
    assertion="assert count_lines('a\\nb') == 2",
)
RIGHT = "def count_lines(text):\n    return len(text.splitlines())"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ground-truth cache for the module: the canonical solution runs once, not once per test."""
    return tmp_path_factory.mktemp("mbpp_truth")


def _env(cache: Path, **settings: float) -> MbppPlusEnv:
    # generous limits: a loaded machine starts interpreters slowly
    limits = {"min_time_limit": 5.0, "startup_seconds": 30.0, **settings}
    return MbppPlusEnv(PROBLEM, GroundTruthStore(cache, "0" * 64), Settings(**limits))


def _answer(env: MbppPlusEnv, code: str, prose: str = "Here:\n"):
    env.reset()
    return env.step(Action(kind="answer", text=f"{prose}```python\n{code}\n```"))


def test_before_an_answer_the_score_is_zero_and_unanswered(cache):
    env = _env(cache)
    obs = env.reset()
    assert obs.text == "Write the Python function `count_lines`; it is run against hidden tests."
    s = env.score()
    assert not s.success and s.value == 0.0
    assert s.metrics == {"answered": 0.0, "base_pass": 0.0, "plus_pass": 0.0}


def test_a_right_solution_passes_base_and_plus_with_every_count(cache):
    env = _env(cache)
    obs = _answer(env, RIGHT + "\n\nprint(count_lines('x'))")
    assert obs.text == "Solution recorded." and obs.done and obs.valid and obs.reward == 1.0
    assert obs.info["solution"] == RIGHT  # the sanitised program, the test print dropped
    assert obs.info["base"]["status"] == obs.info["plus"]["status"] == "pass"
    assert obs.info["base"]["tests"] == 2 and obs.info["plus"]["tests"] == 3
    s = env.score()
    assert s.success and s.value == 1.0
    assert s.metrics == {
        "answered": 1.0,
        "base_pass": 1.0,
        "plus_pass": 1.0,
        "base_tests": 2.0,
        "base_run": 2.0,
        "base_failed": 0.0,
        "plus_tests": 3.0,
        "plus_run": 3.0,
        "plus_failed": 0.0,
        "timeout": 0.0,
    }


def test_passing_base_but_not_plus_is_a_failure(cache):
    env = _env(cache)
    obs = _answer(env, "def count_lines(text):\n    return len(text.splitlines()) if text else 1")
    assert obs.reward == 0.0 and obs.done
    s = env.score()
    assert not s.success and s.value == 0.0
    assert s.metrics["base_pass"] == 1.0 and s.metrics["plus_pass"] == 0.0 and s.metrics["answered"] == 1.0
    assert s.metrics["plus_failed"] == 1.0 and s.metrics["plus_run"] == 3.0


def test_passing_plus_but_not_base_is_a_failure(cache):
    env = _env(cache)
    obs = _answer(env, "def count_lines(text):\n    return 7 if text == 'one line' else len(text.splitlines())")
    assert obs.reward == 0.0
    s = env.score()
    assert not s.success and s.metrics["base_pass"] == 0.0 and s.metrics["plus_pass"] == 1.0
    assert s.metrics["base_failed"] == 1.0


def test_an_answer_without_code_fails_every_input_and_is_unanswered(cache):
    env = _env(cache)
    env.reset()
    obs = env.step(Action(kind="answer", text="I would count the newlines."))
    assert obs.text == "No Python code found in the answer." and obs.done and obs.valid is False
    assert obs.reward == 0.0
    assert env.base == RunResult("fail", 2, 0, 2, "no Python code in the answer")
    assert env.plus == RunResult("fail", 3, 0, 3, "no Python code in the answer")
    s = env.score()
    assert not s.success and s.value == 0.0
    assert s.metrics["answered"] == 0.0 and s.metrics["base_failed"] == 2.0 and s.metrics["plus_tests"] == 3.0


def test_whitespace_only_code_is_no_code(cache):
    env = _env(cache)
    env.reset()
    obs = env.step(Action(kind="answer", text="```python\n   \n\n```"))
    assert obs.valid is False and env.score().metrics["answered"] == 0.0


def test_reset_forgets_the_last_answer(cache):
    env = _env(cache)
    _answer(env, RIGHT)
    env.reset()
    assert env.solution is None and env.base is None and env.plus is None
    assert env.score().metrics == {"answered": 0.0, "base_pass": 0.0, "plus_pass": 0.0}


def test_a_solution_that_runs_out_of_time_is_flagged(cache):
    env = _env(cache, min_time_limit=0.2)
    _answer(env, "def count_lines(text):\n    while True:\n        pass\n    return 0")
    s = env.score()
    assert not s.success and s.metrics["timeout"] == 1.0
    assert env.base is not None and env.base.status == "timeout"


# --- which tasks a run takes ----------------------------------------------------------------------------------


def test_offset_and_size_choose_the_tasks_in_file_order(shared_data: Path):
    every = MbppPlusBenchmark({"download": False}, data_dir=shared_data / "mbpp_plus").samples()
    some = MbppPlusBenchmark({"download": False, "offset": 5, "size": 3}, data_dir=shared_data / "mbpp_plus")
    assert [s.id for s in some.samples()] == [s.id for s in every[5:8]]
    tail = MbppPlusBenchmark({"download": False, "offset": len(every) - 2}, data_dir=shared_data / "mbpp_plus")
    assert [s.id for s in tail.samples()] == [s.id for s in every[-2:]]
    assert len(every) == 378 and {s.split for s in every} == {"test"}
    with pytest.raises(ConfigError, match=r"^benchmark 'mbpp_plus' has no split 'train'; valid splits: test$"):
        some.samples("train")
