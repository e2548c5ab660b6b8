"""Pins of the `procedures` benchmark's exact behaviour (the `procedures` mutation campaign): the default
world's data hash, the task fields agents and grammars read, the environment's observations and metrics,
the drift rule's redraw, the stream's family shares and the mock copier's reading of a prompt."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from llama_cpp import LlamaGrammar

from aecg_bench.benchmarks.procedures import ProceduresBenchmark, ProceduresParams, make_world, mock_copier
from aecg_bench.contracts import EnvContext
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Action

MOCK = ModelSpec(label="mock", provider="mock", model="mock/x")
# sha256 of the default world (version 2) and both streams: a change to the generator changes it (and the
# benchmark's version must say so; docs/benchmarks/procedures.md)
DEFAULT_DIGEST = "171f5b09564995cabd2d9e3441bd18b351db5ab973dc98e3572cc27e7f2178e2"


def act(env, text: str):
    return env.step(Action(kind="command", text=text))


def test_the_default_world_and_its_streams_hash_to_the_pinned_digest():
    b = ProceduresBenchmark({})
    assert b.data_hashes() == {"generated:procedures-v2": DEFAULT_DIGEST}
    assert b.describe_backends() == {
        "procedures": {
            "chance_rate": pytest.approx(1 / 9),
            "families": ["Talon terminal", "Talon hatch", "Cobalt hatch", "Cobalt locker"],
        }
    }


def test_tasks_carry_their_split_benchmark_mode_step_budget_and_a_grammar_of_the_listed_codes():
    b = ProceduresBenchmark({"size": 5, "train_size": 3, "length": 3})
    assert len(b.samples("train")) == 3 and len(b.samples("test")) == 5
    for split in ("train", "test"):
        for s in b.samples(split):
            t = s.task
            assert s.split == split and t.id.startswith(f"{split}-")
            assert (t.benchmark, t.mode, t.max_steps) == ("procedures", "steps", 3)
            listed = t.action_hint.rsplit(": ", 1)[1].split(" | ")
            assert listed == s.gold["panel"]
            assert t.action_grammar == "root ::= " + " | ".join(f'"{c}"' for c in listed)
            LlamaGrammar.from_string(t.action_grammar, verbose=False)
            assert re.search(r"\(serial [1-9]\d{3}\)", t.instruction)
    with pytest.raises(ValueError, match="procedures has no split 'dev'; valid choices: train, test"):
        b.samples("dev")


def test_a_rare_family_recurs_at_its_weight_relative_to_the_others():
    b = ProceduresBenchmark({"size": 6000})
    counts = Counter(s.gold["device"] for s in b.samples())
    rare = next(f.name for f in b.world if f.rare)
    share = counts[rare] / 6000
    assert share == pytest.approx(0.25 / 3.25, abs=0.015)  # three common families at weight 1, one at 0.25


def test_a_drifted_procedure_always_differs_from_the_one_it_replaces():
    for seed in range(30):  # two codes, one step: a redraw without the rule would repeat half the time
        p = ProceduresParams(generator_seed=seed, controls=2, length=1, drift_fraction=1.0, drift_among="all")
        for fam in make_world(p):
            assert fam.drifted and all(fam.drifted[k] != v for k, v in fam.procedures.items())


def test_the_environment_answers_each_case_with_its_observation_and_counts_every_invalid_action():
    b = ProceduresBenchmark({"size": 40, "drift_fraction": 1.0, "drift_among": "all", "scoped_fraction": 1.0})
    s = next(x for x in b.samples() if x.gold["drifted"] and x.gold["rare"])
    device, proc, panel = s.gold["device"], s.gold["procedure"], s.gold["panel"]
    env = b.make_env(s, EnvContext(llm=None, seed=0))
    env.reset()
    for _ in range(2):
        bad = act(env, "dance")
        assert bad.text == f"Invalid action 'dance'. The keypad takes: {', '.join(panel)}."
        assert bad.valid is False and bad.done is False
    assert act(env, proc[0]).text == "Click: accepted. Step 2 of 2."
    done = act(env, proc[1])
    assert done.text == f"Click: the {device} unlocks." and done.done is True and done.reward == 1.0
    after = act(env, proc[0])
    assert after.text == f"The {device} does not respond any more." and after.done is True and after.valid is False
    assert env.score().metrics == {
        "correct_steps": 2.0,
        "invalid_actions": 2.0,
        "scoped": 1.0,
        "rare": 1.0,
        "drifted": 1.0,
    }


def _request(*contents: str | None) -> Request:
    return Request(messages=[{"role": "user", "content": c} for c in contents], params={})


TASK = "Task: Unlock the Talon terminal in the dock (serial 1234). You work on the day shift team."
HINT = "Actions: enter one code of the keypad per step: enter 524 | enter 205 | enter 317"


def test_the_copier_says_stop_outside_a_procedures_task():
    assert mock_copier(_request(HINT), MOCK) == "stop"  # no task
    assert mock_copier(_request(TASK), MOCK) == "stop"  # no keypad


def test_the_copier_reads_the_procedure_across_lines_and_from_step_one_without_a_step_line():
    memory = "- Talon terminal: enter 317 first\n- Talon terminal then: enter 205"
    assert mock_copier(_request(memory, TASK + "\n" + HINT), MOCK) == "enter 317"  # no "Step k of n": step 1
    step2 = TASK + "\n" + HINT + "\nThe Talon terminal is locked. Step 2 of 2."
    assert mock_copier(_request(memory, step2), MOCK) == "enter 205"  # the second line's code


def test_the_copier_ignores_task_lines_and_observations_that_name_the_device():
    """A task line or an observation naming the device and a code is not experience: it guesses."""
    lines = [
        "Task: Unlock the Talon terminal; enter 524 is on its keypad",
        "The Talon terminal shows enter 524 on its keypad.",
    ]
    for line in lines:
        guesses = {mock_copier(_request(f"nonce {i}", line, TASK + "\n" + HINT), MOCK) for i in range(40)}
        assert guesses == {"enter 524", "enter 205", "enter 317"}, line
    # the same line as experience (not a task line, not an observation) is copied
    assert mock_copier(_request("- Talon terminal: enter 524", TASK + "\n" + HINT), MOCK) == "enter 524"
