"""MBPP-Plus: data pin, prompts, answer extraction, EvalPlus's checks, containment, end to end."""

from __future__ import annotations

import ast
import dataclasses
import gzip
import os
import shutil
import socket
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from aecg_bench import registry
from aecg_bench.benchmarks.data import fetch, sha256_of
from aecg_bench.benchmarks.mbpp_plus import MbppPlusBenchmark
from aecg_bench.benchmarks.mbpp_plus.benchmark import MbppPlusEnv
from aecg_bench.benchmarks.mbpp_plus.data import MBPP_PLUS, Problem, load_problems
from aecg_bench.benchmarks.mbpp_plus.evaluate import Settings
from aecg_bench.benchmarks.mbpp_plus.extract import sanitize
from aecg_bench.benchmarks.mbpp_plus.groundtruth import GroundTruthStore
from aecg_bench.benchmarks.mbpp_plus.oracle import Comparator
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import DataError
from aecg_bench.sandbox import Limits, run_python
from aecg_bench.sandbox.codec import Digest, Opaque
from aecg_bench.types import Action, Score

# Tasks that exercise every input-type restoration and special oracle: set equality with tuple
# arguments (2), Counter outputs (88), float/complex inputs with atol (124), complex input (252),
# the alternative oracles (581, 558), dict-of-tuples input (722), no plus inputs (793), "not None" (737).
COVERING = ["Mbpp/2", "Mbpp/88", "Mbpp/124", "Mbpp/252", "Mbpp/581", "Mbpp/558", "Mbpp/722", "Mbpp/793", "Mbpp/737"]


@pytest.fixture(scope="module")
def gt_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mbpp_gt")


def make_bench(shared_data: Path, **params) -> MbppPlusBenchmark:
    return MbppPlusBenchmark({"download": False, **params}, data_dir=shared_data / "mbpp_plus")


def answer(bench: MbppPlusBenchmark, task_id: str, text: str, cache: Path) -> tuple[Score, object]:
    sample = next(s for s in bench.samples() if s.id == task_id)
    env = bench.make_env(sample, EnvContext(llm=None, seed=0, cache_dir=cache))
    env.reset()
    obs = env.step(Action(kind="answer", text=text))
    return env.score(), obs


def fenced(code: str) -> str:
    return f"Here is the solution:\n```python\n{code}\n```\nIt works."


# ---------------------------------------------------------------------------
# data


def test_loads_the_pinned_file_with_evalplus_input_types(shared_data: Path):
    problems = {p.task_id: p for p in load_problems(shared_data / "mbpp_plus", download=False)}
    assert len(problems) == 378 and next(iter(problems)) == "Mbpp/2"
    assert problems["Mbpp/2"].base_inputs[0] == [(3, 4, 5, 6), (5, 7, 4, 10)]
    assert problems["Mbpp/124"].base_inputs[0] == [0.0, 1j]
    assert isinstance(problems["Mbpp/722"].base_inputs[0][0]["Cierra Vega"], tuple)
    assert problems["Mbpp/793"].plus_inputs == [] and problems["Mbpp/793"].base_inputs  # EvalPlus: empty plus run
    assert [tid for tid, p in problems.items() if not p.plus_inputs] == ["Mbpp/793"]
    assert problems["Mbpp/2"].first_test.startswith("assert similar_elements(")


def test_missing_or_tampered_data_fails_with_a_clear_error(shared_data: Path, tmp_path: Path):
    with pytest.raises(DataError, match="mbppplus_release"):
        load_problems(tmp_path, download=False)
    raw = (shared_data / "mbpp_plus" / MBPP_PLUS.relpath).read_bytes()
    (tmp_path / MBPP_PLUS.relpath).write_bytes(raw.replace(b"shared elements", b"shared elementz", 1))
    with pytest.raises(DataError) as err:
        load_problems(tmp_path, download=False)
    assert MBPP_PLUS.sha256 in str(err.value) and "differs" in str(err.value)


