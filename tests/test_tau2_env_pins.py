"""Pins of the tau2 environment around the reward (`tau2/benchmark.py`: `Tau2Env`, the initial world, the gold
hashes, the split), written against the mutants of `make mutants PATHS=tau2_env` (docs/quality.md).

The reward itself is pinned in test_tau2_scoring_pins.py; here: what the reward is given. The step and error
counts and the termination (tau2 orchestrator.py: max_steps counts every message, max_errors the failed tool
calls, a user ###STOP### ends the run), the calls and agent texts the ACTION/COMMUNICATE checks read, the world
a task starts from (tau2 Environment.set_state) and the score's metric names. The tau2 mock domain's release
files (../shared/data/tau2, read-only) and a scripted user with the mock model; no network.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fw_helpers import scripted_llm

from aecg_bench.benchmarks.tau2 import Tau2Benchmark
from aecg_bench.benchmarks.tau2 import user as usersim
from aecg_bench.benchmarks.tau2.benchmark import Tau2Env, agent_prompt, split_of
from aecg_bench.benchmarks.tau2.tasks import Tau2Task
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import DataError
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Action, ToolCall

CREATE = ToolCall("create_task", {"user_id": "user_1", "title": "Important Meeting"}, "c1")
BAD = ToolCall("update_task_status", {"task_id": "nope", "status": "completed"}, "c2")
DONE = ToolCall("update_task_status", {"task_id": "task_1", "status": "completed"}, "c3")


def _bench(shared_data: Path, **params: Any) -> Tau2Benchmark:
    return Tau2Benchmark({"domain": "mock", **params}, data_dir=shared_data / "tau2")


class User:
    """A scripted customer: replies in order (the last one repeats), every request recorded."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies) or ["ok"]
        self.requests: list[Request] = []

    def __call__(self, request: Request, spec: ModelSpec) -> str:
        self.requests.append(request)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]


def _env(b: Tau2Benchmark, task: Tau2Task | str, user: User) -> Tau2Env:
    t = b.tasks[task] if isinstance(task, str) else task
    return Tau2Env(b, t, EnvContext(llm=scripted_llm(user), seed=0))


def _say(text: str) -> Action:
    return Action(kind="message", text=text)


def _tools(*calls: ToolCall) -> Action:
    return Action(kind="tool", tool_calls=calls)


# --- counting and termination ------------------------------------------------------------------------------


def test_a_plain_start_is_the_users_answer_to_tau2s_first_agent_message(shared_data):
    user = User("I need a task.")
    env = _env(_bench(shared_data), "create_task_1", user)
    obs = env.reset()
    assert obs.text == "I need a task." and not obs.done and obs.valid
    assert env.steps == 1 and env.errors == 0 and env.calls == [] and env.termination == ""
    assert env.agent_texts == [usersim.FIRST_AGENT_MESSAGE]
    (req,) = user.requests
    assert [m["role"] for m in req.messages] == ["system", "user"]
    assert req.messages[1]["content"] == usersim.FIRST_AGENT_MESSAGE


def test_every_message_counts_and_the_run_stops_exactly_at_max_steps(shared_data):
    # reset: the user's first message (1); the agent's message (2); the user's answer (3) = max_steps
    user = User("hello", "tell me more", "and more")
    env = _env(_bench(shared_data, max_steps=3), "create_task_1", user)
    assert not env.reset().done
    obs = env.step(_say("How can I help?"))
    assert obs.text == "tell me more" and obs.done and env.termination == "max_steps" and env.steps == 3
    after = env.step(_say("still there?"))
    assert after.done and after.valid is False and after.text == "The conversation has ended."
    assert env.steps == 3 and len(user.requests) == 2  # nothing counted, the user not asked again


def test_an_agent_message_that_reaches_max_steps_is_not_heard_by_the_user(shared_data):
    user = User("hello", "never said")
    env = _env(_bench(shared_data, max_steps=2), "create_task_1", user)
    env.reset()
    obs = env.step(_say("How can I help?"))
    assert obs.done and obs.text == "" and obs.valid and env.termination == "max_steps" and env.steps == 2
    assert len(user.requests) == 1 and env.agent_texts == [usersim.FIRST_AGENT_MESSAGE]


