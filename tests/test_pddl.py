"""The `pddl` benchmark: data pairing, parser, engine, AgentBoard's text interface, planner plans."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aecg_bench.benchmarks.data import sha256_of
from aecg_bench.benchmarks.pddl import PddlBenchmark, files
from aecg_bench.benchmarks.pddl.env import INAPPLICABLE, UNPARSED, PddlEnv
from aecg_bench.benchmarks.pddl.parser import PddlError, parse_domain
from aecg_bench.benchmarks.pddl.text import render
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Action, Sample
from tests.pddl_planner import plan

ONE_PER_DOMAIN = ("gripper-prob01", "blockworld-problem10", "barman-p01", "tyreworld-p01")


@pytest.fixture(scope="module")
def bench() -> PddlBenchmark:
    from tests.conftest import SHARED_DATA

    if not (SHARED_DATA / "pddl").exists():
        pytest.skip("shared PDDL data not found")
    return PddlBenchmark({}, data_dir=SHARED_DATA / "pddl")


@pytest.fixture(scope="module")
def samples(bench: PddlBenchmark) -> dict[str, Sample]:
    return {s.id: s for s in bench.samples()}


def act(env: PddlEnv, text: str):
    return env.step(Action(kind="command", text=text))


def env_for(bench: PddlBenchmark, sample: Sample) -> PddlEnv:
    env = bench.make_env(sample, None)  # type: ignore[arg-type]
    assert isinstance(env, PddlEnv)
    env.reset()
    return env


def test_sixty_problems_in_agentboard_order_with_their_own_labels(samples):
    ids = list(samples)
    assert len(ids) == 60
    assert ids[:2] == ["gripper-prob01", "gripper-prob02"]
    # lexicographic file order: blockworld index 1 is problem10, which test.jsonl row 21 annotates
    assert ids[20:23] == ["blockworld-problem1", "blockworld-problem10", "blockworld-problem2"]
    assert samples["blockworld-problem10"].task.metadata["agentboard_id"] == 21
    labels = {i: s.task.metadata["difficulty"] for i, s in samples.items()}
    assert labels["blockworld-problem3"] == "hard" and labels["blockworld-problem2"] == "easy"
    assert labels["barman-p14"] == "easy" and labels["barman-p13"] == "hard"
    assert sum(v == "hard" for v in labels.values()) == 24
    first = samples["blockworld-problem1"].task
    assert first.mode == "steps" and first.max_steps == 30 and first.task_type == "blockworld"
    assert "The goal is to satisfy the following conditions: b2 is on b1., b3 is on b2." in first.instruction


def _data_copy(tmp_path: Path, shared: Path) -> Path:
    dst = tmp_path / "pddl"
    shutil.copytree(shared / "pddl", dst)
    for p in dst.rglob("*"):
        p.chmod(0o644 if p.is_file() else 0o755)
    return dst


def test_rows_out_of_order_are_refused(tmp_path, shared_data, monkeypatch):
    data = _data_copy(tmp_path, shared_data)
    rows = (data / "test.jsonl").read_text().splitlines()
    rows[21], rows[22] = rows[22], rows[21]  # swap the labels of blockworld problem10 and problem2
    (data / "test.jsonl").write_text("\n".join(rows) + "\n")
    monkeypatch.setitem(files.PINS, "test.jsonl", sha256_of(data / "test.jsonl"))
    with pytest.raises(DataError, match="out of order"):
        PddlBenchmark({}, data_dir=data).samples()


def test_tampered_and_missing_files_name_hashes_and_sources(tmp_path, shared_data):
    data = _data_copy(tmp_path, shared_data)
    problem = data / "problems" / "blockworld" / "problem1.pddl"
    problem.write_text(problem.read_text().replace("b3 b1", "b1 b3"))
    with pytest.raises(DataError) as err:
        PddlBenchmark({"download": False}, data_dir=data).samples()
    assert files.PINS["problems/blockworld/problem1.pddl"] in str(err.value)
    assert sha256_of(problem) in str(err.value)
    (data / "test.jsonl").unlink()
    with pytest.raises(DataError, match="hkust-nlp/agentboard"):
        PddlBenchmark({"download": False}, data_dir=data).samples()


def test_params_are_validated():
    with pytest.raises(ConfigError, match="valid: gripper"):
        PddlBenchmark({"domains": ["blocks"]})
    assert PddlBenchmark({"domains": ["tyreworld", "gripper"]}).params.domains == ["gripper", "tyreworld"]


def test_domain_subset_keeps_labels(shared_data):
    sub = PddlBenchmark({"domains": ["barman"]}, data_dir=shared_data / "pddl").samples()
    assert [s.id for s in sub][:2] == ["barman-p01", "barman-p02"]
    assert sub[13].task.metadata == {"difficulty": "easy", "domain": "barman", "problem": "p14", "agentboard_id": 43}


def test_parser_is_strict_and_tyreworld_needs_its_documented_normalisation(shared_data):
    tyre = (shared_data / "pddl" / "domains" / "tyreworld.pddl").read_text()
    with pytest.raises(PddlError, match="'in' expects 'container'"):
        parse_domain(tyre, "tyreworld")
    fixed = parse_domain(tyre, "tyreworld", {"in": ("obj", "container")})
    assert fixed.constants == {"wrench": "tool", "pump": "tool", "jack": "tool"}  # declared after the predicates
    barman = parse_domain((shared_data / "pddl" / "domains" / "barman.pddl").read_text(), "barman")
    assert [v for v, _ in barman.operators["pour-shaker-to-shot"].params] == ["?b", "?d", "?h", "?s", "?l", "?l1"]
    neg = "(define (domain d) (:predicates (p ?x)) (:action a :parameters (?x) :precondition (not (p ?x)) :effect (p ?x)))"
    with pytest.raises(PddlError, match="unsupported construct 'not'"):
        parse_domain(neg)


def test_observations_and_valid_actions_read_as_agentboard(bench, samples):
    env = bench.make_env(samples["blockworld-problem1"], None)  # type: ignore[arg-type]
    assert env.reset().text == ("B1 is on the table. B2 is on b3. B3 is on b1. The b2 is clear. Your arm is empty.")
    obs = act(env, "check valid actions")
    assert obs.valid and obs.text == "Valid actions are: Unstack b2 from b3., check valid actions"
    obs = act(env, "Unstack b2 from b3.")
    assert obs.valid and obs.text == "B1 is on the table. B3 is on b1. The b3 is clear. You are holding b2. "
    tyre = bench.make_env(samples["tyreworld-p01"], None)  # type: ignore[arg-type]
    tyre.reset()
    assert act(tyre, "check valid actions").text == "Valid actions are: Open boot., check valid actions, look around"
    assert act(tyre, "Open boot.").text == "Boot is open."  # barman/tyreworld: only what became true
    assert act(tyre, "look around").text.startswith("Boot is open. Boot is unlocked. Hub the-hub1 is fastened.")


def test_invalid_actions_leave_the_state_unchanged(bench, samples):
    env = env_for(bench, samples["blockworld-problem1"])
    before = env.state
    obs = act(env, "Unstack b3 from b1.")  # parsed, but b3 is not clear
    assert (obs.text, obs.valid, env.state) == (INAPPLICABLE, False, before)
    obs = act(env, "stack b1 b2")  # no stack applies anywhere now, so AgentBoard's parser does not know it
    assert (obs.text, obs.valid, env.state) == (UNPARSED, False, before)
    assert act(env, "unstack b2").text == UNPARSED  # too few objects
    assert act(env, "dance").text == UNPARSED
    grip = env_for(bench, samples["gripper-prob01"])
    assert act(grip, "Move from rooma to rooma.").text == INAPPLICABLE  # repeated objects never apply
    assert act(env, "unstack b2 b3").valid
    score = env.score()
    assert score.metrics["grounding_accuracy"] == pytest.approx(1 / 5) and score.metrics["steps"] == 5.0


def test_progress_is_a_running_maximum(bench, samples):
    env = env_for(bench, samples["blockworld-problem1"])  # goal: b2 on b1, b3 on b2
    for text in ("unstack b2 b3", "putdown b2", "unstack b3 b1", "putdown b3", "pickup b2", "stack b2 b1"):
        assert act(env, text).valid, text
    assert env.score().value == 0.5
    obs = act(env, "unstack b2 b1")
    assert obs.valid and obs.info["progress_rate"] == 0.5
    score = env.score()
    assert not score.success and score.value == 0.5 and score.metrics["progress_rate"] == 0.5


def _replay(bench: PddlBenchmark, sample: Sample, canonical: bool = False) -> tuple[PddlEnv, str]:
    world = bench.world(sample.gold["domain"], sample.gold["problem"])
    steps = plan(world)
    assert steps is not None, f"no plan for {sample.id}"
    env = env_for(bench, sample)
    obs = None
    for a in steps:
        assert not env.done
        obs = act(env, " ".join([a.name, *a.args]) if canonical else render(a.name, a.args))
        assert obs.valid, (sample.id, a, obs.text)
    assert obs is not None
    return env, obs.text


@pytest.mark.parametrize("sample_id", ONE_PER_DOMAIN)
def test_planner_plans_succeed_through_the_text_interface(bench, samples, sample_id):
    env, last = _replay(bench, samples[sample_id])
    score = env.score()
    assert score.success and score.value == 1.0 and score.metrics["grounding_accuracy"] == 1.0
    assert env.done and last.endswith(" The goal is satisfied.")


def test_canonical_action_form_from_the_grammar_parses_too(bench, samples):
    env, _ = _replay(bench, samples["barman-p01"], canonical=True)
    assert env.score().success


def test_action_grammars_compile_for_the_local_model(samples):
    from llama_cpp import LlamaGrammar

    for sample_id in ONE_PER_DOMAIN:
        task = samples[sample_id].task
        assert task.action_hint and LlamaGrammar.from_string(task.action_grammar, verbose=False) is not None


@pytest.mark.slow
def test_every_problem_is_solved_by_planner_plans_through_text(bench, samples):
    for sample in samples.values():
        env, _ = _replay(bench, sample)
        score = env.score()
        assert score.success and score.value == 1.0, sample.id


def _run_dir(final: dict) -> RunDir:
    labels = final["labels"]
    root = Path(final["runtime"]["results_root"])
    path = root / labels["experiment"] / labels["benchmark"] / labels["framework"] / labels["memory"] / labels["model"]
    return RunDir(path / f"seed={labels['seed']}")


@pytest.mark.slow
def test_local_model_runs_two_problems_through_the_single_framework(make_config, shared_data):
    cfg = make_config(
        "benchmark=pddl",
        "framework=single",
        "model=local",
        "protocol.limit=2",
        "benchmark.params.max_steps=6",
        data_root=shared_data,
    )
    final = run_from_config(cfg)
    records = _run_dir(final).records()
    assert [r["sample_id"] for r in records] == ["gripper-prob01", "gripper-prob02"]
    for r in records:
        assert r["status"] in {"ok", "limit_exceeded", "model_error"}
        assert r["difficulty"] == "easy" and r["task_type"] == "gripper"
        assert {"progress_rate", "grounding_accuracy", "steps"} <= set(r["metrics"])
        assert 0.0 <= r["metrics"]["grounding_accuracy"] <= 1.0 and r["steps"] >= 1
    header = json.loads(_run_dir(final).run_json.read_text())
    assert header["identity"]["data_hashes"]["domains/gripper.pddl"] == files.PINS["domains/gripper.pddl"]