def test_a_missing_file_is_downloaded_and_gunzipped(shared_data: Path, tmp_path: Path):
    """The release asset is gzipped; a file:// address stands in for GitHub (tests stay offline)."""
    source = tmp_path / "MbppPlus.jsonl.gz"
    source.write_bytes(gzip.compress((shared_data / "mbpp_plus" / MBPP_PLUS.relpath).read_bytes()))
    spec = dataclasses.replace(MBPP_PLUS, url=source.as_uri())
    path = fetch(tmp_path / "data", spec)
    assert path.name == MBPP_PLUS.relpath and sha256_of(path) == MBPP_PLUS.sha256


def test_samples_show_the_problem_the_way_evalplus_prompts(shared_data: Path):
    bench = make_bench(shared_data, size=3, offset=1)
    samples = bench.samples()
    assert [s.id for s in samples] == ["Mbpp/3", "Mbpp/4", "Mbpp/6"]
    task = samples[0].task
    assert task.mode == "answer" and task.max_steps == 1
    assert task.instruction.startswith("Please provide a self-contained Python script")
    assert "identify non-prime numbers" in task.instruction and "assert is_not_prime(1) == True" in task.instruction
    assert "`is_not_prime`" in task.action_hint
    assert samples[0].gold == {"task_id": "Mbpp/3"}  # gold stays out of the task
    assert "canonical" not in repr(task) and "plus_input" not in repr(task)
    assert len(make_bench(shared_data).samples()) == 378
    assert bench.data_hashes() == {MBPP_PLUS.relpath: MBPP_PLUS.sha256}


def test_config_composes_and_builds_the_registered_benchmark(make_config, shared_data: Path):
    raw = make_config("benchmark=mbpp_plus", data_root=shared_data)
    assert raw["benchmark"]["name"] == "mbpp_plus"
    bench = registry.build("benchmark", "mbpp_plus", raw["benchmark"]["params"], data_dir=shared_data / "mbpp_plus")
    assert isinstance(bench, MbppPlusBenchmark)
    assert bench.params == MbppPlusBenchmark.Params()  # the yaml repeats the code's defaults


# ---------------------------------------------------------------------------
# answer extraction


def test_sanitize_keeps_what_the_entry_point_needs_and_drops_test_code():
    text = fenced(
        "import math\nLIMIT = 3\nUNUSED = 4\ndef helper(x):\n    return x * LIMIT\n\n"
        "@staticmethod\ndef decorated():\n    return 1\n\ndef f(n):\n    return helper(n) + math.floor(0.5)\n\n"
        "print(f(2))\nassert f(1) == 3\nif __name__ == '__main__':\n    f(3)"
    )
    code = sanitize(text, "f")
    assert code.splitlines()[0] == "import math"
    assert "def helper" in code and "LIMIT = 3" in code and "def f(n)" in code
    assert "UNUSED" not in code and "print(" not in code and "assert" not in code and "__main__" not in code
    assert "decorated" not in code  # not reachable from f


def test_sanitize_handles_unfenced_truncated_and_codeless_answers():
    assert sanitize("Sure!\ndef f(x):\n    return x + 1\nThat adds one.", "f") == "def f(x):\n    return x + 1"
    assert sanitize("```python\ndef f(x):\n    return [x,", "f") == "def f(x):\n    return [x,"
    assert sanitize("I cannot solve this.", "f") == ""
    two_blocks = "```python\nprint(1)\n```\nand\n```py\n@cache\ndef f(x):\n    return x\n```"
    assert sanitize(two_blocks, "f") == "@cache\ndef f(x):\n    return x"
    generator = "```python\ndef gen(n):\n    yield n\ndef no_value():\n    pass\ndef f(n):\n    no_value()\n    return list(gen(n))\n```"
    assert sanitize(generator, "f") == "def gen(n):\n    yield n\ndef f(n):\n    no_value()\n    return list(gen(n))"
    first_wins = "```python\ndef f():\n    return 1\ndef f():\n    return 2\n```"
    assert sanitize(first_wins, "f") == "def f():\n    return 1"  # as EvalPlus: first definition kept