def test_one_below_max_steps_goes_on(shared_data):
    user = User("hello", "go on")
    env = _env(_bench(shared_data, max_steps=4), "create_task_1", user)
    env.reset()
    obs = env.step(_say("How can I help?"))
    assert not obs.done and env.steps == 3 and env.termination == ""
    assert env.step(_tools(DONE)).done and env.termination == "max_steps"


def test_a_user_stop_ends_the_run_as_user_stop_and_the_agent_text_is_heard(shared_data):
    user = User("I need a task.", "thanks ###STOP###")
    env = _env(_bench(shared_data), "create_task_1", user)
    env.reset()
    obs = env.step(_say("Done, created."))
    assert obs.done and obs.text == "thanks ###STOP###" and env.termination == "user_stop"
    assert env.agent_texts == [usersim.FIRST_AGENT_MESSAGE, "Done, created."]
    assert user.requests[-1].messages[-1] == {"role": "user", "content": "Done, created."}
    s = env.score()
    assert s.metrics["user_stop"] == 1.0 and s.metrics["premature"] == 0.0


def test_a_stop_on_the_last_allowed_step_stays_max_steps(shared_data):
    # tau2 checks max_steps before the user's stop: the stop message at the cap is a premature end
    user = User("hi", "bye ###STOP###")
    env = _env(_bench(shared_data, max_steps=3), "create_task_1", user)
    env.reset()
    assert env.step(_say("How can I help?")).done
    assert env.termination == "max_steps"
    s = env.score()
    assert s.metrics["user_stop"] == 0.0 and s.metrics["premature"] == 1.0 and s.value == 0.0


def test_a_user_stop_at_reset_ends_the_run_before_the_agent_acts(shared_data):
    env = _env(_bench(shared_data), "create_task_1", User("###TRANSFER###"))
    obs = env.reset()
    assert obs.done and env.termination == "user_stop"
    assert env.step(_say("hello")).text == "The conversation has ended."


def test_tool_calls_run_for_the_agent_and_their_results_come_back_in_order(shared_data):
    b = _bench(shared_data)
    env = _env(b, "create_task_1", User("hi"))
    env.reset()
    obs = env.step(_tools(CREATE, BAD))
    assert not obs.done and not obs.valid  # one call failed
    first, second = obs.info["tool_results"]
    assert (first["id"], first["name"], first["ok"]) == ("c1", "create_task", True)
    assert (second["id"], second["name"], second["ok"]) == ("c2", "update_task_status", False)
    assert json.loads(first["content"])["title"] == "Important Meeting"
    assert second["content"].startswith("Error: ")
    assert obs.text == first["content"] + "\n" + second["content"]
    assert env.errors == 1 and env.steps == 3  # the user's first message, the agent's call, the results
    assert [(c.name, c.arguments, c.requestor) for c in env.calls] == [
        ("create_task", CREATE.arguments, "assistant"),
        ("update_task_status", BAD.arguments, "assistant"),
    ]
    good = env.step(_tools(DONE))
    assert good.valid and good.info["tool_results"][0]["ok"] and env.errors == 1


def test_errors_stop_the_run_exactly_at_max_errors(shared_data):
    env = _env(_bench(shared_data, max_errors=3), "create_task_1", User("hi"))
    env.reset()
    assert not env.step(_tools(BAD, BAD)).done and env.errors == 2
    obs = env.step(_tools(BAD))
    assert obs.done and env.termination == "too_many_errors" and env.errors == 3
    assert env.score().metrics["premature"] == 1.0


def test_max_steps_wins_over_max_errors_on_the_same_step(shared_data):
    env = _env(_bench(shared_data, max_steps=3, max_errors=1), "create_task_1", User("hi"))
    env.reset()
    assert env.step(_tools(BAD)).done and env.termination == "max_steps"


