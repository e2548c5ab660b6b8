"""Pins of tau2's reward (`tau2/evaluate.py`) and of the task model it reads (`tau2/tasks.py`), written
against the mutants that survived `make mutants PATHS=tau2` (docs/quality.md). The world is tau2's mock
domain built in memory (no data files): two users, one task; the semantics are tau2-bench's
(src/tau2/evaluator/evaluator_env.py, evaluator_action.py, evaluator_communicate.py and
data_model/tasks.py `Action.compare_with_tool_call` at 37199f36)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.benchmarks.tau2.evaluate import (
    Call,
    Reward,
    assertion_holds,
    communicated,
    evaluate,
    replay_gold,
)
from aecg_bench.benchmarks.tau2.mock import MockDB, MockTools
from aecg_bench.benchmarks.tau2.tasks import (
    EnvAssertion,
    EvaluationCriteria,
    GoldAction,
    HistoryMessage,
    RewardType,
    Tau2Task,
    UserScenario,
)
from aecg_bench.benchmarks.tau2.world import World


def _world() -> World:
    db = MockDB.model_validate(
        {
            "tasks": {"task_1": {"task_id": "task_1", "title": "a", "status": "pending"}},
            "users": {
                "u1": {"user_id": "u1", "name": "A", "tasks": ["task_1"]},
                "u2": {"user_id": "u2", "name": "B", "tasks": []},
            },
        }
    )
    return World(MockTools(db))


def _task(**criteria: Any) -> Tau2Task:
    return Tau2Task.model_validate(
        {"id": "t", "user_scenario": {"instructions": "do it"}, "evaluation_criteria": criteria or None}
    )


CREATE = {"action_id": "0", "name": "create_task", "arguments": {"user_id": "u2", "title": "x"}}
DONE = {"action_id": "1", "name": "update_task_status", "arguments": {"task_id": "task_1", "status": "completed"}}
BROKEN = {"action_id": "b", "name": "update_task_status", "arguments": {"task_id": "nope", "status": "completed"}}


def _hashes(world: World) -> tuple[str, str | None]:
    return (world.db_hash(), world.user_db_hash())


def _score(task: Tau2Task, final: World, *, calls=(), texts=(), termination="user_stop") -> Reward:
    gold = replay_gold(task, _world)
    return evaluate(
        task,
        final=final,
        gold_hashes=_hashes(gold),
        calls=list(calls),
        agent_texts=list(texts),
        termination=termination,
    )


# --- replay_gold ---------------------------------------------------------------------------------------


def test_replay_skips_a_failing_gold_action_and_applies_the_rest():
    task = _task(actions=[BROKEN, CREATE, DONE])
    gold = replay_gold(task, _world)
    assert gold.agent.db.tasks["task_1"].status == "completed"
    assert "task_2" in gold.agent.db.tasks


def test_replay_of_a_task_without_criteria_or_actions_is_the_fresh_world():
    fresh = _hashes(_world())
    assert _hashes(replay_gold(_task(), _world)) == fresh
    assert _hashes(replay_gold(_task(communicate_info=["x"]), _world)) == fresh


def test_replay_runs_each_gold_action_for_its_requestor():
    seen: list[tuple[str, str]] = []

    class Spy(World):
        def make_tool_call(self, name, arguments, requestor="assistant"):
            seen.append((name, requestor))
            return super().make_tool_call(name, arguments, requestor)

    task = _task(actions=[{**CREATE, "requestor": "assistant"}, {**DONE, "requestor": "user"}])
    replay_gold(task, lambda: Spy(_world().agent))
    assert seen == [("create_task", "assistant"), ("update_task_status", "user")]  # the user's fails: no user side


# --- assertions ----------------------------------------------------------------------------------------


def _assertion(value: bool = True, **args: Any) -> EnvAssertion:
    return EnvAssertion(env_type="assistant", func_name="assert_task_status", arguments=args, assert_value=value)


def test_an_assertion_holds_when_the_function_returns_its_assert_value():
    world = _world()
    assert assertion_holds(world, _assertion(task_id="task_1", expected_status="pending"))
    assert not assertion_holds(world, _assertion(task_id="task_1", expected_status="completed"))
    assert assertion_holds(world, _assertion(False, task_id="task_1", expected_status="completed"))
    assert not assertion_holds(world, _assertion(False, task_id="task_1", expected_status="pending"))
    assert not assertion_holds(world, _assertion(task_id="task_9", expected_status="pending"))  # unknown object


def test_an_assertion_returning_a_non_bool_is_a_clear_error():
    world = _world()
    bad = EnvAssertion(env_type="assistant", func_name="get_users", arguments={})
    with pytest.raises(ValueError, match=r"^assertion get_users returned list, not bool$"):
        assertion_holds(world, bad)


# --- communicate -----------------------------------------------------------------------------------------


def test_communicate_is_case_insensitive_substring_after_dropping_commas_from_the_message():
    assert communicated("$1234", ["Your refund is $1,234."])
    assert communicated("REFUND", ["your refund"])
    assert communicated("refund", ["YOUR REFUND"])
    assert not communicated("1,234", ["1,234"])  # the info keeps its commas (tau2 removes them from the text only)
    assert not communicated("refund", [])
    assert communicated("b", ["a", "b"])


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="abC, ", min_size=1, max_size=6), st.lists(st.text(alphabet="abC, ", max_size=12), max_size=4))
def test_communicate_matches_tau2s_rule(info, texts):
    expected = any(info.lower() in t.lower().replace(",", "") for t in texts)
    assert communicated(info, texts) == expected
    if "," not in info:  # an info with a comma never matches: tau2 removes commas from the text only
        assert communicated(info, [*texts, "x " + info.upper() + " y"])


# --- gold actions ----------------------------------------------------------------------------------------


def test_gold_action_match_follows_tau2_compare_with_tool_call():
    every = GoldAction.model_validate(CREATE)
    assert every.matches("create_task", {"user_id": "u2", "title": "x"})
    assert not every.matches("create_task", {"user_id": "u2", "title": "y"})
    assert not every.matches("get_users", {"user_id": "u2", "title": "x"})
    assert every.matches("create_task", {"user_id": "u2"})  # compare_args None: the call's own keys
    assert not every.matches("create_task", {"user_id": "u2", "title": "x", "description": "d"})
    assert every.matches("create_task", {})  # no keys to compare
    some = GoldAction.model_validate({**CREATE, "compare_args": ["user_id"]})
    assert some.matches("create_task", {"user_id": "u2", "title": "other"})
    assert not some.matches("create_task", {"title": "x"})
    assert not some.matches("create_task", {"user_id": "u1", "title": "x"})
    none = GoldAction.model_validate({**CREATE, "compare_args": []})
    assert none.matches("create_task", {"user_id": "zz"}) and not none.matches("get_users", {})
    assert every.requestor == "assistant"


# --- evaluate ----------------------------------------------------------------------------------------------


def test_no_criteria_rewards_one_and_says_so():
    r = evaluate(_task(), final=_world(), gold_hashes=("x", None), calls=[], agent_texts=[], termination="max_steps")
    assert (r.reward, r.components, r.basis, r.checks, r.note) == (1.0, {}, (), {}, "no evaluation criteria")


def test_nl_assertion_basis_is_refused_by_task_id():
    task = _task(nl_assertions=["x"], reward_basis=["NL_ASSERTION"])
    with pytest.raises(ValueError, match=r"^task t: NL_ASSERTION rewards are not implemented$"):
        _score(task, _world())


def test_default_basis_is_db_and_communicate():
    assert EvaluationCriteria().reward_basis == [RewardType.DB, RewardType.COMMUNICATE]
    assert [str(b) for b in RewardType] == ["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]


def test_every_component_by_hand():
    task = _task(
        actions=[CREATE, DONE],
        env_assertions=[
            {
                "env_type": "assistant",
                "func_name": "assert_task_status",
                "arguments": {"task_id": "task_1", "expected_status": "completed"},
            }
        ],
        communicate_info=["done", "task_2"],
        reward_basis=["DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE"],
    )
    final = _world()
    final.call("create_task", {"user_id": "u2", "title": "x"})
    final.call("update_task_status", {"task_id": "task_1", "status": "completed"})
    calls = [Call("create_task", {"user_id": "u2", "title": "x"}), Call("update_task_status", DONE["arguments"])]
    full = _score(task, final, calls=calls, texts=["All DONE", "created task_2"])
    assert full.reward == 1.0 and full.note == ""
    assert full.components == {"DB": 1.0, "ENV_ASSERTION": 1.0, "ACTION": 1.0, "COMMUNICATE": 1.0}
    assert full.basis == ("DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE")
    assert full.checks == {"env_assertions": [True], "actions": [True, True], "communicate": [True, True]}

    part = _score(task, final, calls=calls[:1], texts=["created task_2"])
    assert part.components == {"DB": 1.0, "ENV_ASSERTION": 1.0, "ACTION": 0.0, "COMMUNICATE": 0.0}
    assert part.checks["actions"] == [True, False] and part.checks["communicate"] == [False, True]
    assert part.reward == 0.0

    undone = _world()
    undone.call("create_task", {"user_id": "u2", "title": "x"})
    wrong = _score(task, undone, calls=calls, texts=["done task_2"])
    assert wrong.components == {"DB": 0.0, "ENV_ASSERTION": 0.0, "ACTION": 1.0, "COMMUNICATE": 1.0}
    assert wrong.checks["env_assertions"] == [False]


def test_reward_is_the_product_over_the_basis_only():
    task = _task(actions=[DONE], communicate_info=["never said"], reward_basis=["DB"])
    final = _world()
    final.call("update_task_status", DONE["arguments"])
    r = _score(task, final)
    assert r.reward == 1.0 and r.components["COMMUNICATE"] == 0.0 and r.components["ACTION"] == 0.0
    only_action = _score(
        _task(actions=[DONE], reward_basis=["ACTION"]), _world(), calls=[Call("update_task_status", DONE["arguments"])]
    )
    assert only_action.reward == 1.0 and only_action.components["DB"] == 0.0
    nothing = _score(_task(actions=[DONE], reward_basis=[]), _world())
    assert nothing.reward == 1.0


def test_without_actions_or_assertions_db_and_env_hold_whatever_the_db():
    task = _task(communicate_info=["hi"], reward_basis=["DB", "ENV_ASSERTION", "COMMUNICATE"])
    changed = _world()
    changed.call("create_task", {"user_id": "u1", "title": "z"})
    r = _score(task, changed, texts=["hi"])
    assert r.reward == 1.0 and r.components["DB"] == 1.0 and r.components["ENV_ASSERTION"] == 1.0
    assert "env_assertions" not in r.checks and r.checks["actions"] == []
    # assertions without actions: the DB is compared (to the untouched start) and the assertions run
    only_assert = _task(
        env_assertions=[
            {
                "env_type": "assistant",
                "func_name": "assert_number_of_tasks",
                "arguments": {"user_id": "u1", "expected_number": 2},
            }
        ],
        reward_basis=["DB", "ENV_ASSERTION"],
    )
    r2 = _score(only_assert, changed)
    assert r2.components["DB"] == 0.0 and r2.components["ENV_ASSERTION"] == 1.0
    assert r2.checks["env_assertions"] == [True]


def test_db_needs_both_the_agent_and_the_user_hash():
    task = _task(actions=[DONE], reward_basis=["DB"])
    final = _world()
    final.call("update_task_status", DONE["arguments"])
    agent_hash = final.db_hash()
    assert (
        evaluate(
            task, final=final, gold_hashes=(agent_hash, None), calls=[], agent_texts=[], termination="user_stop"
        ).reward
        == 1.0
    )
    assert (
        evaluate(
            task, final=final, gold_hashes=(agent_hash, "user"), calls=[], agent_texts=[], termination="user_stop"
        ).reward
        == 0.0
    )
    assert (
        evaluate(
            task, final=final, gold_hashes=("other", None), calls=[], agent_texts=[], termination="user_stop"
        ).reward
        == 0.0
    )


@pytest.mark.parametrize("termination", ["max_steps", "too_many_errors"])
def test_a_premature_end_scores_zero_and_keeps_the_components(termination):
    task = _task(actions=[DONE], reward_basis=["DB"])
    final = _world()
    final.call("update_task_status", DONE["arguments"])
    r = _score(task, final, termination=termination)
    assert r.reward == 0.0 and r.components["DB"] == 1.0 and r.basis == ("DB",)
    assert r.note == f"terminated prematurely: {termination}" and r.checks["actions"] == [False]
    for other in ("user_stop", "agent_stop", "done"):
        assert _score(task, final, termination=other).reward == 1.0


def test_calls_default_to_the_assistant_and_reward_defaults_are_empty():
    assert Call("x", {}).requestor == "assistant"
    r = Reward(0.5)
    assert (r.components, r.basis, r.checks, r.note) == ({}, (), {}, "")


# --- the task model ------------------------------------------------------------------------------------------


def test_structured_scenario_renders_as_tau2s_str():
    scenario = UserScenario.model_validate(
        {
            "persona": "Calm.\nPolite.",
            "instructions": {
                "domain": "mock",
                "reason_for_call": "Finish\ntask_1.",
                "known_info": "You are u1.",
                "unknown_info": "The id.",
                "task_instructions": "Be brief.",
            },
        }
    )
    assert str(scenario) == (
        "Persona:\n\tCalm.\n\tPolite.\nInstructions:\n\tDomain: mock\n\tReason for call:\n\t\tFinish\n\t\ttask_1.\n"
        "\tKnown info:\n\t\tYou are u1.\n\tUnknown info:\n\t\tThe id.\n\tTask instructions:\n\t\tBe brief."
    )


def test_plain_scenario_without_persona_or_optional_info_renders_only_what_it_has():
    assert str(UserScenario(instructions="Just ask.")) == "Instructions:\n\tJust ask."
    scenario = UserScenario.model_validate(
        {"instructions": {"domain": "d", "reason_for_call": "r", "task_instructions": "t"}}
    )
    assert str(scenario) == "Instructions:\n\tDomain: d\n\tReason for call:\n\t\tr\n\tTask instructions:\n\t\tt"


def test_history_messages_default_to_the_assistant():
    assert HistoryMessage(role="tool").requestor == "assistant"


# --- the world the reward reads ----------------------------------------------------------------------------


class _SyncSpy:
    def __init__(self) -> None:
        self.calls: list[tuple[object, object]] = []

    def __call__(self, agent, user) -> None:
        self.calls.append((agent, user))


def test_a_world_without_a_user_side_refuses_it_by_name():
    world = _world()
    assert world.kit("assistant") is world.agent
    for side in ("user", "robot"):
        with pytest.raises(ValueError, match=rf"^no '{side}' side in this domain$"):
            world.kit(side)
    assert world.user_db_hash() is None


def test_both_sides_sync_after_each_call_and_function_but_not_after_a_gold_replay_call():
    agent, user, spy = _world().agent, _world().agent, _SyncSpy()
    world = World(agent, user, spy)
    assert world.kit("user") is user
    world.make_tool_call("create_task", {"user_id": "u2", "title": "x"})  # tau2 replays gold actions unsynced
    assert spy.calls == [] and "task_2" in agent.db.tasks and "task_2" not in user.db.tasks
    ok = world.call("update_task_status", DONE["arguments"])
    assert (ok.error, spy.calls) == (False, [(agent, user)])
    assert '"status": "completed"' in ok.content
    world.call("create_task", {"user_id": "u1", "title": "y"}, "user")
    assert "task_2" in user.db.tasks and len(spy.calls) == 2
    assert world.run_function("user", "assert_number_of_tasks", {"user_id": "u1", "expected_number": 2}) is True
    assert len(spy.calls) == 3
    assert world.user_db_hash() == user.db_hash() != world.db_hash() == agent.db_hash()
    World(agent, None, spy).sync()  # no user side: nothing to sync
    assert len(spy.calls) == 3


def test_a_failing_call_is_an_error_message_and_does_not_sync():
    spy = _SyncSpy()
    world = World(_world().agent, _world().agent, spy)
    bad = world.call("update_task_status", {"task_id": "nope", "status": "completed"})
    assert (bad.content, bad.error) == ("Error: Task nope not found", True) and spy.calls == []
    text = world.call("get_users", {})
    assert text.error is False and text.content.startswith('[{"user_id": "u1"')