def test_sanitize_keeps_every_helper_of_the_canonical_solutions(shared_data: Path):
    for problem in load_problems(shared_data / "mbpp_plus", download=False):
        kept = sanitize(fenced(problem.canonical_solution), problem.entry_point)
        defined = {n.name for n in ast.parse(problem.canonical_solution).body if isinstance(n, ast.FunctionDef)}
        kept_defs = {n.name for n in ast.parse(kept).body if isinstance(n, ast.FunctionDef)}
        used = {name for name in defined if problem.canonical_solution.count(name) > 1 or name == problem.entry_point}
        assert used <= kept_defs, problem.task_id


# ---------------------------------------------------------------------------
# EvalPlus's output checks


def test_float_tolerance_is_1e6_for_float_outputs_and_then_sticks():
    compare = Comparator("f", 0.0)
    assert compare([1, 2], [1, 2], [])
    assert not compare(1.0001, 1.0, [])
    assert compare(1.0000001, 1.0, [])  # atol raised to 1e-6 by the float expectation
    assert compare([1.0000001, 2], [1.0, 2], [])  # ... and kept for later inputs, as in EvalPlus
    assert not compare((1.0, 2.0), [1.0, 2.0], [])  # with a tolerance, types must match
    assert not compare([1.0], [1.0, 2.0], [])
    assert Comparator("f", 1e-4)(0.50005, 0.5, [])
    assert not Comparator("f", 0.0)(np.array([1, 2]), [1, 2], [])  # ambiguous truth value: a mismatch


def test_special_oracles():
    assert Comparator("similar_elements", 0)((5, 4), (4, 5), [])
    assert Comparator("check_str", 0)(Opaque("re.Match", "<match>"), True, [])
    assert Comparator("check_str", 0)(None, False, []) and not Comparator("check_str", 0)(None, True, [])
    assert Comparator("check_str", 0)(True, True, [])
    assert Comparator("surface_Area", 0)(35, 999, [3, 4])  # round(9 + 6 * sqrt(2.25 + 16)) = 35
    assert Comparator("digit_distance_nums", 0)(2, 999, [10, 1])  # "10" vs "01"
    assert Comparator("f", 0)(Digest("ab", 3), Digest("ab", 3), []) and not Comparator("f", 0)([1], Digest("ab", 3), [])


# ---------------------------------------------------------------------------
# scoring in the sandbox


def test_canonical_solutions_pass_on_tasks_covering_every_special_case(shared_data: Path, gt_cache: Path):
    bench = make_bench(shared_data)
    for task_id in COVERING:
        problem = bench.problems[task_id]
        score, obs = answer(bench, task_id, fenced(problem.canonical_solution), gt_cache)
        assert score.success, (task_id, obs.info)
        assert score.metrics["base_run"] == score.metrics["base_tests"] == len(problem.base_inputs)
        assert score.metrics["plus_failed"] == 0 and obs.reward == 1.0


@pytest.mark.parametrize(
    ("task_id", "code", "base_pass", "plus_pass"),
    [
        ("Mbpp/3", "def is_not_prime(n):\n    return False", 0.0, 0.0),
        ("Mbpp/3", "def is_not_prime(n):\n    return n in (1, 10, 35)", 1.0, 0.0),  # only the original tests
        ("Mbpp/3", "def is_not_prime(n):\n    raise ValueError(n)", 0.0, 0.0),
        ("Mbpp/3", "def is_prime(n):\n    return True", 0.0, 0.0),  # wrong entry point
        ("Mbpp/3", "def is_not_prime(n:\n    return True", 0.0, 0.0),  # syntax error
        (
            "Mbpp/722",
            "def filter_data(s, h, w):\n    return [k for k, v in s.items() if v[0] >= h and v[1] >= w]",
            0.0,
            0.0,
        ),
    ],
)
def test_wrong_solutions_fail(
    shared_data: Path, gt_cache: Path, task_id: str, code: str, base_pass: float, plus_pass: float
):
    score, _ = answer(make_bench(shared_data), task_id, fenced(code), gt_cache)
    assert not score.success
    assert (score.metrics["base_pass"], score.metrics["plus_pass"]) == (base_pass, plus_pass)
    if base_pass == 0.0:
        assert score.metrics["base_failed"] >= 1


