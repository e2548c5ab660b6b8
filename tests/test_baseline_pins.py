"""Pins of MemoryBank and MacNet-M that mutation testing found unchecked (issue 17): what each stores,
recalls and audits, MemoryBank's summary call and forgetting curve, MacNet-M's critique and key."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import baseline_mocks as bm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.providers import ContextLimitError
from aecg_bench.types import DecisionNode
from baselines.g_memory import prompts as GP
from baselines.g_memory.insights import InsightBook, Operation, parse_operations
from baselines.g_memory.method import _chunks
from baselines.g_memory.task_graph import TaskGraph
from baselines.llm_calls import stable_uniform
from baselines.macnet_m import last_critique
from baselines.memorybank import SUMMARY_SYSTEM, _clean_summary
from baselines.trajectory_text import clip, final_solution, one_line, render_trajectory


def _plain(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "seq"} for e in events]


@dataclass
class _Reply:
    text: str


class _Recorder:
    """Stands in for the LLM client: records each call, answers `reply` (or raises `fail`)."""

    def __init__(self, reply: str = "Summary: the team sorted the numbers and checked the order.", fail=None):
        self.reply, self.fail, self.calls = reply, fail, []

    def complete(self, messages, **kwargs):
        self.calls.append({"system": messages[0]["content"], "user": messages[1]["content"], **kwargs})
        if self.fail is not None:
            raise self.fail
        return _Reply(self.reply)


def _services(llm=None, seed: int = 0) -> MemoryServices:
    return MemoryServices(llm=llm or _Recorder(), embedder=Embedder("lexical"), audit=AuditLog(), seed=seed)


# -- MemoryBank -----------------------------------------------------------------------------------

KEEP = {"time_unit_tasks": 1e6}


def _bank(llm=None, seed: int = 0, **params):
    services = _services(llm, seed)
    return registry.build("memory", "memorybank", params, services=services), services


def test_the_summary_call_runs_at_its_settings_on_the_clipped_trajectory():
    llm = _Recorder()
    memory, _ = _bank(llm, max_trajectory_chars=250, **KEEP)
    ep = bm.episode(bm.SORT, "s", True, actions=tuple(f"step number {i} " * 5 for i in range(40)))
    memory.observe(ep)
    (call,) = llm.calls
    assert (call["system"], call["temperature"], call["max_tokens"], call["role"]) == (
        SUMMARY_SYSTEM,
        0.1,
        256,
        "memory",
    )
    trajectory = render_trajectory(ep.trajectory, max_chars=250)
    assert call["user"].endswith(f"Task: {bm.SORT}\n\nTrajectory:\n{trajectory}")
    custom, _ = _bank(llm, summary_temperature=0.6, summary_max_tokens=99, **KEEP)
    custom.observe(ep)
    assert (llm.calls[-1]["temperature"], llm.calls[-1]["max_tokens"]) == (0.6, 99)


def test_summaries_lose_echoed_prefixes_and_too_short_ones_are_dropped():
    assert _clean_summary("Summary: Description: the team sorted it.") == "the team sorted it."
    assert _clean_summary("Then you would write:   the team sorted it.") == "the team sorted it."
    assert _clean_summary("  the team\n sorted   it. ") == "the team sorted it."
    assert _clean_summary("summary: 123456789") == "" and _clean_summary("summary: 1234567890") == "1234567890"
    assert _clean_summary(None) == "" and _clean_summary("") == ""
    long = _clean_summary("word " * 400)
    assert len(long) <= 1200 and "\n...\n" in long and long.startswith("word")


def test_a_memory_is_stored_with_its_summary_outcome_excerpt_and_clock():
    memory, services = _bank(excerpt_chars=30, **KEEP)
    ep = bm.episode(bm.SORT, "s", False, actions=("look", "finish"))
    memory.observe(ep)
    tail = render_trajectory(ep.trajectory, max_chars=10**9, with_agents=False)
    assert memory.memories == {
        "mb-0": {
            "id": "mb-0",
            "task_id": "s",
            "instruction": bm.SORT,
            "summary": "the team sorted the numbers and checked the order.",
            "success": False,
            "excerpt": tail[-30:].lstrip(),
            "strength": 1.0,
            "created": 1,
            "last_recall": 1,
        }
    }
    assert _plain(services.audit.read()) == [
        {
            "event": "admit",
            "memory_id": "mb-0",
            "task": "s",
            "success": False,
            "summary": "the team sorted the numbers and checked the order.",
        }
    ]
    assert memory.stats() == {"memories": 1.0}
    none, _ = _bank(excerpt_chars=0, **KEEP)
    none.observe(ep)
    assert none.memories["mb-0"]["excerpt"] == ""


def test_recalled_memories_say_how_the_task_ended_and_carry_their_strength():
    memory, _ = _bank(top_k=3, initial_strength=2.0, **KEEP)
    for task_id, success in [("s", True), ("f", False), ("u", None)]:
        memory.observe(bm.episode(bm.SORT, task_id, success))
    query = replace(bm.query(bm.SORT, "q"), level="team")
    items = {i.metadata["source_task"]: i for i in memory.recall(query)}
    summary = "the team sorted the numbers and checked the order."
    for task_id, word in [("s", "succeeded"), ("f", "failed"), ("u", "ended (outcome unknown)")]:
        m = next(m for m in memory.memories.values() if m["task_id"] == task_id)
        item = items[task_id]
        assert (
            item.text
            == f"An earlier task ({bm.SORT}) {word}. What happened: {summary}\nEnd of its trajectory:\n{m['excerpt']}"
        )
        assert (item.id, item.level, item.kind) == (m["id"], "team", "episode")
        assert item.metadata == {"source_task": task_id, "success": m["success"], "strength": 2.0}
        assert 0.0 < item.score <= 1.0 + 1e-6
    short, _ = _bank(excerpt_chars=0, **KEEP)
    short.observe(bm.episode(bm.SORT, "s", True))
    assert (
        short.recall(bm.query(bm.SORT, "q"))[0].text
        == f"An earlier task ({bm.SORT}) succeeded. What happened: {summary}"
    )


def test_an_unusable_summary_is_audited_and_time_still_passes():
    memory, services = _bank(_Recorder("ok"), **KEEP)
    memory.observe(bm.episode(bm.SORT, "s", True))
    assert memory.memories == {} and memory.clock == 1
    assert _plain(services.audit.read()) == [
        {"event": "skip", "purpose": "summary", "reason": "unparsable", "reply": "ok", "task": "s"}
    ]
    limited, services2 = _bank(_Recorder(fail=ContextLimitError("too long")), **KEEP)
    limited.observe(bm.episode(bm.SORT, "s", True))
    assert [(e["purpose"], e["reason"]) for e in services2.audit.read()] == [("summary", "context_limit")]


def test_reinforcement_adds_the_increment_resets_the_clock_and_ignores_unknown_ids():
    memory, services = _bank(strength_increment=0.5, **KEEP)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    memory.observe(bm.episode(bm.SORT, "r", True, recalled=("mb-0", "mb-99")))
    m0, m1 = memory.memories["mb-0"], memory.memories["mb-1"]
    assert (m0["strength"], m0["last_recall"], m1["strength"], m1["last_recall"]) == (1.5, 3, 1.0, 2)
    reinforce = [e for e in _plain(services.audit.read()) if e["event"] == "reinforce"]
    assert reinforce == [{"event": "reinforce", "memory_id": "mb-0", "task": "r", "strength": 1.5}]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 50), st.sampled_from(["threshold", "resample"]), st.floats(0.5, 4.0))
def test_a_memory_is_forgotten_exactly_when_its_retention_falls_below_its_draw(seed, forgetting, unit):
    memory, services = _bank(seed=seed, time_unit_tasks=unit, forgetting=forgetting)
    alive: dict[str, dict] = {}
    for i in range(6):
        memory.observe(bm.episode(f"{bm.SORT} variant {i}", f"t{i}", True))
        clock = memory.clock
        alive[f"mb-{i}"] = {"last_recall": clock, "strength": 1.0}
        expected_gone = []
        for mid, m in alive.items():
            r = math.exp(-((clock - m["last_recall"]) / unit) / m["strength"])
            u = stable_uniform(seed, "memorybank", mid, *([clock] if forgetting == "resample" else []))
            if r < u:
                expected_gone.append((mid, round(r, 6)))
        for mid, _ in expected_gone:
            del alive[mid]
        assert set(memory.memories) == set(alive)
        forgets = [e for e in _plain(services.audit.read()) if e["event"] == "forget" and e["clock"] == clock]
        assert [(e["memory_id"], e["retention"], e["strength"]) for e in forgets] == [
            (mid, r, 1.0) for mid, r in expected_gone
        ]
    recalled = {i.id for i in memory.recall(bm.query(bm.SORT, "q"))}
    assert recalled <= set(alive)


def test_state_round_trips_and_ids_and_clock_continue():
    memory, _ = _bank(**KEEP)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.TRANSLATE, "t", True))
    state = memory.state_dict()
    assert state == {"clock": 2, "next_id": 2, "memories": list(memory.memories.values())}
    fresh, _ = _bank(**KEEP)
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    fresh.observe(bm.episode(bm.SORT, "u", True))
    assert list(fresh.memories)[-1] == "mb-2" and fresh.memories["mb-2"]["created"] == 3


# -- MacNet-M -------------------------------------------------------------------------------------


def _macnet(**params):
    services = _services()
    return registry.build("memory", "macnet_m", params, services=services), services


def test_a_solution_is_stored_under_its_task_and_opening_and_audited():
    memory, services = _macnet(context_chars=5)
    ep = bm.episode(f"  {bm.SORT}  ", "s", True, actions=("sort",), critic="Check stability.")
    memory.observe(ep)
    assert memory.solutions == {
        "mn-0": {
            "id": "mn-0",
            "task_id": "s",
            "instruction": f"  {bm.SORT}  ",
            "key": f"{bm.SORT}\nStart",
            "solution": "1. sort",
            "critique": "Check stability.",
            "success": True,
        }
    }
    assert _plain(services.audit.read()) == [{"event": "admit", "memory_id": "mn-0", "task": "s", "success": True}]
    assert memory.stats() == {"solutions": 1.0}
    empty, services = _macnet()
    empty.observe(bm.episode(bm.SORT, "e", False, actions=()))
    assert _plain(services.audit.read()) == [
        {"event": "skip", "purpose": "store", "reason": "no_solution", "task": "e"}
    ]


def test_recalled_solutions_read_as_upstream_artifacts():
    memory, _ = _macnet(recall_failures=True, top_k=3)
    memory.observe(bm.episode(bm.SORT, "s", True, actions=("sort",), critic="Check stability."))
    memory.observe(bm.episode(bm.SORT, "f", False, actions=("shuffle",)))
    query = replace(bm.query(bm.SORT, "q", context="Start of it."), level="team")
    items = {i.metadata["source_task"]: i for i in memory.recall(query)}
    assert (
        items["s"].text
        == f"Solution to a similar earlier task ({bm.SORT}):\n1. sort\nCritique it received: Check stability."
    )
    assert items["f"].text == f"Solution to a similar earlier task ({bm.SORT}) (this solution FAILED):\n1. shuffle"
    assert (items["s"].id, items["s"].level, items["s"].kind) == ("mn-0", "team", "solution")
    assert items["f"].metadata == {"source_task": "f", "success": False} and 0.5 < items["s"].score <= 1.0 + 1e-6
    unlabelled, _ = _macnet(recall_failures=False)
    unlabelled.observe(bm.episode(bm.SORT, "u", None, actions=("sort",)))
    assert unlabelled.recall(bm.query(bm.SORT, "q")) == []


def test_the_recall_key_is_the_instruction_and_a_clipped_context():
    memory, _ = _macnet(context_chars=10, top_k=1)
    for task_id, opening in [("chairs", "office chairs and desks"), ("shoes", "running shoes larger size")]:
        ep = bm.episode("Handle the customer request", task_id, True, actions=("act",))
        ep.trajectory.initial_observation = opening
        memory.observe(ep)
    assert memory.solutions["mn-1"]["key"] == "Handle the customer request\nrunning sh"
    query = bm.query("Handle the customer request", "q", context="running shoes, please")
    assert [i.metadata["source_task"] for i in memory.recall(query)] == ["shoes"]


def test_the_last_critique_is_the_latest_critic_like_decision_clipped():
    ep = bm.episode(bm.SORT, "s", True, actions=("sort",), critic="Old critique.")
    traj = ep.trajectory
    for i, (role, output) in enumerate(
        [("reviewer", "Reviewed: " + "x " * 50), ("actor", "not a critique"), ("judge", "  ")]
    ):
        traj.add_decision(DecisionNode(id=f"z{i}", agent="a", role=role, level="agent", output=output))
    assert last_critique(traj, 20) == "Reviewed: x x x x..."
    assert last_critique(traj, 0) == ""
    for role in ("Critic", "instructor", "verifier", "judge"):
        t = bm.episode(bm.SORT, "s", True).trajectory
        t.add_decision(DecisionNode(id="c", agent="a", role=role, level="agent", output="Do better."))
        assert last_critique(t, 100) == "Do better.", role
    memory, _ = _macnet(critique_chars=0)
    memory.observe(ep)
    assert memory.solutions["mn-0"]["critique"] == ""


def test_macnet_state_round_trips_and_ids_continue():
    memory, _ = _macnet()
    memory.observe(bm.episode(bm.SORT, "s", True))
    state = memory.state_dict()
    assert state == {"next_id": 1, "solutions": list(memory.solutions.values())}
    fresh, _ = _macnet()
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state and [i.id for i in fresh.recall(bm.query(bm.SORT, "q"))] == ["mn-0"]
    fresh.observe(bm.episode(bm.TRANSLATE, "t", True))
    assert list(fresh.solutions) == ["mn-0", "mn-1"]


def test_the_excerpt_is_the_plain_tail_of_the_whole_trajectory():
    memory, services = _bank(
        _Recorder("Summary: " + "the team went through many long steps " * 20), excerpt_chars=500, **KEEP
    )
    ep = bm.episode(bm.SORT, "s", True, actions=tuple(f"step number {i} " * 4 for i in range(30)))
    ep.trajectory.add_decision(
        DecisionNode(id="c", agent="critic", role="critic", level="agent", step=29, output="Looks right.")
    )
    memory.observe(ep)
    m = memory.memories["mb-0"]
    tail = render_trajectory(ep.trajectory, max_chars=10**9, with_agents=False)
    assert m["excerpt"] == tail[-500:].lstrip() and len(m["excerpt"]) >= 490 and "[critic/critic]" not in m["excerpt"]
    admit = next(e for e in services.audit.read() if e["event"] == "admit")
    assert admit["summary"] == m["summary"][:300] and len(m["summary"]) > 300


def test_long_summaries_and_instructions_are_clipped_to_their_bounds():
    text = "word " * 400
    assert _clean_summary(text) == clip(" ".join(text.split()), 1200)
    memory, _ = _bank(**KEEP)
    long_task = "Sort the list " + "y" * 300
    memory.observe(bm.episode(long_task, "s", True))
    (item,) = memory.recall(bm.query(long_task, "q"))
    assert item.text.startswith(f"An earlier task ({one_line(long_task, 200)}) succeeded.")


def test_an_unknown_recalled_id_does_not_stop_reinforcing_the_known_ones():
    memory, _ = _bank(**KEEP)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.SORT, "r", True, recalled=("mb-99", "mb-0")))
    assert memory.memories["mb-0"]["strength"] == 2.0


def test_a_conversation_is_recalled_by_what_the_user_asks():
    memory, _ = _bank(_Recorder("Summary: the agent exchanged running shoes for a larger size."), top_k=1, **KEEP)
    ep = bm.episode("Help the customer per the policy", "shoes", True)
    memory.observe(replace(ep, task=replace(ep.task, mode="conversation")))
    other = _Recorder("Summary: the agent cancelled a pending order of office chairs.")
    memory.services.llm = other
    ep = bm.episode("Help the customer per the policy", "chairs", True)
    memory.observe(replace(ep, task=replace(ep.task, mode="conversation")))
    query = bm.query("Help the customer per the policy", "q", context="cancel my pending order of office chairs")
    query = replace(query, task=replace(query.task, mode="conversation"))
    assert [i.metadata["source_task"] for i in memory.recall(query)] == ["chairs"]


def test_a_long_excerpt_is_cut_from_the_unclipped_trajectory():
    memory, _ = _bank(excerpt_chars=9000, **KEEP)
    ep = bm.episode(bm.SORT, "s", True, actions=tuple(f"step number {i} " * 4 for i in range(120)))
    memory.observe(ep)
    tail = render_trajectory(ep.trajectory, max_chars=10**9, with_agents=False)
    assert len(tail) > 6000 and memory.memories["mb-0"]["excerpt"] == tail[-9000:].lstrip()


def test_macnet_bounds_the_solution_the_instruction_and_even_a_one_character_critique():
    memory, _ = _macnet(max_solution_chars=60)
    long_task = "Sort the list " + "y" * 300
    ep = bm.episode(long_task, "s", True, actions=tuple(f"action number {i}" for i in range(30)), critic="Do better.")
    memory.observe(ep)
    s = memory.solutions["mn-0"]
    assert s["solution"] == final_solution(ep.trajectory, 60) and len(s["solution"]) <= 60
    (item,) = memory.recall(bm.query(long_task, "q"))
    assert item.text.startswith(f"Solution to a similar earlier task ({one_line(long_task, 200)}):\n")
    assert last_critique(ep.trajectory, 1) == one_line("Do better.", 1) != ""


# -- G-Memory: the query graph, the insight book, chunks ------------------------------------------


def test_the_task_graph_links_distinct_tasks_both_ways_and_expands_by_hops():
    g = TaskGraph()
    g.add_edge("a", "a", 1.0)  # no self-loops
    assert "a" not in g and len(g) == 0
    for a, b in [("a", "b"), ("b", "c"), ("c", "d"), ("x", "y")]:
        g.add_edge(a, b, 0.9)
    g.add_node("z")
    assert g.adj["b"] == {"a": 0.9, "c": 0.9} and len(g) == 7 and "z" in g
    assert g.within_hops(["a"], 0) == ["a"]
    assert g.within_hops(["a"], 1) == ["a", "b"]
    assert g.within_hops(["a"], 2) == ["a", "b", "c"]
    assert g.within_hops(["d", "x", "missing"], 1) == ["d", "c", "x", "y"]
    assert g.components() == [["a", "b", "c", "d"], ["x", "y"], ["z"]]
    again = TaskGraph.from_state(g.state())
    assert again.adj == g.adj and list(again.adj) == list(g.adj) and again.state() == g.state()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=14),
    st.lists(st.integers(0, 7), min_size=1, max_size=3),
    st.integers(0, 3),
)
def test_hop_expansion_is_breadth_first_distance(edges, sources, hops):
    g = TaskGraph()
    for a, b in edges:
        g.add_edge(str(a), str(b), 1.0)
    got = g.within_hops([str(s) for s in sources], hops)

    def dist(src: str) -> dict[str, int]:
        d, frontier = {src: 0}, [src]
        while frontier:
            nxt = []
            for n in frontier:
                for m in g.adj.get(n, {}):
                    if m not in d:
                        d[m] = d[n] + 1
                        nxt.append(m)
            frontier = nxt
        return d

    expected = {n for s in map(str, sources) if s in g for n, k in dist(s).items() if k <= hops}
    assert set(got) == expected and len(got) == len(expected)
    comps = g.components()
    assert sorted(n for c in comps for n in c) == sorted(g.adj) and all(set(c) == set(dist(c[0])) for c in comps)


def test_operations_are_read_in_g_memorys_format_and_bad_ones_are_dropped():
    reply = (
        "ADD: Check the order status first.\nEDIT 2: Verify the name before lookups.\nREMOVE 1: Old rule.\n"
        "AGREE 3: Always confirm.\nADD: no final stop\nADD: ADD another rule.\nEDIT: Rule without number.\n"
        "AGREE 4: Category: Be brief."
    )
    assert parse_operations(reply) == [
        Operation("ADD", None, "Check the order status first."),
        Operation("EDIT", 2, "Verify the name before lookups."),
        Operation("REMOVE", 1, "Old rule."),
        Operation("AGREE", 3, "Always confirm."),
        Operation("EDIT", None, "Rule without number."),
        Operation("AGREE", 4, "Be brief."),
    ]
    assert parse_operations(None) == [] and parse_operations("ADD:    .") == [Operation("ADD", None, ".")]


def _book(*rules: str) -> InsightBook:
    book = InsightBook()
    for r in rules:
        book.add(r, ["task A"])
    book.events.clear()
    return book


def test_critique_operations_edit_score_and_link_the_rules_they_name():
    book = _book("Rule one.", "Rule two.", "Rule three.")
    shown = ["gm-i-0", "gm-i-1", "gm-i-2"]
    ops = [
        Operation("REMOVE", 1, "x."),
        Operation("AGREE", 2, "y."),
        Operation("EDIT", 3, "Rule three, reworded."),
        Operation("ADD", None, "Rule four."),
        Operation("ADD", None, "Rule two."),  # already there: not added
        Operation("AGREE", 9, "out of range."),
        Operation("EDIT", None, "Rule one."),  # same text as an existing rule: counts as agreement
    ]
    book.apply(ops, shown, ["task B"], max_rules=10)
    r = {x["id"]: x for x in book.rules}
    assert (r["gm-i-0"]["score"], r["gm-i-0"]["negative"], r["gm-i-0"]["positive"]) == (
        2,
        ["task B"],
        ["task A", "task B"],
    )
    assert (r["gm-i-1"]["score"], r["gm-i-1"]["positive"]) == (3, ["task A", "task B"])
    assert (r["gm-i-2"]["rule"], r["gm-i-2"]["score"]) == ("Rule three, reworded.", 3)
    assert r["gm-i-3"] == {"id": "gm-i-3", "rule": "Rule four.", "score": 2, "positive": ["task B"], "negative": []}
    assert len(book.rules) == 4
    assert book.events == [
        ("critique", {"memory_id": "gm-i-0", "op": "REMOVE", "score": 1}),
        ("critique", {"memory_id": "gm-i-1", "op": "AGREE", "score": 3}),
        ("critique", {"memory_id": "gm-i-0", "op": "AGREE", "score": 2}),
        ("critique", {"memory_id": "gm-i-2", "op": "EDIT", "score": 3}),
        ("admit", {"memory_id": "gm-i-3", "kind": "insight", "rule": "Rule four."}),
    ]


def test_a_full_book_removes_harder_and_rules_at_zero_are_pruned():
    book = _book(*(f"Rule {i}." for i in range(3)))
    book.apply([Operation("REMOVE", 1, "x.")], ["gm-i-0"], ["t"], max_rules=3)
    assert book.by_id("gm-i-0")["score"] == -1
    book.reward("gm-i-1", -2.0, "t")
    book.reward("gm-i-2", 1.0, "t")
    book.reward("gm-i-9", 1.0, "t")  # unknown: nothing
    book.events.clear()
    book.prune()
    assert [(r["id"], r["score"]) for r in book.rules] == [("gm-i-2", 3.0)]
    assert book.events == [
        ("forget", {"memory_id": "gm-i-0", "kind": "insight", "score": -1}),
        ("forget", {"memory_id": "gm-i-1", "kind": "insight", "score": 0.0}),
    ]
    removed = _book("Rule 0.")
    removed.apply([Operation("REMOVE", 1, "x.")], ["gm-i-0"], ["t"], max_rules=2)
    assert removed.rules[0]["score"] == 1


def test_related_rules_need_enough_linked_tasks_and_come_most_linked_first():
    book = InsightBook()
    book.add("One.", ["a"])
    book.add("Two.", ["a", "b", "c"])
    book.add("Three.", ["z"])
    assert [r["rule"] for r in book.related(["a", "b", "c"])] == ["Two.", "One."]
    assert [r["rule"] for r in book.related(["a", "b", "c"], threshold=2)] == ["Two."]
    assert book.related(["q"]) == []
    copied = book.copy()
    copied.rules[0]["score"] = 99
    assert book.rules[0]["score"] == 2 and copied.events == [] and copied.next_id == 3
    assert InsightBook.from_state(book.state()).rules == book.rules


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(), max_size=40), st.integers(1, 7))
def test_chunks_keep_order_and_balance_at_most_size_each(items, size):
    chunks = _chunks(items, size)
    assert [x for c in chunks for x in c] == items
    assert all(1 <= len(c) <= size for c in chunks)
    if items:
        assert len(chunks) == -(-len(items) // size) and max(map(len, chunks)) - min(map(len, chunks)) <= size - 1


def _gmem(**params):
    services = bm.services()
    return registry.build("memory", "g_memory", params, services=services), services


def test_recalled_trials_and_insights_carry_their_level_score_and_provenance():
    memory, _ = _gmem(include_failed_trials=True, failed_topk=1)
    memory.observe(bm.episode(bm.SORT, "s", True))
    memory.observe(bm.episode(bm.SORT_SIMILAR, "f", False))
    memory.book.add("Check the order before returning, because unsorted output fails.", [bm.SORT])
    query = replace(bm.query(bm.SORT, "q"), level="team")
    items = memory.recall(query)
    assert [(i.id, i.kind, i.level) for i in items] == [
        ("gm-t-0", "trajectory", "team"),
        ("gm-t-1", "trajectory", "team"),
        ("gm-i-0", "insight", "team"),
    ]
    ok, failed, rule = items
    assert ok.metadata == {"source_task": "s", "success": True} and failed.metadata == {
        "source_task": "f",
        "success": False,
    }
    assert ok.score == pytest.approx(1.0, abs=1e-5) and 0 < failed.score < 1
    t = memory.trials["gm-t-1"]
    assert failed.text == clip(
        f"Failed trial of a similar task: {t['task_main']}\nKey steps:\n{t['key_steps']}\n"
        f"Why it failed: {t['fail_reason']}\nTrajectory:\n{t['trajectory']}",
        1500,
    )
    assert (rule.text, rule.score, rule.metadata) == (
        "Check the order before returning, because unsorted output fails.",
        2.0,
        {"score": 2},
    )
    assert memory.stats() == {"trials": 2.0, "insights": 1.0, "tasks": 2.0}


def test_more_trials_and_insights_are_recalled_when_asked_for():
    memory, _ = _gmem(successful_topk=3, insights_topk=5, edge_similarity=2.0)
    for i, text in enumerate([bm.SORT, bm.SORT_SIMILAR, f"{bm.SORT} quickly", bm.TRANSLATE]):
        memory.observe(bm.episode(text, f"t{i}", True))
    for i in range(6):
        memory.book.add(f"Rule {i}.", [bm.SORT])
    items = memory.recall(bm.query(bm.SORT, "q"))
    assert [i.id for i in items if i.kind == "trajectory"] == ["gm-t-0", "gm-t-2", "gm-t-1"]
    assert [i.id for i in items if i.kind == "insight"] == [f"gm-i-{i}" for i in range(5)]


def test_a_conversation_recalls_by_what_the_user_asks_and_state_round_trips():
    memory, _ = _gmem(successful_topk=1)
    for task_id, opening in [
        ("chairs", "cancel my pending order of office chairs"),
        ("shoes", "exchange running shoes"),
    ]:
        ep = bm.episode("Help the customer per the policy", task_id, True)
        ep.trajectory.initial_observation = opening
        memory.observe(replace(ep, task=replace(ep.task, mode="conversation")))
    query = bm.query("Help the customer per the policy", "q", context="exchange my running shoes")
    query = replace(query, task=replace(query.task, mode="conversation"))
    assert [i.metadata["source_task"] for i in memory.recall(query)] == ["shoes"]
    memory.maintained_size = 2
    fresh, _ = _gmem(successful_topk=1)
    fresh.load_state_dict(memory.state_dict())
    assert fresh.state_dict() == memory.state_dict() and (fresh.next_trial, fresh.maintained_size) == (2, 2)
    fresh.observe(bm.episode(bm.SORT, "next", True))
    assert "gm-t-2" in fresh.trials


def test_insight_rewards_are_audited_with_their_task_and_new_score():
    book = _book("Rule one.")
    book.reward("gm-i-0", 1.0, "task B")
    assert book.events == [("score", {"memory_id": "gm-i-0", "delta": 1.0, "score": 3.0, "task": "task B"})]
    state = book.state()
    restored = InsightBook.from_state(state)
    restored.add("Rule two.", ["t"])
    assert restored.rules[-1]["id"] == "gm-i-1" and book.rules == state["rules"] and len(state["rules"]) == 1
    g = TaskGraph()
    g.add_edge("a", "b", 0.91)
    assert g.adj == {"a": {"b": 0.91}, "b": {"a": 0.91}} and None not in g.adj


class _Relevance(_Recorder):
    """Answers G-Memory's relevance prompt from a table of (case text -> reply); other prompts get text."""

    def __init__(self, replies: dict[str, str], fail_on: str | None = None) -> None:
        super().__init__("Step 1: look. Step 2: act.")
        self.replies, self.fail_on = replies, fail_on

    def complete(self, messages, **kwargs):
        system, user = messages[0]["content"], messages[1]["content"]
        if system != GP.RELEVANCE_SYSTEM:
            return super().complete(messages, **kwargs)
        self.calls.append({"system": system, "user": user, **kwargs})
        if self.fail_on and self.fail_on in user.split("Ongoing task:")[0]:
            raise ContextLimitError("too long")
        case = user.split("Successful case:\n")[1].split("\n")[0]
        return _Reply(self.replies.get(case, "no score"))


