"""MacNet-M: final solutions and critiques stored across tasks and recalled as upstream artifacts."""

from __future__ import annotations

import baseline_mocks as bm

from aecg_bench import registry
from aecg_bench.types import Action, Observation, Step, Trajectory
from baselines.trajectory_text import final_solution


def memory_with(**params):
    services = bm.services()
    return registry.build("memory", "macnet_m", params, services=services), services


def test_the_final_solution_and_last_critique_are_stored_with_the_outcome():
    memory, services = memory_with()
    memory.observe(bm.episode(bm.SORT, "s", True, actions=("sort", "answer"), critic="Check stability."))
    memory.observe(bm.episode(bm.TRANSLATE, "f", False, actions=("guess",)))
    s, f = memory.state_dict()["solutions"]
    assert s["solution"] == "1. sort\n2. answer" and s["critique"] == "Check stability." and s["success"] is True
    assert f["solution"] == "1. guess" and f["critique"] == "" and f["success"] is False
    assert [e["event"] for e in services.audit.read()] == ["admit", "admit"]


def test_answers_are_the_solution_when_the_task_is_answered_once():
    traj = Trajectory(task_id="a", framework="unit")
    traj.steps.append(Step(0, Action(kind="answer", text="def f(x): return sorted(x)"), Observation("ok")))
    assert final_solution(traj) == "def f(x): return sorted(x)"


def test_similar_tasks_recall_successful_solutions_and_failures_only_on_request():
    memory, _ = memory_with()
    memory.observe(bm.episode(bm.SORT, "s", True, actions=("sort",)))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True, actions=("translate",)))
    memory.observe(bm.episode(bm.SORT + " again", "f", False, actions=("shuffle",)))
    items = memory.recall(bm.query(bm.SORT_SIMILAR, "q"))
    assert [i.id for i in items] == ["mn-0", "mn-1"] and items[0].kind == "solution"
    assert "1. sort" in items[0].text
    assert memory.recall(bm.query(bm.TRANSLATE, "q"))[0].id == "mn-1"
    with_failures, _ = memory_with(recall_failures=True)
    with_failures.load_state_dict(memory.state_dict())
    top = with_failures.recall(bm.query(bm.SORT + " again", "q"))[0]
    assert top.id == "mn-2" and "FAILED" in top.text


def test_a_task_never_recalls_its_own_solution():
    memory, _ = memory_with()
    memory.observe(bm.episode(bm.SORT, "same", True))
    assert memory.recall(bm.query(bm.SORT, "same")) == []
    assert [i.id for i in memory.recall(bm.query(bm.SORT, "other"))] == ["mn-0"]


def test_an_empty_trajectory_stores_nothing():
    memory, services = memory_with()
    memory.observe(bm.episode(bm.SORT, "e", False, actions=()))
    assert memory.solutions == {} and services.audit.read()[-1]["reason"] == "no_solution"
