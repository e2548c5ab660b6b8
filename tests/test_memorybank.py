"""MemoryBank: summaries with strength, reinforcement on recall, seeded forgetting on the curve."""

from __future__ import annotations

import math

import baseline_mocks as bm

from aecg_bench import registry
from baselines.llm_calls import stable_uniform

KEEP = {"time_unit_tasks": 1e6}  # no forgetting: isolates storage and recall


def bank(**params):
    services = bm.services()
    return registry.build("memory", "memorybank", {**KEEP, **params}, services=services), services


def test_success_and_failure_are_stored_as_summaries_with_their_outcome():
    memory, services = bank()
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "f", False))
    s, f = memory.state_dict()["memories"]
    assert s["summary"].startswith("The team worked on 'Sort the list")  # echoed "Summary:" prefix dropped
    assert (s["success"], f["success"]) == (True, False)
    assert s["strength"] == f["strength"] == 1.0
    assert [e["event"] for e in services.audit.read()] == ["admit", "admit"]
    failed = memory.recall(bm.query(bm.TRANSLATE, "q"))[0]
    assert failed.id == f["id"] and "failed" in failed.text and "after finish" in failed.text


def test_a_similar_task_recalls_the_related_memory_first():
    memory, _ = bank(top_k=2)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    assert [i.id for i in memory.recall(bm.query(bm.SORT_SIMILAR, "q"))] == ["mb-0", "mb-1"]
    assert [i.id for i in memory.recall(bm.query(bm.TRANSLATE, "q"))] == ["mb-1", "mb-0"]
    assert len(memory.recall(bm.query(bm.SORT, "q"))) == 2
    memory_one, _ = bank(top_k=1)
    memory_one.observe(bm.episode(bm.SORT, "s", True))
    assert len(memory_one.recall(bm.query(bm.TRANSLATE, "q"))) == 1


def test_recall_has_no_side_effect_and_the_observed_recall_reinforces():
    memory, services = bank()
    memory.observe(bm.episode(bm.SORT, "s", True))
    before = memory.state_dict()
    recalled = tuple(i.id for i in memory.recall(bm.query(bm.SORT_SIMILAR, "q")))
    assert memory.state_dict() == before and recalled == ("mb-0",)
    memory.observe(bm.episode(bm.SORT_SIMILAR, "q", True, recalled=recalled))
    m0 = memory.state_dict()["memories"][0]
    assert m0["strength"] == 2.0 and m0["last_recall"] == memory.clock == 2
    assert any(e["event"] == "reinforce" and e["memory_id"] == "mb-0" for e in services.audit.read())


def test_retention_follows_exp_minus_t_over_s_and_stronger_memories_last_longer():
    memory, _ = bank(time_unit_tasks=5.0)
    memory.clock = 10
    weak = {"last_recall": 0, "strength": 1.0}
    strong = {"last_recall": 0, "strength": 3.0}
    assert math.isclose(memory.retention(weak), math.exp(-2.0))
    assert math.isclose(memory.retention(strong), math.exp(-2.0 / 3.0))
    # the original's exp(-t / 5 * S) would make the stronger memory fade faster
    assert memory.retention(strong) > memory.retention(weak)


def test_forgetting_is_seeded_and_matches_the_per_memory_draw():
    memory, services = bank(time_unit_tasks=1.0)
    for i in range(6):
        memory.observe(bm.episode(f"{bm.SORT} variant {i}", f"t{i}", True))
    forgotten = {e["memory_id"] for e in services.audit.read() if e["event"] == "forget"}
    assert forgotten  # with t in single tasks, old memories go quickly
    for e in services.audit.read():
        if e["event"] == "forget":
            assert e["retention"] < stable_uniform(services.seed, "memorybank", e["memory_id"])
    kept = {m["id"] for m in memory.state_dict()["memories"]}
    assert kept.isdisjoint(forgotten) and "mb-5" in kept  # the newest memory has R = 1


def test_resampled_forgetting_draws_per_pass():
    memory, services = bank(time_unit_tasks=2.0, forgetting="resample")
    for i in range(8):
        memory.observe(bm.episode(f"{bm.SORT} variant {i}", f"t{i}", True))
    for e in services.audit.read():
        if e["event"] == "forget":
            assert e["retention"] < stable_uniform(services.seed, "memorybank", e["memory_id"], e["clock"])


def test_strength_cap_reproduces_siliconfriend_levels():
    memory, _ = bank(max_strength=3.0)
    memory.observe(bm.episode(bm.SORT, "s", True))
    for i in range(4):
        memory.observe(bm.episode(bm.SORT, f"r{i}", True, recalled=("mb-0",)))
    assert memory.state_dict()["memories"][0]["strength"] == 3.0