@pytest.mark.parametrize(
    "action", [Action(kind="message", text="  \n"), Action(kind="tool"), Action(kind="command", text="do it")]
)
def test_an_empty_message_or_a_call_less_tool_action_is_refused_and_counted(shared_data, action):
    user = User("hi")
    env = _env(_bench(shared_data), "create_task_1", user)
    env.reset()
    obs = env.step(action)
    assert obs.valid is False and not obs.done and obs.text == "Send the user a message or call a tool."
    assert env.steps == 2 and len(user.requests) == 1 and env.calls == []


def test_an_answer_is_a_message_to_the_user(shared_data):
    user = User("hi", "got it")
    env = _env(_bench(shared_data), "create_task_1", user)
    env.reset()
    assert env.step(Action(kind="answer", text="All done.")).text == "got it"
    assert env.agent_texts[-1] == "All done."


# --- the score's inputs and metrics ------------------------------------------------------------------------


def test_a_solved_task_scores_one_with_every_metric(shared_data):
    user = User("Please create 'Important Meeting' for user_1.", "Great ###STOP###")
    env = _env(_bench(shared_data), "create_task_1", user)
    env.reset()
    env.step(_tools(CREATE))
    env.step(_say("The agent confirmed the task was created successfully."))
    s = env.score()
    assert s.success and s.value == 1.0
    assert s.metrics == {
        "reward_db": 1.0,
        "reward_communicate": 1.0,
        "reward_action": 1.0,
        "reward_env_assertion": 1.0,
        "reward": 1.0,
        "steps": 5.0,
        "tool_errors": 0.0,
        "tool_calls": 1.0,
        "user_tool_calls": 0.0,
        "user_stop": 1.0,
        "premature": 0.0,
        "basis_db": 1.0,
        "basis_communicate": 1.0,
    }


def test_a_run_the_framework_cut_short_counts_as_max_steps(shared_data):
    env = _env(_bench(shared_data), "create_task_1", User("hi"))
    env.reset()
    env.step(_tools(CREATE))
    assert env.termination == ""
    s = env.score()
    assert s.value == 0.0 and not s.success and s.metrics["premature"] == 1.0 and s.metrics["user_stop"] == 0.0
    assert s.metrics["reward_db"] == 1.0  # the component holds; the premature end zeroes the reward


def test_the_communicate_check_reads_what_the_agent_said(shared_data):
    user = User("hi", "ok ###STOP###")
    env = _env(_bench(shared_data), "create_task_1", user)
    env.reset()
    env.step(_tools(CREATE))
    env.step(_say("Created it."))
    s = env.score()
    assert s.metrics["reward_db"] == 1.0 and s.metrics["reward_communicate"] == 0.0 and not s.success


def test_an_action_task_reads_the_calls_the_agent_made(shared_data):
    user = User("Delete all my tasks.", "ok ###STOP###")
    env = _env(_bench(shared_data), "impossible_task_1", user)
    env.reset()
    env.step(_tools(ToolCall("transfer_to_human_agents", {"summary": "anything"}, "t")))
    env.step(_say("You are being transferred."))
    s = env.score()
    assert s.metrics["reward_action"] == 1.0 and s.success
    assert s.metrics["basis_action"] == 1.0 and s.metrics["basis_db"] == 1.0 and "basis_communicate" not in s.metrics


def test_success_is_a_reward_of_one(shared_data):
    # a task whose reward holds exactly: success; a failed component: no success, whatever the other says
    user = User("Please create it.", "Great ###STOP###")
    env = _env(_bench(shared_data), "create_task_1_with_env_assertions", user)
    env.reset()
    env.step(_tools(CREATE))
    env.step(_say("The agent confirmed the task was created successfully."))
    s = env.score()
    assert s.success and s.value == 1.0 and s.metrics["reward"] == 1.0


# --- a task that starts mid-conversation ---------------------------------------------------------------------


