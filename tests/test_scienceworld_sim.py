"""ScienceWorld on the real simulator (JVM): gold paths, the JVM's limits and failures, full runs.

Slow: each module starts JVMs (about a second each) and the last test runs the
embedded model. The fast rules are in tests/test_scienceworld.py.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from conftest import SHARED_DATA

from aecg_bench.benchmarks.scienceworld import ScienceWorldBenchmark
from aecg_bench.benchmarks.scienceworld.env import ScienceWorldEnvironment
from aecg_bench.benchmarks.scienceworld.prompt import ACTION_HINT
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError, InfraError
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Action

pytestmark = pytest.mark.slow

# Tasks whose gold path matches every annotated subgoal within 30 steps, from four task families
# (scripts/scienceworld_gold_paths.py: 60 of the 90 gold paths match all subgoals, 52 within 30 steps).
GOLD_TASKS = [
    "lifespan-longest-lived_5",
    "measure-melting-point-known-substance_7",
    "use-thermometer_22",
    "find-animal_5",
]
CTX = EnvContext(llm=None, seed=0)


def data_dir() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA / "scienceworld"


@pytest.fixture(scope="module")
def bench():
    b = ScienceWorldBenchmark(data_dir=data_dir())
    yield b
    b.close()


def sample_by_id(bench: ScienceWorldBenchmark, task_id: str):
    return next(s for s in bench.samples() if s.id == task_id)


def cmd(text: str) -> Action:
    return Action(kind="command", text=text)


def alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def scienceworld_children() -> set[int]:
    """Live JVMs started by this process (pids whose parent is us and whose command runs the jar)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        state = next(line.split()[1] for line in status.splitlines() if line.startswith("State:"))
        if ppid == os.getpid() and b"scienceworld.jar" in cmdline and state != "Z":
            found.add(int(entry.name))
    return found


@pytest.mark.parametrize("task_id", GOLD_TASKS)
def test_gold_path_reaches_success_through_the_text_interface(bench, task_id):
    sample = sample_by_id(bench, task_id)
    gold = bench.gold_action_sequence(sample)
    env = bench.make_env(sample, CTX)
    try:
        env.reset()
        for command in gold[: sample.task.max_steps]:
            if env.step(cmd(command)).done:
                break
        score = env.score()
    finally:
        env.close()
    assert score.success and score.value == 1.0
    assert score.metrics["native_score"] == 100.0
    assert score.metrics["steps"] <= sample.task.max_steps


def test_a_wrong_path_scores_partial_progress_only(bench):
    sample = sample_by_id(bench, "lifespan-longest-lived_5")
    env = bench.make_env(sample, CTX)
    try:
        env.reset()
        moved = env.step(cmd("go to hallway"))
        env.step(cmd("look at door to kitchen"))
        score = env.score()
    finally:
        env.close()
    assert moved.text == "You move to the hallway." and not moved.done
    assert not score.success and score.value == 0.0 and score.metrics["grounding_accuracy"] == 1.0


def test_action_hint_names_every_simulator_template(bench):
    sim = bench.pool.acquire()
    try:
        sim.load("boil", 0, bench.params.simplifications)
        templates = [t for t in sim.action_templates() if t != "reset task"]
    finally:
        bench.pool.release(sim)
    assert not any(t.startswith(("teleport", "connect", "disconnect")) for t in templates)
    for template in templates:
        shape = "go to LOC" if template == "go OBJ" else template
        assert shape in ACTION_HINT, template


def transcript(bench: ScienceWorldBenchmark, task_id: str) -> list[str]:
    env = bench.make_env(sample_by_id(bench, task_id), CTX)
    try:
        texts = [env.reset().text]
        for command in ["go to outside", "look around", "wait", "look around", "wait", "look around"]:
            texts.append(env.step(cmd(command)).text)
    finally:
        env.close()
    return texts


def test_a_task_behaves_the_same_in_a_fresh_and_in_a_reused_jvm(bench):
    """Wandering animals are random; with constant identity hashes the draw does not depend on history."""
    fresh = ScienceWorldBenchmark(data_dir=data_dir())
    try:
        first = transcript(fresh, "identify-life-stages-1_0")
    finally:
        fresh.close()
    transcript(bench, "find-animal_5")  # bench's JVM has run other tasks before
    assert transcript(bench, "identify-life-stages-1_0") == first


def test_jvm_runs_with_the_heap_cap_and_is_reused(bench):
    sample = sample_by_id(bench, "find-animal_6")
    pids = set()
    for _ in range(2):
        env = bench.make_env(sample, CTX)
        env.reset()
        pids.add(env.simulator.pid)
        env.close()
    assert len(pids) == 1
    (pid,) = pids
    assert b"-Xmx512m" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    sim = bench.pool.acquire()
    assert sim.rss_bytes() is not None and sim.rss_bytes() < 1024 * 2**20
    bench.pool.release(sim)