def test_scores_are_the_same_serially_and_in_parallel(shared_data: Path, gt_cache: Path):
    bench = make_bench(shared_data, min_time_limit=0.5, max_run_seconds=2)
    cases = [
        ("Mbpp/2", bench.problems["Mbpp/2"].canonical_solution),
        ("Mbpp/3", "def is_not_prime(n):\n    return n in (1, 10, 35)"),
        ("Mbpp/3", "def is_not_prime(n):\n    while True:\n        pass\n    return True"),
        ("Mbpp/88", "def freq_count(xs):\n    return {x: xs.count(x) for x in xs}"),
    ]

    def score(case: tuple[str, str]) -> Score:
        return answer(bench, case[0], fenced(case[1]), gt_cache)[0]

    serial = [score(c) for c in cases]
    with ThreadPoolExecutor(max_workers=2) as pool:
        parallel = list(pool.map(score, cases))
    assert serial == parallel
    assert [s.success for s in serial] == [True, False, False, True]


def test_an_answer_without_code_is_a_recorded_failure(shared_data: Path, gt_cache: Path):
    score, obs = answer(make_bench(shared_data), "Mbpp/3", "Numbers that are not prime.", gt_cache)
    assert not obs.valid and obs.done and not score.success and score.metrics["answered"] == 0.0


# A correct solution that uses `tempfile`, written the way models write MBPP answers. EvalPlus resolves the
# temp directory (its `create_tempdir`) before `reliability_guard` disables `os.getcwd`/`os.unlink`, so
# `tempfile` works there; it must here too (issue 17).
TEMPFILE_SOLUTIONS = {
    "TemporaryFile": (
        "import tempfile\n\ndef count_lines(text):\n    with tempfile.TemporaryFile('w+') as fh:\n"
        "        fh.write(text)\n        fh.seek(0)\n        return sum(1 for _ in fh)"
    ),
    "NamedTemporaryFile": (
        "import tempfile\n\ndef count_lines(text):\n    with tempfile.NamedTemporaryFile('w+', suffix='.txt') as fh:\n"
        "        fh.write(text)\n        fh.flush()\n        fh.seek(0)\n        return len(fh.readlines())"
    ),
    "gettempdir": (
        "import os, tempfile\n\ndef count_lines(text):\n    assert os.path.isdir(tempfile.gettempdir())\n"
        "    return len(text.splitlines())"
    ),
}


def hand_made_problem(plus_inputs: list[list[object]]) -> Problem:
    return Problem(
        task_id="Mbpp/9001",
        prompt="",
        entry_point="count_lines",
        canonical_solution="def count_lines(text):\n    return len(text.splitlines())",
        base_inputs=[["a\nb"], ["one line"]],
        plus_inputs=plus_inputs,
        atol=0.0,
        assertion="assert count_lines('a\\nb') == 2",
    )


def hand_made_env(problem: Problem, cache: Path) -> MbppPlusEnv:
    # generous limits: these tests are about what runs, not how fast (a loaded machine starts interpreters slowly)
    return MbppPlusEnv(problem, GroundTruthStore(cache, "0" * 64), Settings(min_time_limit=5.0, startup_seconds=30.0))


@pytest.mark.parametrize("kind", sorted(TEMPFILE_SOLUTIONS))
def test_a_correct_solution_using_tempfile_passes_under_the_guard(tmp_path: Path, kind: str):
    env = hand_made_env(hand_made_problem([["x"], ["a\nb\nc\n"], [""]]), tmp_path)
    env.reset()
    obs = env.step(Action(kind="answer", text=fenced(TEMPFILE_SOLUTIONS[kind])))
    assert env.score().success, obs.info
    assert obs.info["base"]["status"] == obs.info["plus"]["status"] == "pass"


