"""Pins of ReasoningBank that mutation testing found unchecked (issue 17): the extraction call's settings,
what an entry stores and audits, recall's key, threshold and item fields, and item parsing at its edges."""

from __future__ import annotations

from dataclasses import dataclass, replace

import baseline_mocks as bm

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.providers import ContextLimitError
from baselines.reasoningbank import ReasoningItem, parse_items

ITEMS = "# Memory Item 1\n## Title Keep state\n## Description Track it.\n## Content Note the state."


@dataclass
class _Reply:
    text: str


class _Recorder:
    """Stands in for the LLM client: records each call, answers `reply` (or raises `fail`)."""

    def __init__(self, reply: str = ITEMS, fail: Exception | None = None) -> None:
        self.reply, self.fail, self.calls = reply, fail, []

    def complete(self, messages, **kwargs):
        self.calls.append({"system": messages[0]["content"], "user": messages[1]["content"], **kwargs})
        if self.fail is not None:
            raise self.fail
        return _Reply(self.reply)


def bank(llm=None, **params):
    services = MemoryServices(llm=llm or _Recorder(), embedder=Embedder("lexical"), audit=AuditLog(), seed=0)
    return registry.build("memory", "reasoningbank", params, services=services), services


def test_extraction_runs_at_the_papers_settings_on_the_clipped_trajectory():
    llm = _Recorder()
    memory, _ = bank(llm, max_trajectory_chars=300, max_items=2)
    ep = bm.episode(bm.SORT, "s", True, actions=tuple(f"step number {i} " * 5 for i in range(40)))
    memory.observe(ep)
    (call,) = llm.calls
    assert (call["temperature"], call["max_tokens"], call["role"]) == (0.7, 768, "memory")
    assert "at most 2* memory items" in call["system"] and "**successfully accomplished the task**" in call["system"]
    assert call["user"].startswith(f"**Query:** {bm.SORT}\n\n**Trajectory:**\n")
    assert len(call["user"]) < 300 + 200  # the trajectory is clipped to max_trajectory_chars
    default, _ = bank(llm)
    default.observe(ep)
    assert len(llm.calls[-1]["user"]) > 1000


def test_skipped_extractions_are_audited_with_their_reason_and_task():
    unparsable, services = bank(_Recorder("no items here"))
    unparsable.observe(bm.episode(bm.SORT, "s", False))
    unparsable.observe(bm.episode(bm.SORT, "n", None))
    too_long, services2 = bank(_Recorder(fail=ContextLimitError("context exceeded")))
    too_long.observe(bm.episode(bm.SORT, "c", True))
    assert unparsable.entries == {} and too_long.entries == {}
    events = [{k: v for k, v in e.items() if k not in ("t", "ts", "seq")} for e in services.audit.read()]
    assert events == [
        {"event": "skip", "purpose": "extract", "reason": "unparsable", "reply": "no items here", "task": "s"},
        {"event": "skip", "purpose": "extract", "reason": "no_label", "task": "n"},
    ]
    (limit,) = services2.audit.read()
    assert (limit["event"], limit["purpose"], limit["reason"]) == ("skip", "extract", "context_limit")


def test_an_entry_stores_its_task_label_models_and_items_and_audits_them():
    memory, services = bank()
    ep = bm.episode(bm.SORT, "s", False)
    decisions = ep.trajectory.decisions
    decisions[:] = [replace(decisions[0], model="mb"), replace(decisions[1], model="ma")]
    for _ in range(3):
        memory.observe(ep)
    assert list(memory.entries) == ["rb-0", "rb-1", "rb-2"]
    assert memory.entries["rb-2"] == {
        "id": "rb-2",
        "query": memory.stored_key(ep),
        "task_id": "s",
        "success": False,
        "origin": "induced",
        "label_source": ep.outcome.source,
        "models": ["ma", "mb"],
        "items": [{"title": "Keep state", "description": "Track it.", "content": "Note the state."}],
    }
    admit = {k: v for k, v in services.audit.read()[-1].items() if k not in ("t", "ts", "seq")}
    assert admit == {
        "event": "admit",
        "memory_id": "rb-2",
        "task": "s",
        "success": False,
        "origin": "induced",
        "label_source": ep.outcome.source,
        "titles": ["Keep state"],
    }
    assert memory.stats() == {"entries": 3.0, "items": 3.0}