def test_llm_reranking_orders_the_retrieved_successes_by_the_relevance_score():
    texts = [bm.SORT, bm.SORT_SIMILAR, f"{bm.SORT} quickly"]
    llm = _Relevance({texts[0]: "Score: 2", texts[1]: "Score: 9", texts[2]: "no score"})
    memory = registry.build(
        "memory",
        "g_memory",
        {"rerank_with_llm": True, "successful_topk": 2, "edge_similarity": 2.0},
        services=_services(llm),
    )
    for i, text in enumerate(texts):
        memory.observe(bm.episode(text, f"t{i}", True))
    items = memory.recall(bm.query(bm.SORT, "q"))
    assert [i.metadata["source_task"] for i in items if i.kind == "trajectory"] == ["t1", "t0"]
    rerank = [c for c in llm.calls if c["system"] == GP.RELEVANCE_SYSTEM]
    assert len(rerank) == 3 and all(c["max_tokens"] == 16 for c in rerank)
    t0 = memory.trials["gm-t-0"]
    assert rerank[0]["user"] == GP.RELEVANCE_USER.format(
        trajectory=f"{t0['task_main']}\n{t0['trajectory']}", task=bm.SORT
    )
    plain = registry.build(
        "memory", "g_memory", {"successful_topk": 2, "edge_similarity": 2.0}, services=_services(llm)
    )
    plain.load_state_dict(memory.state_dict())
    assert [i.metadata["source_task"] for i in plain.recall(bm.query(bm.SORT, "q")) if i.kind == "trajectory"] == [
        "t0",
        "t2",
    ]