def test_a_history_ending_with_the_agent_is_shown_and_the_user_answers_it(shared_data):
    user = User("Now mark it completed please.")
    b = _bench(shared_data)
    env = _env(b, "update_task_with_message_history", user)
    obs = env.reset()
    said = "I've created a task titled 'Project Review' for you."
    assert obs.text.startswith(
        "Conversation so far:\n[user] I need to create a task for the project review meeting.\n[you] " + said
    )
    assert obs.text.endswith("\n\nNow mark it completed please.") and not obs.done
    # the history's tool call is one of the run's calls; its agent text one of the agent's texts
    assert [(c.name, c.requestor) for c in env.calls] == [("create_task", "assistant")]
    assert len(env.agent_texts) == 1 and env.agent_texts[0].startswith(said)
    roles = [(m["role"], m["content"][:21]) for m in user.requests[0].messages[1:]]
    assert roles == [("assistant", "I need to create a ta"), ("user", "I've created a task t")]
    assert env.steps == 1
    # the world already holds the history's task (tau2 set_state replays its tool calls)
    assert env.world.agent.db.tasks["task_2"].title == "Project Review"


def _history_task(b: Tau2Benchmark, *turns: tuple[str, str]) -> Tau2Task:
    raw = b.tasks["update_task_with_message_history"].model_dump()
    raw["id"] = "history_" + "_".join(r for r, _ in turns)
    raw["initial_state"]["message_history"] = [{"role": r, "content": c} for r, c in turns]
    return Tau2Task.model_validate(raw)


def test_a_history_ending_with_the_user_is_answered_by_the_agent_first(shared_data):
    user = User("never asked")
    b = _bench(shared_data)
    task = _history_task(b, ("user", "u1"), ("assistant", "a1"), ("user", "u2"))
    env = _env(b, task, user)
    obs = env.reset()
    assert obs.text == "Conversation so far:\n[user] u1\n[you] a1\n\nu2" and not obs.done
    assert user.requests == [] and env.agent_texts == ["a1"] and env.steps == 0
    reply = User("fine ###STOP###")
    env2 = _env(b, task, reply)
    env2.reset()
    env2.step(_say("a2"))
    msgs = reply.requests[0].messages[1:]
    assert [(m["role"], m["content"]) for m in msgs] == [
        ("assistant", "u1"),
        ("user", "a1"),
        ("assistant", "u2"),
        ("user", "a2"),
    ]


def test_a_one_turn_user_history_shows_only_that_turn(shared_data):
    b = _bench(shared_data)
    env = _env(b, _history_task(b, ("user", "just this")), User("unused"))
    assert env.reset().text == "just this"


def test_system_and_tool_messages_and_empty_texts_are_not_conversation_turns(shared_data):
    b = _bench(shared_data)
    task = _history_task(b, ("system", "sys"), ("tool", "res"), ("assistant", ""), ("user", "hello"))
    env = _env(b, task, User("unused"))
    assert env.reset().text == "hello"
    assert env.agent_texts == []


def test_a_history_call_without_arguments_is_recorded_with_empty_arguments(shared_data):
    b = _bench(shared_data)
    raw = b.tasks["update_task_with_message_history"].model_dump()
    raw["id"] = "history_get_users"
    raw["initial_state"]["message_history"] = [
        {"role": "assistant", "tool_calls": [{"id": "x", "name": "get_users"}], "requestor": "assistant"},
        {"role": "user", "content": "hi"},
    ]
    env = _env(b, Tau2Task.model_validate(raw), User("unused"))
    env.reset()
    assert [(c.name, c.arguments, c.requestor) for c in env.calls] == [("get_users", {}, "assistant")]


# --- the initial world and the gold hashes ------------------------------------------------------------------


def test_initialization_data_and_actions_set_the_start_and_the_gold(shared_data):
    b = _bench(shared_data)
    plain = b.fresh_world(b.tasks["create_task_1"])
    assert set(plain.agent.db.tasks) == {"task_1"}
    for tid in ("update_task_with_initialization_data", "update_task_with_initialization_actions"):
        world = b.fresh_world(b.tasks[tid])
        assert world.agent.db.tasks["task_2"].status == "pending", tid
        assert world.agent.db.users["user_1"].tasks == ["task_1", "task_2"], tid
    # the gold is the start plus the gold call; solving it from the env scores the DB check
    user = User("Please mark task_2 completed.", "ok ###STOP###")
    env = _env(b, "update_task_with_initialization_data", user)
    env.reset()
    assert env.world.agent.db.tasks["task_2"].title == "Project Review"
    env.step(_tools(ToolCall("update_task_status", {"task_id": "task_2", "status": "completed"}, "u")))
    assert env.score().metrics["reward_db"] == 1.0