def test_an_external_entry_is_a_successful_external_entry_without_task_or_models_by_default():
    memory, _ = bank()
    eid = memory.add_external("some query", [ReasoningItem("T", "D.", "C.")])
    assert memory.entries[eid] == {
        "id": eid,
        "query": "some query",
        "task_id": "",
        "success": True,
        "origin": "external",
        "label_source": "external",
        "models": [],
        "items": [{"title": "T", "description": "D.", "content": "C."}],
    }
    try:
        memory.add_external("q", [])
    except ValueError as exc:
        assert str(exc) == "add_external needs at least one item"
    else:  # pragma: no cover
        raise AssertionError("an empty external entry was accepted")


def test_state_round_trips_exactly_and_ids_continue_after_a_restore():
    memory, _ = bank()
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", False))
    state = memory.state_dict()
    assert state == {"next_id": 2, "entries": list(memory.entries.values())}
    fresh, _ = bank()
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state and fresh.entries == memory.entries
    fresh.observe(bm.episode(bm.SORT, "u", True))
    assert list(fresh.entries)[-1] == "rb-2"


def test_recalled_items_carry_the_querys_level_their_similarity_and_their_entry():
    memory, _ = bank()
    memory.observe(bm.episode(bm.SORT, "s", True))
    query = replace(bm.query(bm.SORT_SIMILAR, "q"), level="team")
    (item,) = memory.recall(query)
    assert item.level == "team" and 0.3 < item.score < 1.0
    assert item.metadata == {"entry": "rb-0", "source_task": "s", "success": True}
    strict, _ = bank(min_similarity=0.99)
    strict.load_state_dict(memory.state_dict())
    assert strict.recall(query) == []
    loose, _ = bank(min_similarity=0.1)
    loose.load_state_dict(memory.state_dict())
    assert [i.id for i in loose.recall(query)] == ["rb-0-0"]


def test_the_instruction_key_ignores_what_a_conversation_presents_when_recalling():
    memory, _ = bank(retrieval_key="instruction")
    for task_id, instruction in [
        ("cancel", "Cancel the pending order of office chairs"),
        ("exchange", "Exchange the running shoes for a larger size"),
    ]:
        ep = bm.episode(instruction, task_id, True)
        memory.observe(replace(ep, task=replace(ep.task, mode="conversation")))
    query = bm.query("Cancel the pending order", "new", context="Exchange the running shoes for a larger size")
    query = replace(query, task=replace(query.task, mode="conversation"))
    assert {i.metadata["source_task"] for i in memory.recall(query)} == {"cancel"}


def test_label_source_defers_to_the_protocol_only_when_asked():
    assert bank()[0].label_source("environment") == "llm_judge"
    assert bank(label_source="environment")[0].label_source("llm_judge") == "environment"
    assert bank(label_source="protocol")[0].label_source("environment") == "environment"


def test_parsing_drops_fences_and_a_preamble_and_reads_an_unnumbered_item():
    fenced = "```markdown\n# Memory Item 1\n## Title A\n## Content Ca.\n```\n```markdown\n# Memory Item 2\n## Title B\n## Content Cb.\n```"
    assert [(i.title, i.content) for i in parse_items(fenced)] == [("A", "Ca."), ("B", "Cb.")]
    preamble = "Title: my draft\nContent: thinking aloud.\n# Memory Item 1\n## Title Real\n## Content Real."
    assert [i.title for i in parse_items(preamble)] == ["Real"]
    bare = "## Title Alone\n## Description D.\n## Content Only one item."
    assert parse_items(bare) == [ReasoningItem("Alone", "D.", "Only one item.")]
