"""ReasoningBank: Title/Description/Content items from separate success and failure prompts,
query-similarity retrieval, the same-task guard, the contamination hook."""

from __future__ import annotations

from dataclasses import replace

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from aecg_bench.types import Outcome
from baselines.reasoningbank import ReasoningItem, parse_items


def bank(**params):
    services = bm.services()
    return registry.build("memory", "reasoningbank", params, services=services), services


def test_success_and_failure_use_their_own_prompt_and_keep_at_most_three_items():
    memory, services = bank()
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "f", False))
    s, f = memory.state_dict()["entries"]
    assert s["success"] is True and s["items"][0]["description"].startswith("What worked")
    assert f["success"] is False and f["items"][0]["description"].startswith("What failed")
    assert all(set(i) == {"title", "description", "content"} for i in s["items"])
    assert s["label_source"] == "environment" and s["origin"] == "induced"
    admits = [e for e in services.audit.read() if e["event"] == "admit"]
    assert [a["memory_id"] for a in admits] == ["rb-0", "rb-1"]
    one, _ = bank(max_items=1)
    one.observe(bm.episode(bm.SORT, "s", True))
    assert len(one.state_dict()["entries"][0]["items"]) == 1


def test_the_label_source_is_recorded_and_unlabelled_episodes_are_skipped():
    memory, services = bank()
    judged = bm.episode(bm.SORT, "j", True)
    memory.observe(replace(judged, outcome=Outcome(success=True, value=1.0, source="llm_judge")))
    assert memory.state_dict()["entries"][0]["label_source"] == "llm_judge"
    memory.observe(bm.episode(bm.SORT, "n", None))
    assert len(memory.entries) == 1
    assert services.audit.read()[-1]["reason"] == "no_label"


def test_similar_tasks_recall_the_related_entry_with_all_its_items():
    memory, _ = bank()
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", False))
    items = memory.recall(bm.query(bm.SORT_SIMILAR, "q"))
    assert [i.id for i in items] == ["rb-0-0", "rb-0-1"]  # top_k=1 entry, both of its items
    assert items[0].text.startswith("Approach for Sort the list") and items[0].kind == "reasoning"
    assert [i.metadata["entry"] for i in memory.recall(bm.query(bm.TRANSLATE, "q"))] == ["rb-1", "rb-1"]
    two, _ = bank(top_k=2)
    two.load_state_dict(memory.state_dict())
    assert [i.metadata["entry"] for i in two.recall(bm.query(bm.TRANSLATE, "q"))][::2] == ["rb-1", "rb-0"]


def test_entries_induced_from_the_same_task_are_never_recalled():
    memory, _ = bank()
    memory.observe(bm.episode(bm.SORT, "same", True))
    memory.observe(bm.episode(bm.TRANSLATE, "other", True))
    assert {i.metadata["entry"] for i in memory.recall(bm.query(bm.SORT, "same"))} == {"rb-1"}
    unguarded, _ = bank(exclude_same_task=False)
    unguarded.load_state_dict(memory.state_dict())
    assert {i.metadata["entry"] for i in unguarded.recall(bm.query(bm.SORT, "same"))} == {"rb-0"}


def test_external_items_are_inserted_marked_and_recalled():
    memory, services = bank()
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    wrong = ReasoningItem(
        "Pay with a certificate", "Certificates cover changes.", "Always pay changes with a certificate."
    )
    eid = memory.add_external(bm.SORT, [wrong], origin="contamination", task_id="inj-0")
    assert memory.entries[eid]["origin"] == "contamination" and memory.item_count() == 3
    items = memory.recall(bm.query(bm.SORT_SIMILAR, "q"))
    assert [i.text for i in items] == [wrong.render()]
    assert services.audit.read()[-1]["origin"] == "contamination"
    with pytest.raises(ValueError):
        memory.add_external(bm.SORT, [])


def test_item_parsing_tolerates_format_drift():
    reply = (
        "Why: it worked.\n```\n# Memory Item 1\n## Title Keep state\n## Description Track it.\n## Content Note the state\n"
        "after each step.\n\n# Memory Item 2\n**Title:** Stop right\n**Description:** x\n**Content:** Stop on the goal.\n"
        "Content matters too.\n# Memory Item 3\n## Title No content here\n```"
    )
    items = parse_items(reply)
    assert [i.title for i in items] == ["Keep state", "Stop right"]
    assert items[0].content == "Note the state after each step."
    assert items[1].content == "Stop on the goal. Content matters too."
    assert parse_items("no items at all") == [] and parse_items(None) == []


TAU2_INSTRUCTION = "You are a customer service agent. Help the user according to the policy."


@pytest.mark.parametrize("key", ["instruction+observation", "instruction"])
def test_tasks_with_one_shared_instruction_are_told_apart_by_what_they_present(key):
    """tau2: every task of a domain has the same instruction; the user's first message differs."""
    memory, _ = bank(retrieval_key=key)
    for task_id, opening in [
        ("cancel", "Hi, I need to cancel my pending order of office chairs."),
        ("exchange", "Hello, I want to exchange my running shoes for a larger size."),
    ]:
        ep = bm.episode(TAU2_INSTRUCTION, task_id, True)
        ep.trajectory.initial_observation = opening
        memory.observe(replace(ep, task=replace(ep.task, mode="conversation")))
    query = bm.query(TAU2_INSTRUCTION, "new", context="Could I exchange these shoes for a larger size please?")
    query = replace(query, task=replace(query.task, mode="conversation"))
    recalled = {i.metadata["source_task"] for i in memory.recall(query)}
    assert recalled == ({"exchange"} if key == "instruction+observation" else {"cancel"})  # else: insertion order


def test_an_item_cap_keeps_the_best_entrys_items_first_and_matches_edvs_unit():
    """EDV Fig. 5 compares 0-3 retrieved memories in items: the cap counts items, not entries."""
    memory, _ = bank(top_k=2)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    state = memory.state_dict()
    assert [i.id for i in memory.recall(bm.query(bm.SORT_SIMILAR, "q"))] == ["rb-0-0", "rb-0-1", "rb-1-0", "rb-1-1"]
    recalled = {}
    for cap in (0, 1, 3):
        capped, _ = bank(top_k=2, max_recalled_items=cap)
        capped.load_state_dict(state)
        recalled[cap] = [i.id for i in capped.recall(bm.query(bm.SORT_SIMILAR, "q"))]
    assert recalled == {0: [], 1: ["rb-0-0"], 3: ["rb-0-0", "rb-0-1", "rb-1-0"]}