def test_gold_hashes_are_computed_once_per_task_and_differ_between_tasks(shared_data):
    b = _bench(shared_data)
    one = b.gold_hashes(b.tasks["create_task_1"])
    assert b.gold_hashes(b.tasks["create_task_1"]) == one
    other = b.gold_hashes(b.tasks["update_task_1"])
    assert other != one and one[1] is None  # mock has no user side
    start = b.fresh_world(b.tasks["create_task_1"]).db_hash()
    assert one[0] != start  # the gold creates a task
    # a cached value is reused: a second benchmark object agrees with the first
    assert _bench(shared_data).gold_hashes(b.tasks["update_task_1"]) == other


def test_telecom_user_data_reaches_the_users_device(shared_data):
    b = Tau2Benchmark({"domain": "telecom", "task_set": "small"}, data_dir=shared_data / "tau2")
    task = next(t for t in b.tasks.values() if t.initial_state and t.initial_state.initialization_actions)
    world = b.fresh_world(task)
    plain = b.fresh_world(Tau2Task.model_validate({"id": "p", "user_scenario": {"instructions": "x"}}))
    assert world.user_db_hash() != plain.user_db_hash()
    raw = task.model_dump()
    raw["initial_state"] = {"initialization_data": {"user_data": {"device": {"airplane_mode": True}}}}
    raw["id"] = "user_data_only"
    changed = b.fresh_world(Tau2Task.model_validate(raw))
    assert changed.user.db.device.airplane_mode is True
    assert changed.db_hash() == plain.db_hash()  # the agent's side untouched


