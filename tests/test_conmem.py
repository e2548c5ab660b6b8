"""ConMem: typed cards with provenance and quality, weighted admission, per-role rendering within
a token budget, the card graph, and the periodic merge of near-duplicates."""

from __future__ import annotations

import baseline_mocks as bm

from aecg_bench import registry
from aecg_bench.llm import UsageMeter
from baselines.conmem.cards import reliability, utility
from baselines.conmem.render import normalize_role


def conmem(**params):
    services = bm.services()
    return registry.build("memory", "conmem", params, services=services), services


def test_a_success_becomes_an_admitted_typed_card_with_provenance_and_quality():
    memory, services = conmem()
    memory.observe(bm.episode(bm.SORT, "s", True))
    (card,) = memory.state_dict()["cards"]
    assert set(card["sections"]) == {"state", "plan", "exec", "eval"} and card["sections"]["exec"] == ""
    assert card["provenance"]["outcome"] == "success" and card["provenance"]["source_task_id"] == "s"
    assert card["provenance"]["reflection_quality"] == 1.0  # no reflection for successes
    q = card["quality"]
    assert set(q) == {"reliability", "novelty", "relevance", "utility"} and q["novelty"] == 1.0
    expected = 0.30 * q["reliability"] + 0.25 * q["novelty"] + 0.15 * q["relevance"] + 0.30 * q["utility"]
    assert abs(card["admission_score"] - expected) < 1e-5 and card["admission_score"] >= 0.5
    admit = next(e for e in services.audit.read() if e["event"] == "admit")
    assert admit["memory_id"] == card["id"] == "cm-0"


def test_a_failure_is_reflected_on_first_and_becomes_a_failure_card():
    memory, _ = conmem()
    meter = UsageMeter()
    memory.services.llm = memory.services.llm.with_context(meter=meter)
    memory.observe(bm.episode(bm.TRANSLATE, "f", False))
    assert meter.by_role()["memory"]["calls"] == 2  # reflection, then extraction
    (card,) = memory.state_dict()["cards"]
    assert card["provenance"]["outcome"] == "failure"
    assert 0.8 < card["provenance"]["reflection_quality"] <= 1.0
    partial, _ = conmem()
    partial.observe(bm.episode(bm.TRANSLATE, "p", False, value=0.5))
    assert partial.state_dict()["cards"][0]["provenance"]["outcome"] == "partial"


def test_admission_rejects_below_the_threshold_and_uninformative_failures_are_skipped():
    memory, services = conmem(admission_threshold=0.99)
    memory.observe(bm.episode(bm.SORT, "s", True))
    assert memory.store.cards == {}
    reject = next(e for e in services.audit.read() if e["event"] == "reject")
    assert reject["score"] < 0.99
    quiet, quiet_services = conmem()
    quiet.observe(bm.episode(bm.SORT, "e", False, actions=()))
    assert quiet.store.cards == {} and quiet_services.audit.read()[-1]["reason"] == "uninformative_failure"


def test_reliability_and_utility_follow_conmem_formulas():
    card = {
        "task_description": "t",
        "summary": "short",
        "sections": {"state": "", "plan": "do the thing", "exec": "", "eval": ""},
        "triggers": [],
        "evidence": "",
        "provenance": {"outcome": "success"},
    }
    # consistency 0.30 + 0.35 * 0.25 + 0.35 * 0.5 (no adjacent pair) ; evidence missing -> 0.2
    assert abs(reliability(card) - (0.6 * (0.30 + 0.0875 + 0.175) + 0.4 * 0.2)) < 1e-9
    # plan/success 0.8 + 0.1 * coverage ; short text halves density
    assert abs(utility(card) - (0.7 * 0.825 + 0.3 * 0.5)) < 1e-9


def test_similar_tasks_trigger_their_card_and_unrelated_tasks_trigger_nothing():
    memory, _ = conmem()
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    assert [i.id for i in memory.recall(bm.query(bm.SORT_SIMILAR, "q"))] == ["cm-0"]
    assert [i.id for i in memory.recall(bm.query(bm.TRANSLATE, "q"))] == ["cm-1"]
    assert memory.recall(bm.query("Water the garden plants at dawn", "q")) == []