def test_the_guard_still_disables_what_evalplus_disables(tmp_path: Path):
    """Resolving the temp directory first must not leave `os.unlink` & co. usable by the solution."""
    code = "import os\n\ndef count_lines(text):\n    os.getcwd()\n    return len(text.splitlines())"
    env = hand_made_env(hand_made_problem([["x"]]), tmp_path)
    env.reset()
    obs = env.step(Action(kind="answer", text=fenced(code)))
    assert not env.score().success and "NoneType" in obs.info["base"]["detail"]


def test_mbpp_793_has_no_plus_inputs_and_its_plus_run_only_loads_the_code(shared_data: Path, gt_cache: Path):
    """EvalPlus runs an empty plus set: the run passes once the code defines the entry point (issue 17)."""
    bench = make_bench(shared_data)
    wrong = "def last(arr, x):\n    return -7"
    score, obs = answer(bench, "Mbpp/793", fenced(wrong), gt_cache)
    assert not score.success and score.metrics["base_pass"] == 0.0
    assert score.metrics["plus_pass"] == 1.0 and score.metrics["plus_tests"] == 0.0
    assert obs.info["plus"]["status"] == "pass"


def test_an_empty_plus_set_still_needs_the_entry_point(tmp_path: Path):
    """As EvalPlus's `unsafe_execute`: no inputs, but the code runs and must define the function."""
    problem = hand_made_problem([])
    for code, plus in [("def count_lines(text):\n    return 0", "pass"), ("def other(text):\n    return 0", "fail")]:
        env = hand_made_env(problem, tmp_path)
        env.reset()
        env.step(Action(kind="answer", text=fenced(code)))
        assert env.plus is not None and env.plus.status == plus and env.plus.tests == 0
    cached = GroundTruthStore(tmp_path, "0" * 64).get(problem)
    assert cached.plus.outputs == [] and len(cached.base.outputs) == 2


def test_a_cached_ground_truth_for_other_input_sets_is_recomputed(tmp_path: Path):
    """A cache written when Mbpp/793's plus run reused the base inputs must not be trusted now."""
    stale = GroundTruthStore(tmp_path, "0" * 64)
    stale.get(hand_made_problem([["x"], ["y"]]))
    fresh = GroundTruthStore(tmp_path, "0" * 64).get(hand_made_problem([]))
    assert fresh.plus.outputs == [] and fresh.plus.seconds == [] and fresh.base.outputs == [2, 1]


# Each defines the entry point with a `return` (sanitising drops functions without one) and
# goes around EvalPlus's guard (posix.* instead of the disabled os.*), so the sandbox must hold.
HOSTILE = {
    "infinite_loop": ("def is_not_prime(n):\n    while True:\n        pass\n    return True", "timeout"),
    "sleeps": ("import time\ndef is_not_prime(n):\n    time.sleep(100)\n    return True", "timeout"),
    "fork_bomb": (
        "import posix\ndef is_not_prime(n):\n    while True:\n        try:\n            posix.fork()\n"
        "        except OSError:\n            pass\n    return True",
        "timeout",
    ),
    "memory_hog": (
        "def is_not_prime(n):\n    keep = []\n    while True:\n        keep.append(bytearray(64 * 2**20))\n    return keep",
        # whichever limit binds first: the memory cap, or the CPU time spent zeroing pages on a busy host
        "MemoryError|CPU time limit",
    ),
    "kill_parent": (
        "import posix, signal\ndef is_not_prime(n):\n    posix.kill(posix.getppid(), signal.SIGKILL)\n"
        "    posix.kill({pid}, signal.SIGKILL)\n    return n == 1",
        "PermissionError",
    ),
    "delete_files": ("import posix\ndef is_not_prime(n):\n    posix.unlink({sentinel!r})\n    return n == 1", "Error"),
    "socket": (
        "import socket\ndef is_not_prime(n):\n    socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'x')\n"
        "    return n == 1",
        "OSError",
    ),
}