def test_an_unscored_case_ranks_below_every_scored_one_and_a_long_prompt_is_audited():
    texts = [bm.SORT, bm.SORT_SIMILAR]
    llm = _Relevance({texts[1]: "Score: 1"}, fail_on=texts[0])
    services = _services(llm)
    params = {"rerank_with_llm": True, "successful_topk": 1, "edge_similarity": 2.0}
    memory = registry.build("memory", "g_memory", params, services=services)
    for i, text in enumerate(texts):
        memory.observe(bm.episode(text, f"t{i}", True))
    assert [i.metadata["source_task"] for i in memory.recall(bm.query(bm.SORT, "q")) if i.kind == "trajectory"] == [
        "t1"
    ]
    skip = next(e for e in services.audit.read() if e["event"] == "skip")
    assert (skip["purpose"], skip["reason"]) == ("rerank", "context_limit")


def test_a_trial_is_distilled_at_its_settings_from_a_digit_free_trajectory_and_audited():
    llm = _Recorder("  Step: look at the list.  ")
    services = _services(llm)
    memory = registry.build("memory", "g_memory", {"max_trajectory_chars": 300, "max_tokens": 200}, services=services)
    ep = bm.episode(bm.SORT, "f", False, actions=tuple(f"move 12 to slot {i}" for i in range(40)))
    memory.observe(ep)
    shown = render_trajectory(ep.trajectory, max_chars=300, skip_negative_reward=True)
    key, mistakes = llm.calls
    assert (key["system"], mistakes["system"]) == (GP.KEY_STEPS_SYSTEM, GP.MISTAKES_SYSTEM)
    clean = re.sub(r"\d+", "", shown)
    assert key["user"] == GP.KEY_STEPS_USER.format(task=bm.SORT, trajectory=clean)
    assert mistakes["user"] == GP.MISTAKES_USER.format(task=bm.SORT, trajectory=clean)
    assert all((c["temperature"], c["max_tokens"]) == (0.1, 200) for c in llm.calls)
    t = memory.trials["gm-t-0"]
    assert (t["key_steps"], t["fail_reason"], t["trajectory"], t["success"]) == (
        "Step: look at the list.",
        "Step: look at the list.",
        shown,
        False,
    )
    assert _plain(services.audit.read()) == [
        {"event": "admit", "memory_id": "gm-t-0", "kind": "trial", "task": "f", "success": False}
    ]
    digits = _Recorder("Key steps.")
    keep = registry.build("memory", "g_memory", {"strip_digits": False}, services=_services(digits))
    keep.observe(ep)
    assert "move 12 to slot" in digits.calls[0]["user"]