def test_tasks_rewarding_nl_assertions_are_refused(shared_data, monkeypatch):
    b = _bench(shared_data)
    rows = json.loads((shared_data / "tau2/domains/mock/tasks.json").read_text())
    rows[0]["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    monkeypatch.setattr(b, "_load", lambda name: rows)
    with pytest.raises(DataError, match=r"tau2 tasks \['create_task_1'\] reward NL assertions"):
        _ = b.tasks


def test_tasks_that_do_not_parse_are_one_clear_error(shared_data, monkeypatch):
    b = _bench(shared_data)
    monkeypatch.setattr(b, "_load", lambda name: [{"user_scenario": {"instructions": "x"}}])
    with pytest.raises(DataError, match=r"tau2 mock tasks\.json does not parse"):
        _ = b.tasks


# --- the task-level split ------------------------------------------------------------------------------------


def _reference_split(domain: str, task_id: str, fraction: float) -> str:
    digest = hashlib.sha256(f"tau2:{domain}:{task_id}".encode()).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < fraction else "test"


def test_the_split_is_the_documented_hash_of_domain_and_task():
    ids = [f"t{i}" for i in range(200)]
    for fraction in (0.0, 0.3, 0.5, 1.0):
        got = [split_of("retail", i, fraction) for i in ids]
        assert got == [_reference_split("retail", i, fraction) for i in ids]
    assert {split_of("retail", i, 0.0) for i in ids} == {"test"}
    assert {split_of("retail", i, 1.0) for i in ids} == {"train"}
    assert [split_of("airline", i, 0.5) for i in ids] != [split_of("retail", i, 0.5) for i in ids]


# --- written against the survivors of the first run -----------------------------------------------------------


def test_the_user_gets_the_guidelines_scenario_and_temperature(shared_data):
    user = User("hi")
    b = _bench(shared_data, user_temperature=0.7)
    _env(b, "create_task_1", user).reset()
    (req,) = user.requests
    assert req.params["temperature"] == 0.7
    system = req.messages[0]["content"]
    assert system.startswith(b.guidelines.strip()[:200]) and "<scenario>" in system
    assert str(b.tasks["create_task_1"].user_scenario) in system


def test_a_solved_task_the_user_never_closed_scores_zero(shared_data):
    user = User("Please create 'Important Meeting' for user_1.", "ok")
    env = _env(_bench(shared_data), "create_task_1", user)
    env.reset()
    env.step(_tools(CREATE))
    env.step(_say("The agent confirmed the task was created successfully."))
    s = env.score()  # every component holds, but the framework stopped before the user did
    assert s.metrics["reward_db"] == s.metrics["reward_communicate"] == 1.0
    assert s.value == 0.0 and not s.success and s.metrics["premature"] == 1.0


def test_a_history_answered_with_a_stop_is_done_at_reset(shared_data):
    b = _bench(shared_data)
    env = _env(b, _history_task(b, ("user", "u1"), ("assistant", "a1")), User("bye ###STOP###"))
    obs = env.reset()
    assert obs.done and env.termination == "user_stop"
    env2 = _env(b, _history_task(b, ("user", "u1"), ("assistant", "a1")), User("go on"))
    assert env2.reset().done is False


def test_a_history_call_keeps_its_arguments(shared_data):
    env = _env(_bench(shared_data), "update_task_with_message_history", User("ok"))
    env.reset()
    (call,) = env.calls
    assert call.arguments == {"user_id": "user_1", "title": "Project Review", "description": "Review Q4 project status"}


def test_a_user_tool_call_in_the_history_runs_on_the_users_phone_and_counts_as_the_users(shared_data):
    b = Tau2Benchmark({"domain": "telecom", "task_set": "small"}, data_dir=shared_data / "tau2")
    raw = {
        "id": "user_history",
        "user_scenario": {"instructions": "x"},
        "initial_state": {
            "message_history": [
                {"role": "user", "tool_calls": [{"id": "u", "name": "toggle_airplane_mode"}], "requestor": "user"},
                {"role": "user", "content": "My phone is odd."},
            ]
        },
    }
    task = Tau2Task.model_validate(raw)
    plain = b.fresh_world(Tau2Task.model_validate({"id": "p", "user_scenario": {"instructions": "x"}}))
    world = b.fresh_world(task)
    assert world.user.db.device.airplane_mode is (not plain.user.db.device.airplane_mode)
    env = _env(b, task, User("unused"))
    env.reset()
    assert [(c.name, c.requestor) for c in env.calls] == [("toggle_airplane_mode", "user")]
    assert env.score().metrics["user_tool_calls"] == 1.0


def test_train_means_strictly_below_the_fraction():
    digest = hashlib.sha256(b"tau2:retail:edge").digest()
    value = int.from_bytes(digest[:8], "big") / 2**64
    assert split_of("retail", "edge", value) == "test"
    assert split_of("retail", "edge", min(1.0, value * (1 + 1e-9))) == "train"


def test_a_sample_is_one_task_of_its_split_with_the_policy_and_the_agents_tools(shared_data):
    b = _bench(shared_data, max_steps=17, train_fraction=0.5)
    every = b.samples("all")
    assert [s.gold["task_id"] for s in every] == list(b.tasks)
    s = next(x for x in every if x.gold["task_id"] == "create_task_1")
    assert s.id == "mock:create_task_1" and s.split == "all" and s.gold == {"task_id": "create_task_1"}
    t = s.task
    assert t.benchmark == "tau2" and t.mode == "conversation" and t.task_type == "mock" and t.max_steps == 17
    assert t.instruction == agent_prompt(b.policy) and t.metadata == {"domain": "mock", "tau2_task_id": "create_task_1"}
    assert {"create_task", "update_task_status", "get_users"} <= {tool.name for tool in t.tools}
    for split in ("train", "test"):
        chosen = b.samples(split)
        assert {x.split for x in chosen} == {split}
        assert [x.gold["task_id"] for x in chosen] == [i for i in b.tasks if split_of("mock", i, 0.5) == split]
    assert [x.id for x in b.samples()] == [x.id for x in b.samples("test")]  # the default split is test
    assert _bench(shared_data, train_fraction=1.0).samples("test") == []
    assert len(_bench(shared_data, train_fraction=0.0).samples("test")) == len(every)
