"""ScienceWorld subgoal progress, grounding and native-score bookkeeping, pinned step by step (issue 17).

Drives `ScienceWorldEnvironment` with the scripted simulator of tests/test_scienceworld.py (no JVM), and
checks every metric after every step, including the edges its tests leave free: a native score of exactly 0,
repeated `check valid actions`, an empty command, a second reset, several subgoals matched by one reply.
"""

from __future__ import annotations

import pytest
from test_scienceworld import OnePool, ScriptedSim, cmd, make_env

from aecg_bench.benchmarks.scienceworld.env import CHECK_REPLY_PREFIX
from aecg_bench.benchmarks.scienceworld.subgoals import SubgoalTracker, compile_subgoals

REPLIES = {
    "go to outside": ("You move to the outside.", 0, False),
    "look around": ("This outside area has a crocodile egg.", 10, False),
    "focus on crocodile egg": ("You focus on the crocodile egg.", 100, True),
}


def metrics(env) -> dict[str, float]:
    return env.score().metrics


def test_every_metric_after_every_step():
    sim = ScriptedSim(REPLIES, valid=("go to outside", "focus on crocodile egg"))
    env = make_env(sim)
    first = env.reset()
    assert first.info == {"native_score": 0}
    assert metrics(env) == {
        "progress_rate": 0.0,
        "subgoals_matched": 0.0,
        "subgoals_total": 2.0,
        "native_score": 0.0,
        "native_completed": 0.0,
        "native_failed": 0.0,
        "grounding_accuracy": 0.0,  # no steps yet
        "steps": 0.0,
        "check_valid_actions": 0.0,
    }
    obs = env.step(cmd("go to outside"))  # native score 0 is no failure
    assert (obs.reward, obs.done, obs.valid, obs.info) == (0.5, False, True, {"native_score": 0})
    assert metrics(env)["native_failed"] == 0.0 and metrics(env)["subgoals_matched"] == 1.0
    env.step(cmd("check valid actions"))
    check = env.step(cmd("check valid actions"))
    assert check.info == {"native_score": 0} and check.reward == 0.0
    obs = env.step(cmd("look around"))  # not a valid action-object combination here: ungrounded
    assert obs.info == {"native_score": 10} and obs.reward == 0.0
    m = metrics(env)
    assert m["check_valid_actions"] == 2.0 and m["steps"] == 4.0 and m["grounding_accuracy"] == 0.75
    assert env.step(cmd("check valid actions")).info == {"native_score": 10}
    last = env.step(cmd("focus on crocodile egg"))
    assert (last.reward, last.done, last.info) == (0.5, True, {"native_score": 100})
    assert env.score().success and env.score().value == 1.0
    m = metrics(env)
    assert (m["progress_rate"], m["subgoals_matched"], m["subgoals_total"]) == (1.0, 2.0, 2.0)
    assert (m["native_score"], m["native_completed"], m["native_failed"]) == (100.0, 1.0, 0.0)
    assert m["grounding_accuracy"] == pytest.approx(5 / 6) and m["check_valid_actions"] == 3.0


def test_one_reply_can_match_several_subgoals():
    sim = ScriptedSim({"go to outside": ("You move to the outside. You focus on the crocodile egg.", 0, False)})
    env = make_env(sim)
    env.reset()
    obs = env.step(cmd("go to outside"))
    assert obs.reward == 1.0 and obs.done
    tracker = SubgoalTracker(["a", "b", "c"])
    assert tracker.observe("a b") == 2 and tracker.observe("a b c") == 1 and tracker.observe("abc") == 0
    assert (tracker.matched, tracker.total, tracker.complete) == (3, 3, True)


def test_empty_command_costs_a_step_and_is_invalid():
    sim = ScriptedSim(REPLIES)
    env = make_env(sim)
    env.reset()
    obs = env.step(cmd("   "))
    assert (obs.text, obs.valid, obs.done, obs.reward) == ("Empty action: reply with one command.", False, False, 0.0)
    assert sim.stepped == [] and metrics(env)["steps"] == 1.0 and metrics(env)["grounding_accuracy"] == 0.0


def test_native_failure_is_sticky_and_reset_clears_every_counter():
    sim = ScriptedSim(
        {"focus on chair": ("You focus on the chair.", -100, True), "go to outside": REPLIES["go to outside"]},
        valid=("focus on chair",),
    )
    env = make_env(sim)
    env.reset()
    env.step(cmd("focus on chair"))
    env.step(cmd("go to outside"))  # a later score of 0 does not clear the failure
    m = metrics(env)
    assert (m["native_failed"], m["native_score"], m["native_completed"]) == (1.0, 0.0, 0.0)
    assert m["progress_rate"] == 0.5
    env.reset()
    assert metrics(env) == {
        "progress_rate": 0.0,
        "subgoals_matched": 0.0,
        "subgoals_total": 2.0,
        "native_score": 0.0,
        "native_completed": 0.0,
        "native_failed": 0.0,
        "grounding_accuracy": 0.0,
        "steps": 0.0,
        "check_valid_actions": 0.0,
    }
    assert len(sim.loads) == 2  # the variation is loaded again


def test_step_after_close_or_before_reset_is_refused_with_its_message():
    sim = ScriptedSim(REPLIES)
    pool = OnePool(sim)
    env = make_env(sim, pool=pool)
    with pytest.raises(RuntimeError) as err:
        env.step(cmd("look around"))
    assert str(err.value) == "ScienceWorldEnvironment.step() before a successful reset()"
    env.reset()
    env.close()
    with pytest.raises(RuntimeError):
        env.step(cmd("look around"))
    env.reset()  # leases the simulator again
    assert env.simulator is sim and env.step(cmd("go to outside")).valid


class FailingLoad(ScriptedSim):
    def load(self, task, variation, simplifications, gold_path=False):
        raise RuntimeError("the simulator could not load the task")


def test_a_failed_load_leaves_the_environment_unusable_until_a_good_reset():
    sim = FailingLoad(REPLIES)
    env = make_env(sim)
    with pytest.raises(RuntimeError, match="could not load"):
        env.reset()
    assert env.simulator is sim
    with pytest.raises(RuntimeError, match="before a successful reset"):
        env.step(cmd("go to outside"))


def test_check_reply_lists_templates_without_reset():
    sim = ScriptedSim(REPLIES)
    env = make_env(sim)
    env.reset()
    text = env.step(cmd("CHECK   valid actions")).text
    assert text == CHECK_REPLY_PREFIX + "look around, focus on OBJ, wait1, check valid actions"


def test_compile_subgoals_messages():
    with pytest.raises(ValueError) as err:
        compile_subgoals([])
    assert str(err.value) == "a task needs at least one subgoal"
    with pytest.raises(ValueError) as err:
        compile_subgoals(["ok", ""])
    assert str(err.value) == "subgoal 1 is not a non-empty string: ''"
    with pytest.raises(ValueError) as err:
        compile_subgoals(["ok", 3])  # type: ignore[list-item]
    assert str(err.value) == "subgoal 1 is not a non-empty string: 3"
    with pytest.raises(ValueError) as err:
        compile_subgoals(["(open"])
    assert str(err.value).startswith("subgoal 0 '(open' is not a valid regular expression: ")
    assert [p.pattern for p in compile_subgoals(["a+", "b"])] == ["a+", "b"]