def test_killed_jvm_mid_sample_is_an_infra_error_and_the_next_sample_gets_a_new_one():
    bench = ScienceWorldBenchmark(data_dir=data_dir())
    sample = bench.samples()[0]
    try:
        env = bench.make_env(sample, CTX)
        env.reset()
        env.step(cmd("look around"))
        victim = env.simulator.process
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
        with pytest.raises(InfraError, match=r"JVM exited|simulator failed"):
            env.step(cmd("go to hallway"))
        env.close()
        assert bench.pool.discarded == 1 and bench.pool.live == 0
        fresh = bench.make_env(sample, CTX)
        assert "This room is called" in fresh.reset().text
        replacement = fresh.simulator.pid
        assert fresh.step(cmd("go to hallway")).text == "You move to the hallway."
        fresh.close()
        assert bench.pool.launches == 2 and replacement != victim.pid
    finally:
        bench.close()
    assert not alive(replacement)


def test_hung_jvm_is_killed_after_the_call_timeout():
    bench = ScienceWorldBenchmark({"call_timeout_s": 8}, data_dir=data_dir())  # a cold first load takes seconds
    sample = bench.samples()[0]
    try:
        env = bench.make_env(sample, CTX)
        env.reset()
        process = env.simulator.process
        os.kill(process.pid, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(InfraError, match="hung"):
            env.step(cmd("look around"))
        assert 8 <= time.monotonic() - start < 30
        assert process.poll() is not None and not alive(process.pid)
        env.close()
    finally:
        bench.close()


def test_a_jvm_that_cannot_start_is_a_config_error_naming_the_option():
    bench = ScienceWorldBenchmark({"jvm_options": ["-XX:+NoSuchFlag"]}, data_dir=data_dir())
    env = bench.make_env(bench.samples()[0], CTX)
    with pytest.raises(ConfigError, match="NoSuchFlag"):
        env.reset()
    env.close()
    bench.close()


def test_run_records_infra_error_for_a_killed_jvm_and_resume_redoes_it(make_config, monkeypatch):
    original = ScienceWorldEnvironment.step
    killed: list[int] = []

    def step_and_kill_once(self, action):
        if not killed and self.steps == 1:
            killed.append(self.simulator.pid)
            os.kill(self.simulator.pid, signal.SIGKILL)
            self.simulator.process.wait(timeout=10)
        return original(self, action)

    monkeypatch.setattr(ScienceWorldEnvironment, "step", step_and_kill_once)
    before = scienceworld_children()
    overrides = (
        "benchmark=scienceworld",
        "benchmark.params.max_steps=3",
        "protocol.limit=2",
        "model=mock",
        "model.models.mock.options.default=inventory",
    )
    final = run_from_config(make_config(*overrides, data_root=SHARED_DATA))
    assert killed and final["status"] == "incomplete" and final["failures"]["infra_error"] == 1
    rd = run_dir(final)
    first = rd.records()
    assert [r["status"] for r in first] == ["infra_error", "limit_exceeded"]
    assert "ScienceWorld simulator failed" in first[0]["error"]
    resumed = run_from_config(make_config(*overrides, data_root=SHARED_DATA))
    assert resumed["status"] == "complete"
    latest = {r["position"]: r for r in rd.records()}
    assert [latest[p]["status"] for p in (0, 1)] == ["limit_exceeded", "limit_exceeded"]
    assert scienceworld_children() <= before  # Benchmark.close() ended the run's JVMs


def test_two_samples_with_the_embedded_model_through_single(make_config):
    cfg = make_config(
        "benchmark=scienceworld", "framework=single", "model=local", "protocol.limit=2", data_root=SHARED_DATA
    )
    before = scienceworld_children()
    final = run_from_config(cfg)
    records = run_dir(final).records()
    assert final["status"] == "complete" and len(records) == 2
    for record in records:
        assert record["status"] in {"ok", "limit_exceeded", "model_error"}
        assert record["success"] is not None and 0.0 <= record["value"] <= 1.0
        assert {"progress_rate", "native_score", "grounding_accuracy", "subgoals_total"} <= set(record["metrics"])
        assert record["decisions"] >= 1 and record["steps"] <= 30
    assert final["backends"]["simulator"] == "scienceworld" and final["backends"]["jvm"]["heap_mb"] == 512
    assert scienceworld_children() <= before


def run_dir(final: dict) -> RunDir:
    labels = final["labels"]
    root = Path(final["runtime"]["results_root"])
    path = root / labels["experiment"] / labels["benchmark"] / labels["framework"] / labels["memory"] / labels["model"]
    return RunDir(path / f"seed={labels['seed']}")
