"""The method fixes of issue 15, each through behaviour that today's code got wrong.

- drift: no reliability floor by default; cumulative-only judges the slow belief alone
  (its decline from its own best state) and so still reviews a corrupted skill;
- symmetric admission changes one thing (no agreement gate): judges still diagnose, and
  routing follows the diagnosis as for the full method;
- one task is one unit of support for a memory, whatever levels it decided at;
- an admitted failure weighs what a success would: the object's share of the task.
"""

from __future__ import annotations

from aecg_fixtures import episode, events, make_memory
from test_aecg_memory import degrade, grow_skill

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg.drift import belief_drift, qualifies
from aecg_bench.aecg.params import AECGParams, BeliefParams, DriftParams

PRIOR = B.Beta(1.0, 1.0)


def test_the_reliability_floor_is_off_by_default():
    assert DriftParams().reliability_floor == 0.0
    assert AECGParams().drift.reliability_floor == 0.0


def corrupted(history: int, failures: int) -> B.Belief:
    belief = B.inherit(2.0, 0.0, 0.5, PRIOR, 5.0)
    for i in range(history + failures):
        belief = B.update(belief, i < history, 1.0, PRIOR, 5.0)
    return belief


def first_review(fast: bool, history: int, horizon: int = 80) -> int | None:
    params = DriftParams(reliability_floor=0.0)
    for k in range(1, horizon):
        d = belief_drift(corrupted(history, k), BeliefParams(fast=fast), params, "s1.v1")
        if qualifies(d, history + k, params):
            return k
    return None


def test_cumulative_only_reviews_a_corrupted_skill_without_a_floor_but_later_than_dual():
    # before the fix, with floor 0 the cumulative-only reference was 0 and nothing ever qualified
    cumulative, dual = first_review(False, 20), first_review(True, 20)
    print(f"failures until review after 20 successes: dual {dual}, cumulative only {cumulative}")
    assert cumulative is not None and dual is not None
    assert dual < cumulative


def test_a_healthy_skill_never_qualifies_in_either_variant():
    for fast in (True, False):
        belief = corrupted(30, 0)
        assert not qualifies(belief_drift(belief, BeliefParams(fast=fast), DriftParams(), "x"), 30, DriftParams())


def test_symmetric_admission_keeps_the_judges_diagnosis_and_routes_like_the_full_method():
    routes = {}
    for mode in ("asymmetric", "symmetric"):
        mem = make_memory({"admission": {"mode": mode}})
        sid = grow_skill(mem)
        degrade(mem, sid)  # the judges diagnose a procedure defect
        mem.maintain(1)
        bc = mem.store.badcases[mem.store.skills[sid].badcases[-1]]
        assert len(bc.judgements) == 2 and bc.failure_mode == "procedure"
        routes[mode] = [e["route"] for e in events(mem, "review")]
    assert routes["symmetric"] == routes["asymmetric"] == ["repair"]


def test_one_task_supports_a_memory_once_even_when_flat_scope_pools_its_levels():
    mem = make_memory({"scope": {"mode": "flat"}, "formation": {"dedupe_similarity": 0.5}})
    nodes = [
        ("t0", "team", (), (), "split the list in halves"),
        ("a1", "agent", ("t0",), (), "split the list in halves"),
    ]
    mem.observe(episode("one", nodes, True))
    assert [m.support for m in mem.store.memories.values()] == [1]
    assert not events(mem, "memory_supported")
    assert not mem.store.pending_promotions  # a single task never queues a promotion


def test_an_admitted_failure_weighs_the_objects_share_of_the_task_like_a_success():
    mem = make_memory()
    sid = grow_skill(mem)
    mem.observe(episode("m", [("t0", "team", (), (), "merge sort")], True, instruction="Merge sorted runs."))
    other = next(m.id for m in mem.store.memories.values() if m.consolidated_into is None)
    mem.observe(episode("ok", [("t0", "team", (), (sid, other), "split the list in halves")], True))
    mem.observe(episode("bad", [("t0", "team", (), (sid, other), "split the list in halves")], False))
    success = events(mem, "admit_success")[-1]["credit"][sid]
    failure = events(mem, "admit_failure")[-1]
    assert failure["skill"] == sid and failure["weight"] == success == 0.5


def test_a_router_skill_fixture_stores_the_task_text_it_was_recalled_against(tmp_path):
    """AgentNet's routers recall against the task text, executors against the observation; a
    fixture (what intervention and replay read) must hold the same context (issue 15, fix 2)."""
    import json

    from conftest import compose

    from aecg_bench.run import run_from_config

    final = run_from_config(
        compose(["framework=agentnet", "memory=aecg", "model=mock_aecg", "benchmark.params.size=6"], tmp_path)
    )
    assert final is not None and final["status"] == "complete"
    snap = sorted(tmp_path.rglob("snapshot-*.json"))[-1]
    memories = json.loads(snap.read_text())["state"]["memory"]["store"]["memories"]
    by_level = {m["level"]: m["fixture"]["context"] for m in memories}
    assert "Walk to the target cell" in by_level["team"] and "You are at cell" not in by_level["team"]
    assert "You are at cell" in by_level["agent"]