def test_unlabelled_episodes_and_empty_replies_are_skipped_and_audited():
    services = _services(_Recorder("   "))
    memory = registry.build("memory", "g_memory", {}, services=services)
    memory.observe(bm.episode(bm.SORT, "n", None))
    memory.observe(bm.episode(bm.SORT, "s", True))
    events = _plain(services.audit.read())
    assert events[0] == {"event": "skip", "purpose": "store", "reason": "no_label", "task": "n"}
    assert events[1] == {"event": "skip", "purpose": "key_steps", "reason": "unparsable", "reply": "   "}
    assert memory.trials["gm-t-0"]["key_steps"] == "" and len(memory.trials) == 1


def test_recalled_insights_gain_on_success_and_lose_on_failure_by_the_configured_rewards():
    memory, services = _gmem(success_reward=0.5, failure_reward=-1.5)
    memory.book.add("Rule one.", ["x"])
    memory.book.add("Rule two.", ["x"])
    memory.observe(bm.episode(bm.SORT, "s", True, recalled=("gm-i-0", "gm-t-9")))
    memory.observe(bm.episode(bm.SORT, "f", False, recalled=("gm-i-1",)))
    assert [(r["id"], r["score"]) for r in memory.book.rules] == [("gm-i-0", 2.5), ("gm-i-1", 0.5)]
    scores = [e for e in _plain(services.audit.read()) if e["event"] == "score"]
    assert scores == [
        {"event": "score", "memory_id": "gm-i-0", "delta": 0.5, "score": 2.5, "task": "s"},
        {"event": "score", "memory_id": "gm-i-1", "delta": -1.5, "score": 0.5, "task": "f"},
    ]