def process_limit_holds(limit: int) -> bool:
    """A bounded probe: exactly limit - 1 forks succeed (checked before any real fork bomb runs)."""
    probe = (
        f"import os, time\nn = 0\nfor _ in range({3 * limit}):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(2)\n        os._exit(0)\n"
        "    n += 1\nprint(n)"
    )
    result = run_python(probe, limits=Limits(max_processes=limit, wall_seconds=10))
    return result.stdout.strip() == str(limit - 1).encode()


SLOW_HOSTILE = {"sleeps", "fork_bomb"}  # they run until the wall budget; the sandbox tests cover both quickly


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_HOSTILE else k for k in sorted(HOSTILE)]
)
def test_hostile_solutions_are_contained_and_scored_as_failures(
    shared_data: Path, gt_cache: Path, outside_tmp: Path, kind: str
):
    if kind == "fork_bomb" and not process_limit_holds(4):
        pytest.skip("RLIMIT_NPROC does not bind here (no fresh uid): not running a fork bomb")
    target = Path(tempfile.mkdtemp(dir=outside_tmp, prefix=".mbpp-target-"))
    sentinel = target / "sentinel.txt"
    sentinel.write_text("keep me")
    target.chmod(0o777)
    sentinel.chmod(0o666)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    template, expected = HOSTILE[kind]
    code = template.format(pid=os.getpid(), sentinel=str(sentinel), port=listener.getsockname()[1])
    bench = make_bench(shared_data, min_time_limit=0.5, max_processes=4, memory_mb=512, max_run_seconds=2)
    try:
        score, obs = answer(bench, "Mbpp/3", fenced(code), gt_cache)
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
        intact = sentinel.exists() and sentinel.read_text() == "keep me"
        shutil.rmtree(target, ignore_errors=True)
    assert not score.success and score.value == 0.0
    assert score.metrics["base_pass"] == 0.0 and score.metrics["plus_pass"] == 0.0
    assert obs.done and intact
    base = obs.info["base"]
    assert any(e in base["status"] or e in base["detail"] for e in expected.split("|")), base


# ---------------------------------------------------------------------------
# slow tier


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 378 sandboxed programs: about 5 minutes idle, over 10 on a loaded machine
def test_every_canonical_solution_passes(shared_data: Path, gt_cache: Path):
    """All 378 tasks: expected outputs computed, then the canonical code judged as a candidate."""
    bench = make_bench(shared_data)
    failed = {}
    for task_id, problem in bench.problems.items():
        score, obs = answer(bench, task_id, fenced(problem.canonical_solution), gt_cache)
        if not score.success:
            failed[task_id] = obs.info
    assert failed == {}


@pytest.mark.slow
def test_two_samples_with_the_local_model_through_the_single_framework(make_config, shared_data: Path):
    from aecg_bench.run import run_from_config
    from aecg_bench.runner.records import RunDir

    raw = make_config(
        "benchmark=mbpp_plus", "benchmark.params.size=2", "framework=single", "model=local", data_root=shared_data
    )
    final = run_from_config(raw)
    assert final is not None and final["status"] == "complete"
    labels = final["labels"]
    run_dir = Path(final["runtime"]["results_root"]) / labels["experiment"] / "mbpp_plus" / labels["framework"]
    records = RunDir(run_dir / labels["memory"] / labels["model"] / f"seed={labels['seed']}").records()
    assert [r["sample_id"] for r in records] == ["Mbpp/2", "Mbpp/3"]
    for record in records:
        assert record["status"] in ("ok", "model_error", "limit_exceeded")
        if record["status"] == "ok":
            assert {"base_pass", "plus_pass", "base_tests", "plus_tests"} <= set(record["metrics"])
