"""The toy benchmarks show that the contracts carry every benchmark shape of the mission."""

from __future__ import annotations

import json
import re

from aecg_bench.benchmarks.toy import ToyBenchmark
from aecg_bench.benchmarks.toy_tools import STOP, ToyToolsBenchmark
from aecg_bench.contracts import EnvContext
from aecg_bench.types import Action, ToolCall

CTX = EnvContext(llm=None, seed=0)


def test_toy_invalid_action_counts_and_leaves_state():
    sample = ToyBenchmark({"size": 1}).samples()[0]
    env = ToyBenchmark().make_env(sample, CTX)
    first = env.reset()
    bad = env.step(Action(kind="command", text="fly"))
    assert not bad.valid and "Valid actions" in bad.text
    assert env.pos == sample.gold["start"]
    assert env.score().metrics["grounding_accuracy"] == 0.0
    assert "target" in first.text


def test_gold_data_is_not_in_the_public_task():
    for sample in ToyToolsBenchmark({"size": 4}).samples():
        public = json.dumps(sample.task.__dict__, default=str)
        assert not re.search(rf"\b{sample.gold['name']}\b", public) and sample.gold["cancel"] not in public


def test_tool_use_with_scripted_user_missions_and_candidates():
    bench = ToyToolsBenchmark({"size": 1})
    sample = bench.samples()[0]
    env = bench.make_env(sample, CTX)
    env.reset()
    # tau2-style: the user reveals their name only when asked; tools read and write a database.
    hidden = env.step(Action(kind="tool", tool_calls=(ToolCall("find_orders", {"customer": sample.gold["name"]}),)))
    assert not hidden.valid  # identity not verified yet
    assert sample.gold["name"] in env.step(Action(kind="message", text="What is your name?")).text
    orders = json.loads(
        env.step(Action(kind="tool", tool_calls=(ToolCall("find_orders", {"customer": sample.gold["name"]}),))).text
    )
    pending = next(o for o, v in orders.items() if v["status"] == "pending")
    env.step(Action(kind="tool", tool_calls=(ToolCall("cancel_order", {"order_id": pending}),)))
    # MMTB-style: finishing a mission reveals the next one.
    second = env.step(Action(kind="message", text="Done, your order is cancelled."))
    assert "Candidates:" in second.text and not second.done
    # Mind2Web-style: choose one element among candidates.
    wrong = "A" if sample.gold["liked"] != "A" else "B"
    env.step(Action(kind="tool", tool_calls=(ToolCall("select_candidate", {"option": wrong}),)))
    assert env.score().value == 0.5 and not env.score().success
    env.step(Action(kind="tool", tool_calls=(ToolCall("select_candidate", {"option": sample.gold["liked"]}),)))
    end = env.step(Action(kind="message", text="Selected."))
    assert end.done and STOP in end.text
    assert env.score().success and env.score().metrics["missions_done"] == 2.0


def test_tool_use_collateral_damage_fails_the_task():
    bench = ToyToolsBenchmark({"size": 1, "missions": 1})
    sample = bench.samples()[0]
    env = bench.make_env(sample, CTX)
    env.reset()
    env.step(Action(kind="message", text="your name please"))
    env.db[sample.gold["cancel"]]["status"] = "cancelled"
    other = next(o for o in env.db if o != sample.gold["cancel"])
    env.db[other]["status"] = "pending"
    env.step(Action(kind="tool", tool_calls=(ToolCall("cancel_order", {"order_id": other}),)))
    assert not env.score().success and env.score().metrics["collateral_changes"] == 1.0