def test_rendering_depends_on_the_agent_role_and_fits_the_token_budget():
    memory, _ = conmem()
    memory.observe(bm.episode(bm.SORT, "s", True))
    executor = memory.recall(bm.query(bm.SORT_SIMILAR, "q", role="actor"))[0].text.splitlines()
    planner = memory.recall(bm.query(bm.SORT_SIMILAR, "q", role="planner"))[0].text.splitlines()
    assert normalize_role("actor") == "executor" and normalize_role("planner") == "planner"
    do_exec = [line for line in executor if line.startswith("Do:")]
    do_plan = [line for line in planner if line.startswith("Do:")]
    assert do_exec[0].startswith("Do: For Sort") and do_plan[0].startswith("Do: Tasks like")  # plan vs state first
    assert any(line.startswith("Check:") for line in executor)
    small, _ = conmem(token_budget=140)
    small.load_state_dict(memory.state_dict())
    compact = small.recall(bm.query(bm.SORT_SIMILAR, "q"))[0].text
    assert (
        len(compact) < len("\n".join(executor)) and len([x for x in compact.splitlines() if x.startswith("Do:")]) == 1
    )
    tiny, _ = conmem(token_budget=50)
    tiny.load_state_dict(memory.state_dict())
    assert tiny.recall(bm.query(bm.SORT_SIMILAR, "q")) == []


def test_similar_cards_are_linked_and_coordination_resolves_conflicts_and_duplicates():
    memory, services = conmem()
    memory.observe(bm.episode(bm.SORT, "a", True))
    memory.observe(bm.episode(bm.SORT_SIMILAR, "b", False))
    edges = memory.state_dict()["edges"]
    # both cards speak of failure in their evaluation and overlap: ConMem's heuristic calls that a conflict
    assert {(e["src"], e["dst"], e["relation"]) for e in edges} == {
        ("cm-1", "cm-0", "conflicts"),
        ("cm-0", "cm-1", "conflicts"),
    }
    assert any(e["event"] == "link" for e in services.audit.read())
    scores = {c["id"]: c["admission_score"] for c in memory.state_dict()["cards"]}
    best = max(scores, key=scores.get)
    items = memory.recall(bm.query(bm.SORT, "q"))
    assert [i.id for i in items] == [best] and "Warning: Selected over a conflicting card" in items[0].text
    twins, _ = conmem()
    twins.observe(bm.episode(bm.SORT, "a", True))
    twins.observe(bm.episode(bm.SORT, "b", True))
    (view,) = twins.recall(bm.query(bm.SORT, "q"))  # cosine >= 0.85: one merged view, stored cards untouched
    assert view.metadata["merged_from"] == ["cm-0", "cm-1"] and len(twins.store.cards) == 2


def test_recalled_cards_record_their_use_when_the_episode_is_observed():
    memory, _ = conmem()
    memory.observe(bm.episode(bm.SORT, "s", True))
    recalled = tuple(i.id for i in memory.recall(bm.query(bm.SORT_SIMILAR, "q")))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True, recalled=recalled))
    card = memory.store.cards["cm-0"]
    assert card["access_count"] == 1 and card["last_access_round"] == 2


def test_maintain_merges_near_duplicates_every_k_committed_tasks():
    memory, services = conmem(merge_every=2)
    memory.observe(bm.episode(bm.SORT, "a", True))
    memory.maintain(1)
    assert len(memory.store.cards) == 1  # one committed task: not due
    memory.observe(bm.episode(bm.SORT, "b", True))
    memory.maintain(2)
    (card,) = memory.store.cards.values()
    assert card["summary"] == "Merged approach." and card["sections"]["plan"].startswith("Read the observation")
    merge = next(e for e in services.audit.read() if e["event"] == "merge")
    assert merge["memory_id"] == card["id"] and memory.store.edges == {}
    assert [i.id for i in memory.recall(bm.query(bm.SORT, "q"))] == [card["id"]]


def test_mmr_matches_the_plain_greedy_definition():
    import numpy as np

    from baselines.conmem.retrieval import _mmr

    memory, _ = conmem()
    texts = [bm.SORT, bm.SORT_SIMILAR, bm.TRANSLATE, bm.SORT + " fast", "Reverse the words", bm.TRANSLATE + " now"]
    for i, text in enumerate(texts):
        memory.observe(bm.episode(text, f"t{i}", True))
    index = memory.store.index
    rows = np.array([r for r, cid in enumerate(index.row_ids) if cid is not None])
    rng = np.random.default_rng(0)
    scores = np.sort(rng.uniform(0.4, 0.9, rows.size))[::-1]
    lam = 0.75

    def naive(k):
        chosen = [0]
        while len(chosen) < min(k, rows.size):
            values = []
            for i in range(rows.size):
                red = max(max(0.0, float(index.matrix_row(rows[i]) @ index.matrix_row(rows[c]))) for c in chosen)
                values.append(-np.inf if i in chosen else lam * scores[i] - (1 - lam) * red)
            chosen.append(int(np.argmax(values)))
        return [int(rows[i]) for i in chosen]

    for k in (1, 3, len(rows)):
        assert _mmr(memory.store, rows, scores, k, lam) == naive(k)
