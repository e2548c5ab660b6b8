"""Pins of AECG's support modules (issue 17, campaign `aecg_support`): how an episode's decision graph is
read into fixtures, uses and judge traces (traces.py), how a model reply is read (llm_json.py), the objects'
rendered text and JSON round trip (objects.py), the vector index and scoped recall (index.py,
recall_index.py), the prompt builders (prompts.py) and the audit read-back (explain.py).
Each test states the behaviour another module relies on; all run without a model call."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.aecg import llm_json, prompts, traces
from aecg_bench.aecg.beliefs import Belief, Beta
from aecg_bench.aecg.explain import explain
from aecg_bench.aecg.index import VectorIndex
from aecg_bench.aecg.objects import (
    BadCase,
    Fixture,
    Judgement,
    Memory,
    Skill,
    SkillContent,
    badcase_from,
    belief_from,
    content_from,
    fixture_from,
    memory_from,
    skill_from,
    to_dict,
)
from aecg_bench.aecg.params import BeliefParams, DriftParams
from aecg_bench.aecg.predicate import Predicate
from aecg_bench.aecg.recall_index import FLAT, RecallIndex
from aecg_bench.aecg.simulation import Corruption, admitted_stream, detection_delay, outcome_stream
from aecg_bench.audit import AuditLog
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.types import (
    Action,
    DecisionNode,
    Episode,
    Observation,
    Outcome,
    Step,
    Task,
    ToolCall,
    Trajectory,
)

# -- traces: reading an episode ----------------------------------------------------------------------------


def node(nid: str, level: str = "agent", **kw) -> DecisionNode:
    kw.setdefault("agent", f"{level}-agent")
    kw.setdefault("role", "worker")
    return DecisionNode(id=nid, level=level, **kw)  # type: ignore[arg-type]


def trajectory(*observations: str, initial: str = "start") -> Trajectory:
    traj = Trajectory(task_id="t", framework="hand", initial_observation=initial)
    for i, text in enumerate(observations):
        traj.steps.append(Step(index=i, action=Action(kind="command", text=f"a{i}"), observation=Observation(text)))
    return traj


def test_clip_collapses_whitespace_and_cuts_to_exactly_n_characters_with_an_ellipsis():
    assert traces.clip("  a \n\t b  ", 10) == "a b"
    assert traces.clip("abcde", 5) == "abcde"  # exactly n: kept whole
    assert traces.clip("abcdef", 5) == "ab..."
    assert len(traces.clip("x" * 1000, 240)) == 240
    assert traces.clip(12345, 10) == "12345"  # not only strings


def test_tail_keeps_the_last_n_characters_and_nothing_for_n_zero_or_less():
    assert traces.tail("abcdef", 2) == "ef"
    assert traces.tail("abcdef", 1) == "f"
    assert traces.tail("abcdef", 10) == "abcdef"
    assert traces.tail("abcdef", 0) == ""
    assert traces.tail("abcdef", -1) == ""


def test_the_observation_before_a_decision_is_the_previous_steps_or_the_initial_one():
    traj = trajectory("o1", "o2", "o3", initial="init")
    assert traces.observation_before(traj, node("n", step=None)) == "init"
    assert traces.observation_before(traj, node("n", step=0)) == "init"
    assert traces.observation_before(traj, node("n", step=1)) == "o1"
    assert traces.observation_before(traj, node("n", step=3)) == "o3"
    assert traces.observation_before(traj, node("n", step=4)) == "init"  # beyond the steps: no such step
    assert traces.observation_before(traj, node("n", step=-1)) == "init"


def test_the_decision_context_is_what_recall_matched_else_the_observation_before():
    traj = trajectory("o1", initial="init")
    assert traces.decision_context(traj, node("n", step=1, recall_context="the task text")) == "the task text"
    assert traces.decision_context(traj, node("n", step=1)) == "o1"
    assert traces.decision_context(traj, node("n")) == "init"


def test_behaviour_is_the_action_text_else_the_tool_names_else_the_output():
    assert traces.behaviour(node("n", output="out", action=Action(kind="command", text="go north"))) == "go north"
    calls = (ToolCall(name="get_user"), ToolCall(name="cancel", arguments={"id": 1}))
    assert traces.behaviour(node("n", output="out", action=Action(kind="tool", tool_calls=calls))) == "get_user; cancel"
    assert traces.behaviour(node("n", output="out", action=Action(kind="command", text=""))) == "out"
    assert traces.behaviour(node("n", output="out")) == "out"


def test_a_fixture_records_the_decision_as_recall_matched_it_and_as_the_agent_saw_it():
    task = Task(id="t7", benchmark="hand", instruction="Sort   the list.\n" + "x" * 600, task_type="sort")
    traj = trajectory("first observation", "0123456789abcdef", initial="init")
    n = node(
        "n1",
        level="event",
        agent="ann",
        role="router",
        step=2,
        recall_context="recalled on: sort task " + "y" * 20,
        output="ignored",
        action=Action(kind="command", text="b" * 300),
    )
    traj.decisions.append(n)
    fx = traces.fixture_for(Episode(task=task, trajectory=traj, outcome=Outcome(success=True, value=0.5)), n, 8)
    assert fx == Fixture(
        task_id="t7",
        task_type="sort",
        instruction=traces.clip(task.instruction, traces.INSTRUCTION_CHARS),
        level="event",
        agent="ann",
        role="router",
        context="yyyyyyyy",  # the tail of what recall matched
        behaviour="b" * 237 + "...",
        success=True,
        value=0.5,
        observation="89abcdef",  # the tail of what the decision saw
    )
    assert len(fx.instruction) == traces.INSTRUCTION_CHARS == 500
    failed = traces.fixture_for(Episode(task=task, trajectory=traj, outcome=Outcome(success=None)), n, 8)
    assert failed.success is False and failed.value is None


def test_uses_list_each_recalled_object_once_in_first_use_order_with_every_node_that_recalled_it():
    traj = Trajectory(task_id="t", framework="hand")
    a = traj.add_decision(node("a", recalled_memory_ids=("s2", "s1", "s2")))
    b = traj.add_decision(node("b", recalled_memory_ids=()))
    c = traj.add_decision(node("c", recalled_memory_ids=("s1", "s3")))
    assert b
    got = traces.uses(traj)
    assert got == [traces.Use("s2", (a,)), traces.Use("s1", (a, c)), traces.Use("s3", (c,))]


def test_nodes_by_level_keeps_decision_order_within_a_level():
    traj = Trajectory(task_id="t", framework="hand")
    t1, a1, t2 = (traj.add_decision(node(i, lv)) for i, lv in (("t1", "team"), ("a1", "agent"), ("t2", "team")))
    assert traces.nodes_by_level(traj) == {"team": [t1, t2], "agent": [a1]}


def test_a_judge_sees_the_last_decisions_with_scope_inputs_output_and_the_environments_reply():
    traj = trajectory("", initial="init")
    traj.steps = [
        Step(
            index=0,
            action=Action(kind="command", text="x"),
            observation=Observation("said " + "z" * 300),
            decision_id="d2",
        ),
        Step(index=1, action=Action(kind="command", text="y"), observation=Observation("no decision")),
    ]
    for i in range(3):
        traj.add_decision(
            node(
                f"d{i}",
                "team" if i else "agent",
                agent=f"ag{i}",
                role=f"r{i}",
                parents=(f"d{i - 1}",) if i else (),
                recalled_memory_ids=(f"m{i}",),
                output="o " * 200,
            )
        )
    rows = traces.trace_summary(traj, 2)
    assert [r["id"] for r in rows] == ["d1", "d2"]  # the last `limit` decisions, in order
    assert rows[1] == {
        "id": "d2",
        "level": "team",
        "agent": "ag2",
        "role": "r2",
        "parents": ["d1"],
        "recalled": ["m2"],
        "output": traces.clip("o " * 200, traces.OUTPUT_CHARS),
        "observation_after": traces.clip("said " + "z" * 300, 200),
    }
    assert len(rows[1]["output"]) == 240 and len(rows[1]["observation_after"]) == 200
    assert rows[0]["observation_after"] == ""  # no step came from d1
    assert [r["id"] for r in traces.trace_summary(traj, 3)] == ["d0", "d1", "d2"]
    assert [r["id"] for r in traces.trace_summary(traj, 5)] == ["d0", "d1", "d2"]


def test_a_success_is_phrased_with_its_task_level_sorted_roles_and_at_most_twelve_actions():
    task = Task(id="t", benchmark="hand", instruction="Do it.", task_type="")
    long_task = Task(id="t", benchmark="hand", instruction="w" * 400)
    traj = Trajectory(task_id="t", framework="hand")
    nodes = [
        traj.add_decision(
            node(f"n{i}", "team", role="zeta" if i % 2 else "alpha", output=f"act{i}" + "!" * (90 if i == 0 else 0))
        )
        for i in range(14)
    ]
    ep = Episode(task=task, trajectory=traj, outcome=Outcome(success=True))
    acts = " ; ".join([traces.clip("act0" + "!" * 90, 80), *(f"act{i}" for i in range(1, 12))])
    assert traces.memory_text(ep, "team", nodes) == (
        f"Task type: general\nTask: Do it.\nLevel: team; roles: alpha, zeta\nWhat worked: {acts} (+2 more)"
    )
    ep = Episode(
        task=Task(id="t", benchmark="hand", instruction="Do it.", task_type="sort"), trajectory=traj, outcome=ep.outcome
    )
    assert traces.memory_text(ep, "team", nodes[:12]).startswith("Task type: sort\n")
    assert traces.memory_text(ep, "team", nodes[:12]).endswith("act11")  # twelve: no "more"
    assert traces.memory_text(ep, "team", nodes[:13]).endswith("act11 (+1 more)")
    long = traces.memory_text(Episode(task=long_task, trajectory=traj, outcome=ep.outcome), "team", nodes[:1])
    assert long.splitlines()[1] == "Task: " + "w" * 297 + "..."  # the task clipped to 300 characters


# -- llm_json: reading replies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('  {"a": 1}  ', {"a": 1}),
        ('```JSON\n{"a": 2}\n```', {"a": 2}),
        ('```\n{"a": 3}\n```', {"a": 3}),
        ("{'a': True, 'b': None}", {"a": True, "b": None}),  # a Python literal
        ('first {"a": 4} then {"a": 5}', {"a": 4}),  # the leftmost object wins
        ('[1] then {"a": "x\\"}"}', {"a": 'x"}'}),  # an escaped quote and a brace inside a string
        ('{"a": "back\\\\"} tail', {"a": "back\\"}),  # an escaped backslash ends before the closing quote
        ('prose {"a": {"b": {"c": 1}}} prose', {"a": {"b": {"c": 1}}}),
        ("{1: 2}", {1: 2}),
        ('x {"a": [1, {"b": 2}]} {', {"a": [1, {"b": 2}]}),
        ('Answer:{"a": 6}.', {"a": 6}),  # the span ends at its closing brace
    ],
)
def test_one_object_is_read_from_whole_fenced_or_embedded_json_and_python_literals(text, expected):
    assert llm_json.parse_object(text) == expected


@pytest.mark.parametrize("text", ['"just a string"', "[1, 2]", "3", "{1, 2}", "{x: 1}", "{'a': 1"])
def test_a_reply_that_is_not_an_object_parses_to_none(text):
    assert llm_json.parse_object(text) is None


def test_a_reply_quoting_code_with_escaped_quotes_and_a_brace_inside_prose_is_read():
    """A bug fixed with this test: the span scanner reset its escape flag before testing the quote, so an
    escaped quote ended the string, the brace after it closed the object early, and the reply read as
    nothing (a judge's abstention, a lost proposal)."""
    reply = 'My verdict: {"abstain": false, "clause": "step 3: print(\\"}\\")", "confidence": 0.8} -- done'
    assert llm_json.parse_object(reply) == {"abstain": False, "clause": 'step 3: print("}")', "confidence": 0.8}


def test_only_the_first_sixteen_opening_braces_are_tried():
    assert llm_json.parse_object("{ " * 15 + '{"a": 1}') == {"a": 1}
    assert llm_json.parse_object("{ " * 16 + '{"a": 1}') is None  # bounded work on junk


def test_a_fence_is_tried_before_embedded_spans():
    assert llm_json.parse_object('{"a": 1 broken ```json\n{"a": 2}\n``` {"a": 3}') == {"a": 2}


def test_as_str_collapses_whitespace_cuts_and_reads_none_as_empty():
    assert llm_json.as_str(None) == ""
    assert llm_json.as_str(" a \n b ") == "a b"
    assert llm_json.as_str(3.5) == "3.5"
    assert llm_json.as_str("x" * 500) == "x" * 400
    assert llm_json.as_str("abcdef", 3) == "abc"


def test_as_str_list_splits_numbered_text_strips_markers_and_bounds_items_and_count():
    assert llm_json.as_str_list("1) plan\n\n- act\n* check") == ["plan", "act", "check"]
    assert llm_json.as_str_list("1. plan the move; 2. act on it. 3) check") == ["plan the move;", "act on it.", "check"]
    assert llm_json.as_str_list("Use 2. not a step") == ["Use 2. not a step"]
    assert llm_json.as_str_list(["  1. a ", "", "-", 7, None]) == ["a", "7"]
    assert llm_json.as_str_list([f"s{i}" for i in range(10)]) == [f"s{i}" for i in range(8)]
    assert llm_json.as_str_list([f"s{i}" for i in range(10)], limit=3) == ["s0", "s1", "s2"]
    assert llm_json.as_str_list(["y" * 400]) == ["y" * 300]
    assert llm_json.as_str_list(["y" * 400], item_limit=5) == ["yyyyy"]
    assert llm_json.as_str_list({"a": 1}) == []
    assert llm_json.as_str_list(None) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (" Yes ", True),
        ("TRUE", True),
        ("1", True),
        ("y", True),
        ("no", False),
        ("", False),
        (1, True),
        (0, False),
        (0.5, True),
        (0.0, False),
        (None, False),
        ([1], False),
    ],
)
def test_as_bool_reads_booleans_words_and_numbers(value, expected):
    assert llm_json.as_bool(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.7, 0.7),
        ("0.25", 0.25),
        (" 85% ", 0.85),
        (1, 1.0),  # 1 is already a probability
        (1.5, 0.015),  # (1, 100]: a percentage
        (100, 1.0),
        (150, 1.0),  # clamped
        (-0.2, 0.0),
        ("high", None),
        (None, None),
        (float("nan"), None),
        ("nan", None),
        ([0.5], None),
        ("0.5X", None),  # only a percent sign is read off the end
    ],
)
def test_as_confidence_reads_probabilities_and_percentages_into_the_unit_interval(value, expected):
    got = llm_json.as_confidence(value)
    assert got == pytest.approx(expected) if expected is not None else got is None


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=8), st.booleans()), max_size=4))
def test_any_json_object_in_prose_reads_back_equal(obj):
    assert llm_json.parse_object(f"Here: {json.dumps(obj)} done") == obj


# -- objects: rendered text and JSON form --------------------------------------------------------------------


def fixture(tid: str = "t1", **kw) -> Fixture:
    base = dict(
        task_id=tid,
        task_type="sort",
        instruction="Sort it.",
        level="team",
        agent="a",
        role="planner",
        context="ctx",
        behaviour="did",
        success=True,
    )
    return Fixture(**{**base, **kw})


def content(**kw) -> SkillContent:
    base = dict(
        name="check-first",
        applicability="long lists",
        triggers=["many items", "unsorted"],
        procedure=["look", "sort"],
        avoidance=["guessing", "skipping"],
        evidence_summary="two successes",
    )
    return SkillContent(**{**base, **kw})


def test_a_fixtures_text_is_the_decision_text_recall_matches():
    fx = fixture(task_type="tt", instruction="ins", level="event", role="ro", agent="ag", context="co")
    assert fx.text() == "task type: tt\ntask: ins\nlevel: event; role: ro; agent: ag\nobservation: co"


def test_a_skill_renders_its_scope_applicability_predicate_triggers_steps_and_avoidance():
    c = content(predicate=Predicate(all_of=["long"], none_of=["empty list"]))
    assert c.render("event") == (
        "Skill 'check-first' (event-level decisions)\n"
        "Use when: long lists\n"
        'Only if the situation matches: "long" and not "empty list"\n'
        "Triggers: many items; unsorted\n"
        "Procedure: 1) look 2) sort\n"
        "Avoid: guessing; skipping"
    )
    bare = content(triggers=[], avoidance=[])
    assert (
        bare.render("agent")
        == "Skill 'check-first' (agent-level decisions)\nUse when: long lists\nProcedure: 1) look 2) sort"
    )


def test_recall_embeds_the_skills_name_applicability_triggers_and_steps_not_its_avoidance():
    assert content().match_text() == "check-first\nlong lists\nmany items\nunsorted\nlook\nsort"


def skill(sid: str = "k1.v1", level: str = "team", **kw) -> Skill:
    base = dict(
        id=sid,
        lineage="k1",
        version=1,
        level=level,
        family="m1",
        status="active",
        content=content(),
        belief=Belief(slow=Beta(3.0, 1.5), fast=Beta(2.0, 1.0), events=4),
    )
    return Skill(**{**base, **kw})


def test_a_skills_text_is_its_content_rendered_at_its_level():
    assert skill(level="agent").text() == content().render("agent")


def test_every_object_round_trips_through_its_json_form():
    fx = fixture(value=0.5, observation="saw")
    sk = skill(
        content=content(predicate=Predicate(all_of=["a b"], none_of=["c"])),
        belief=Belief(slow=Beta(3.0, 1.5), fast=Beta(2.0, 1.0), events=4, origin=Beta(2.0, 1.0), peak=Beta(3.5, 1.0)),
        parent="k1.v0",
        seed="m1",
        neighbours=["m2"],
        route="repair",
        uses=3,
        exposure=[0.5, 1.0],
        success_fixtures=[fx, fixture("t2")],
        badcases=["b1"],
        reviewed_at=2,
        pending_candidate="k1.v2",
    )
    mem = Memory(
        id="m1",
        level="event",
        text="txt",
        family="m1",
        fixture=fx,
        pos=1.5,
        neg=0.5,
        support=2,
        uses=1,
        consolidated_into="k1.v1",
        promotion_attempts=1,
    )
    bc = BadCase(
        id="b1",
        task_id="t3",
        status="admitted",
        fixtures={"k1.v1": fx},
        judgements=[
            Judgement(
                judge=0,
                abstain=False,
                skill_id="k1.v1",
                scope="team",
                confidence=0.8,
                failure_mode="procedure",
                clause="c",
                behaviour="b",
                reason="r",
            )
        ],
        blamed=["k1.v1"],
        failure_mode="procedure",
        mean_confidence=0.8,
        reason="agreed",
    )
    for obj, back in (
        (fx, fixture_from),
        (sk, skill_from),
        (mem, memory_from),
        (bc, badcase_from),
        (sk.content, content_from),
        (sk.belief, belief_from),
    ):
        d = json.loads(json.dumps(to_dict(obj)))  # through JSON text, as in a snapshot
        assert back(d) == obj
        assert to_dict(back(d)) == d
    plain = Belief(slow=Beta(1.0, 1.0), fast=Beta(1.0, 1.0))
    assert belief_from(to_dict(plain)) == plain and belief_from(to_dict(plain)).origin is None
    assert belief_from({k: v for k, v in to_dict(plain).items() if k not in ("origin", "peak")}) == plain


# -- index: the vector index ---------------------------------------------------------------------------------


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_rows_are_added_replaced_removed_and_scored_by_dot_product():
    idx = VectorIndex(2)
    assert len(idx) == 0 and idx.ranked(unit(1, 0), -1.0) == []
    idx.add("a", unit(1, 0))
    idx.add("b", unit(0, 1))
    assert len(idx) == 2 and "a" in idx and "c" not in idx
    assert idx.ranked(unit(1, 0), -1.0) == [("a", 1.0), ("b", 0.0)]
    idx.add("a", unit(0, 1))  # same id: the row is replaced, not added
    assert len(idx) == 2 and np.allclose(idx.vector("a"), unit(0, 1))
    assert [i for i, _ in idx.ranked(unit(1, 0), -1.0)] == ["a", "b"]  # tied at 0: by id
    idx.remove("a")
    idx.remove("never added")  # no error
    assert len(idx) == 1 and "a" not in idx
    assert idx.ranked(unit(0, 1), -1.0) == [("b", 1.0)]
    idx.remove("b")
    assert idx.ranked(unit(0, 1), -1.0) == []
    idx.add("a", unit(1, 1))  # re-added after removal: live again
    assert idx.ranked(unit(1, 1), 0.5) == [("a", pytest.approx(1.0))]


def test_scores_are_float32_dot_products_of_the_stored_vectors():
    idx = VectorIndex(2)
    idx.add("a", unit(1, 3))
    q = unit(2, 1)
    [(oid, score)] = idx.ranked(q, -1.0)
    assert oid == "a" and score == float(np.float32(score))  # float32 rows, as the embedder's vectors
    assert score == pytest.approx(float(unit(1, 3) @ q), abs=1e-6)


def test_the_index_grows_past_its_initial_capacity_without_losing_rows():
    idx = VectorIndex(3)
    rng = np.random.default_rng(0)
    vecs = {f"o{i:02d}": unit(*rng.normal(size=3)) for i in range(40)}
    for oid, v in vecs.items():
        idx.add(oid, v)
    assert len(idx) == 40
    for oid, v in vecs.items():
        assert np.allclose(idx.vector(oid), v)
        assert idx.ranked(v, 0.999, 1)[0][0] == oid


def test_ranking_keeps_scores_at_or_above_the_floor_best_first_ties_by_id_and_at_most_limit():
    idx = VectorIndex(2)
    for oid, v in [("d", unit(1, 1)), ("c", unit(1, 0)), ("b", unit(1, 0)), ("a", unit(0, 1)), ("e", unit(-1, 0))]:
        idx.add(oid, v)
    q = unit(1, 0)
    full = idx.ranked(q, -1.0)
    assert [i for i, _ in full] == ["b", "c", "d", "a", "e"]
    assert [s for _, s in full] == pytest.approx([1.0, 1.0, 2**-0.5, 0.0, -1.0])
    assert [i for i, _ in idx.ranked(q, 0.0)] == ["b", "c", "d", "a"]  # >= the floor
    assert [i for i, _ in idx.ranked(q, 2**-0.5 + 1e-6)] == ["b", "c"]
    assert [i for i, _ in idx.ranked(q, -1.0, 1)] == ["b"]  # the tie is broken by id, whatever the add order
    assert [i for i, _ in idx.ranked(q, -1.0, 2)] == ["b", "c"]
    assert [i for i, _ in idx.ranked(q, -1.0, 3)] == ["b", "c", "d"]
    assert [i for i, _ in idx.ranked(q, 0.0, 10)] == ["b", "c", "d", "a"]
    assert idx.ranked(q, -1.0, 0) == [] and idx.ranked(q, -1.0, -1) == []


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)).filter(lambda t: t != (0, 0)), min_size=1, max_size=20),
    st.integers(1, 6),
    st.permutations(range(20)),
)
def test_ranking_equals_a_sort_of_all_live_scores_whatever_the_insertion_order(points, limit, perm):
    vecs = {f"o{i:02d}": unit(*p) for i, p in enumerate(points)}
    q = unit(1, 2)
    order = [f"o{i:02d}" for i in perm if i < len(points)]
    idx = VectorIndex(2)
    for oid in order:
        idx.add(oid, vecs[oid])
    scores = {oid: float(np.float32(vecs[oid] @ q)) for oid in vecs}
    expected = sorted((oid for oid in vecs if scores[oid] >= 0.0), key=lambda o: (-scores[o], o))[:limit]
    assert [i for i, _ in idx.ranked(q, 0.0, limit)] == expected


# -- recall_index: scoped recall ----------------------------------------------------------------------------


def recall_index(flat: bool = False) -> RecallIndex:
    return RecallIndex(Embedder("lexical"), flat=flat)


def memory(mid: str, level: str, text: str) -> Memory:
    return Memory(id=mid, level=level, text=text, family=mid, fixture=fixture(level=level))  # type: ignore[arg-type]


def test_hard_scope_keys_indexes_by_level_and_flat_scope_pools_every_level():
    hard, flat = recall_index(), recall_index(flat=True)
    assert hard.key("team") == "team" and flat.key("team") == FLAT == flat.key("agent")
    for ri in (hard, flat):
        ri.add_memory(memory("m1", "team", "sort the list"))
        ri.add_skill(skill("k1.v1", "team"))
    q = hard.embed("sort the list")
    assert hard.search_memories("agent", q, 3, -1.0) == [] and [
        i for i, _ in hard.search_memories("team", q, 3, -1.0)
    ] == ["m1"]
    assert [i for i, _ in flat.search_memories("agent", q, 3, -1.0)] == ["m1"]
    skills = {"k1.v1": skill("k1.v1", "team")}
    assert hard.search_skills("event", q, "ctx", skills, 2, -1.0) == []
    assert [s.id for s, _ in flat.search_skills("event", q, "ctx", skills, 2, -1.0)] == ["k1.v1"]
    assert hard.memories("team") is hard.memories("team") and hard.memories("team") is not hard.skills("team")


def test_objects_are_embedded_by_their_text_and_a_skill_by_its_match_text():
    ri = recall_index()
    m = memory("m1", "team", "sort the numbers")
    sk = skill("k1.v1", "team")
    ri.add_memory(m)
    ri.add_skill(sk)
    assert np.allclose(ri.memories("team").vector("m1"), ri.embed(m.text))
    assert np.allclose(ri.skills("team").vector("k1.v1"), ri.embed(sk.content.match_text()))
    given_vec = unit(*([1.0] + [0.0] * (ri.embedder.dim - 1)))
    ri.add_memory(memory("m2", "team", "x"), given_vec)
    ri.add_skill(skill("k2.v1", "team"), given_vec)
    assert np.allclose(ri.memories("team").vector("m2"), given_vec)
    assert np.allclose(ri.skills("team").vector("k2.v1"), given_vec)
    ri.remove_memory(m)
    ri.remove_skill(sk)
    assert "m1" not in ri.memories("team") and "k1.v1" not in ri.skills("team") and "m2" in ri.memories("team")


def test_rebuild_replaces_the_index_with_exactly_the_given_objects():
    ri = recall_index()
    ri.add_memory(memory("old", "agent", "old text"))
    ri.add_skill(skill("old.v1", "agent"))
    mems = [memory("m1", "team", "sort numbers"), memory("m2", "agent", "walk left")]
    sks = [skill("k1.v1", "team"), skill("k2.v1", "event")]
    ri.rebuild(mems, sks)
    assert "old" not in ri.memories("agent") and "old.v1" not in ri.skills("agent")
    assert "m1" in ri.memories("team") and "m2" in ri.memories("agent") and "k2.v1" in ri.skills("event")
    live = recall_index()
    for m in mems:
        live.add_memory(m)
    for s in sks:
        live.add_skill(s)
    assert np.allclose(ri.skills("team").vector("k1.v1"), live.skills("team").vector("k1.v1"))
    assert np.allclose(ri.memories("agent").vector("m2"), live.memories("agent").vector("m2"))
    calls: list[int] = []
    embed = ri.embedder.embed
    ri.embedder.embed = lambda texts: calls.append(len(texts)) or embed(texts)  # type: ignore[method-assign]
    ri.rebuild(mems, sks)
    assert calls == [2, 2]  # one batch of memories, one of skills: no object embedded on its own
    ri.rebuild([], [])
    assert len(ri.memories("team")) == 0 and len(ri.skills("team")) == 0


def test_search_returns_the_best_k_skills_whose_predicate_admits_the_context():
    ri = recall_index()
    skills = {}
    for i in range(6):
        pred = Predicate(none_of=["left"]) if i < 5 else Predicate()
        sk = skill(f"k{i}.v1", "team", content=content(name=f"n{i}", predicate=pred))
        skills[sk.id] = sk
        ri.add_skill(sk, unit(*([1.0, 0.1 * i] + [0.0] * (ri.embedder.dim - 2))))
    q = unit(*([1.0] + [0.0] * (ri.embedder.dim - 1)))
    assert [s.id for s, _ in ri.search_skills("team", q, "walk right", skills, 2, -1.0)] == ["k0.v1", "k1.v1"]
    # "left" excludes the five best: the first 4k ranked hold none, so the whole scope is ranked once
    got = ri.search_skills("team", q, "walk LEFT now", skills, 1, -1.0)
    assert [s.id for s, _ in got] == ["k5.v1"] and got[0][1] == pytest.approx(
        float(skills and q @ ri.skills("team").vector("k5.v1"))
    )
    assert ri.search_skills("team", q, "walk left", skills, 2, -1.0) == [(skills["k5.v1"], pytest.approx(got[0][1]))]
    assert ri.search_skills("team", q, "walk right", skills, 0, -1.0) == []
    # every skill excluded, more of them than the first 4k ranked: the whole scope is ranked, and nothing found
    blocked = {sid: sk for sid, sk in skills.items() if sid != "k5.v1"}
    ri.remove_skill(skills["k5.v1"])
    assert ri.search_skills("team", q, "go left", blocked, 1, -1.0) == []
    assert ri.search_skills("team", q, "walk right", skills, 2, 0.999) == [(skills["k0.v1"], pytest.approx(1.0))]


def test_memory_search_is_top_k_above_the_floor_and_empty_for_k_zero():
    ri = recall_index()
    for i in range(4):
        ri.add_memory(memory(f"m{i}", "agent", "x"), unit(*([1.0, 0.5 * i] + [0.0] * (ri.embedder.dim - 2))))
    q = unit(*([1.0] + [0.0] * (ri.embedder.dim - 1)))
    assert [i for i, _ in ri.search_memories("agent", q, 2, -1.0)] == ["m0", "m1"]
    assert [i for i, _ in ri.search_memories("agent", q, 1, -1.0)] == ["m0"]
    assert ri.search_memories("agent", q, 0, -1.0) == []
    assert [i for i, _ in ri.search_memories("agent", q, 9, 0.8)] == ["m0", "m1"]


# -- prompts: the builders ----------------------------------------------------------------------------------


def test_a_prompt_is_a_tagged_system_message_and_its_input_as_sorted_json():
    msgs = prompts.messages(prompts.PROCEDURAL_REPAIR, {"b": 1, "a": "é"})
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"].startswith("[aecg:procedural_repair] You revise a skill by procedural repair")
    assert msgs[1]["content"] == 'INPUT:\n{\n "a": "é",\n "b": 1\n}'
    assert prompts.kind_of(msgs) == prompts.PROCEDURAL_REPAIR
    assert prompts.payload_of(msgs) == {"a": "é", "b": 1}


def test_every_kind_round_trips_and_an_unknown_kind_names_the_valid_ones():
    assert prompts.KINDS == ("skill_abstraction", "failure_attribution", "context_narrowing", "procedural_repair")
    for kind in prompts.KINDS:
        msgs = prompts.messages(kind, {"k": kind})
        assert prompts.kind_of(msgs) == kind and prompts.payload_of(msgs) == {"k": kind}
    with pytest.raises(ValueError, match=r"unknown AECG prompt 'nope'; valid: skill_abstraction, failure_attribution"):
        prompts.messages("nope", {})


def test_other_prompts_have_no_kind_and_no_payload():
    assert prompts.kind_of([{"role": "user", "content": "[aecg:x] hi"}]) is None  # only the system message counts
    assert prompts.kind_of([{"role": "system", "content": "You are an agent. [aecg:skill_abstraction]"}]) is None
    assert prompts.kind_of([{"role": "system", "content": None}, {"role": "system", "content": "[aecg:x]"}]) is None
    assert (
        prompts.kind_of([{"role": "user", "content": "hi"}, {"role": "system", "content": "[aecg:repair2] x"}])
        == "repair2"
    )
    assert prompts.kind_of([]) is None
    assert prompts.payload_of([{"role": "user", "content": "no input"}]) == {}
    assert prompts.payload_of([{"role": "assistant", "content": 'INPUT:\n{"a": 1}'}]) == {}
    two = [{"role": "user", "content": 'INPUT:\n{"a": 1}'}, {"role": "user", "content": 'INPUT:\n{"a": 2}'}]
    assert prompts.payload_of(two) == {"a": 2}  # the last one
    assert prompts.payload_of([{"role": "user", "content": 'INPUT:\n{"a": 1}'}, {"role": "user", "content": None}]) == {
        "a": 1
    }


# -- explain: the audit read-back ------------------------------------------------------------------------------


def _belief(sa: float, sb: float, fa: float, fb: float, events: int = 0) -> dict:
    return {
        "slow": {"alpha": sa, "beta": sb},
        "fast": {"alpha": fa, "beta": fb},
        "events": events,
        "origin": None,
        "peak": None,
    }


def audit_log() -> list[dict]:
    a = AuditLog()
    r = a.record
    r("memory_created", memory="m1", level="team", task="t1", pos=1.0, text="x")
    r("memory_created", memory="m9", level="team", task="t5", pos=1.0, text="y")  # not the seed: skipped
    r("belief_update", memory="m1", success=True, weight=0.5, before={}, after={}, task="t2")
    r("memory_supported", memory="m1", level="team", task="t2", similarity=0.95, before={}, after={})
    r("belief_update", memory="m1", success=False, weight=0.25, before={}, after={}, badcase="b1")
    r(
        "promotion",
        skill="L.v1",
        lineage="L",
        level="team",
        seed="m1",
        neighbours=["m9"],
        seed_evidence={"pos": 1.5, "neg": 0.25, "support": 2},
        inherit_fraction=0.5,
        belief=_belief(2, 1, 3, 1),
        content={},
    )
    r("memory_supported", memory="m1", level="team", task="t8", similarity=0.95, before={}, after={})
    r(
        "belief_update",
        skill="L.v1",
        lineage="L",
        success=True,
        weight=0.75,
        before={},
        after=_belief(2.75, 1, 3.5, 1),
        task="t3",
    )
    r("belief_update", memory="m1", success=True, weight=1.0, before={}, after={}, task="t8")
    r(
        "belief_update",
        skill="L.v1",
        lineage="L",
        success=True,
        weight=0.5,
        before={},
        after=_belief(3.25, 1, 4, 1),
        task="t6",
    )
    r(
        "admit_failure",
        mode="asymmetric",
        failure_mode="procedure",
        weight=1.0,
        skill="L.v1",
        lineage="L",
        badcase="b2",
        task="t4",
        judgements=[],
        reason="both judges",
        mean_confidence=0.85,
    )
    r(
        "belief_update",
        skill="L.v1",
        lineage="L",
        success=False,
        weight=1.0,
        before={},
        after=_belief(2.75, 2, 3.5, 4),
        badcase="b2",
    )
    r(
        "review",
        skill="L.v1",
        lineage="L",
        round=2,
        drift={"score": 0.12345, "consistency": 0.951},
        exposure=1.5,
        severity=0.2,
        belief={},
        route="repair",
        route_reason="",
        failure_fixtures=["t4"],
        success_fixtures=[],
    )
    r(
        "intervention",
        skill="L.v1",
        lineage="L",
        route="repair",
        outcome="candidate",
        candidate="L.v2",
        changed=["procedure", "avoidance"],
        content={},
        reason="step 2 was wrong",
    )
    r(
        "replay",
        skill="L.v1",
        lineage="L",
        candidate="L.v2",
        route="repair",
        results=[],
        gate={"decision": "activate", "reason": "mitigated 2/2"},
    )
    r("activation", skill="L.v2", lineage="L", parent="L.v1", route="repair", reason="mitigated 2/2", belief={})
    r(
        "review",
        skill="L.v2",
        lineage="L",
        round=3,
        drift={"score": 0.2, "consistency": 0.5},
        exposure=0.25,
        severity=0.1,
        belief={},
        route="narrowing",
        route_reason="",
        failure_fixtures=[],
        success_fixtures=[],
    )
    r("intervention", skill="L.v2", lineage="L", route="narrowing", outcome="no_change", reason="no safe predicate")
    r(
        "intervention",
        skill="L.v2",
        lineage="L",
        route="narrowing",
        outcome="candidate",
        candidate="L.v3",
        changed=["applicability"],
        content={},
        reason="",
    )
    r(
        "replay",
        skill="L.v2",
        lineage="L",
        candidate="L.v3",
        route="narrowing",
        results=[],
        gate={"decision": "isolate", "reason": "regressed 1/2"},
    )
    r("isolation", skill="L.v3", lineage="L", parent="L.v2", reason="regressed 1/2", parent_stays_active=True)
    r(
        "intervention",
        skill="L.v2",
        lineage="L",
        route="repair",
        outcome="candidate",
        candidate="L.v4",
        changed=["procedure"],
        content={},
        reason="check first",
    )
    r(
        "replay",
        skill="L.v2",
        lineage="L",
        candidate="L.v4",
        route="repair",
        results=[],
        gate={"decision": "monitor", "reason": "too few successes"},
    )
    r("monitoring", skill="L.v4", lineage="L", parent="L.v2", reason="too few successes", parent_stays_active=True)
    return a.events


ORIGIN = [
    "  #6 promoted from memory m1 at team level (seed evidence {'pos': 1.5, 'neg': 0.25, 'support': 2}, "
    "neighbours ['m9'], inherited fraction 0.5; slow mean 0.67, fast mean 0.75)",
    "    #1 seed memory created by task t1",
    "    #3 seed credited: success of task t2 (weight 0.50)",
    "    #4 seed memory supported by task t2",
    "    #5 seed credited: admitted failure b1 (weight 0.25)",  # not #7, #10: after the promotion
]
V2_ORIGIN = [
    *ORIGIN,
    "  #14 repair of L.v1 proposed L.v2 (changed procedure, avoidance; step 2 was wrong)",
    "  #15 replay: activate (mitigated 2/2)",
    "  #16 activated, superseding L.v1",
]


def test_explain_walks_a_superseded_version_back_to_its_seed_and_lists_its_evidence_and_reviews():
    assert explain(audit_log(), "L.v1") == [
        "L.v1: superseded",
        *ORIGIN,
        "  evidence: 2 admitted successes (mass 1.25), 1 admitted failures; now slow mean 0.58, fast mean 0.47",
        "  #11 failure admitted from b2 (task t4, asymmetric, mode procedure, mean confidence 0.85)",
        "  #13 reviewed in round 2: drift 0.123 (consistency 0.95), exposure 1.50, route repair",
        "  #16 superseded by L.v2 (mitigated 2/2)",
    ]


def test_explain_of_an_active_repair_shows_its_intervention_replay_activation_and_its_candidates_fates():
    assert explain(audit_log(), "L.v2") == [
        "L.v2: active",
        *V2_ORIGIN,
        "  #17 reviewed in round 3: drift 0.200 (consistency 0.50), exposure 0.25, route narrowing",
        "  #18 no change: no safe predicate",
        "  #21 candidate L.v3 isolation: regressed 1/2; L.v2 stays active",
        "  #24 candidate L.v4 monitoring: too few successes; L.v2 stays active",
    ]


def test_explain_of_isolated_and_monitored_candidates_states_the_gates_verdict():
    events = audit_log()
    assert explain(events, "L.v3") == [
        "L.v3: isolated",
        *V2_ORIGIN,
        "  #19 narrowing of L.v2 proposed L.v3 (changed applicability; no reason given)",
        "  #20 replay: isolate (regressed 1/2)",
        "  #21 isolation: regressed 1/2",
    ]
    assert explain(events, "L.v4") == [
        "L.v4: monitored (inactive candidate awaiting replay evidence)",
        *V2_ORIGIN,
        "  #22 repair of L.v2 proposed L.v4 (changed procedure; check first)",
        "  #23 replay: monitor (too few successes)",
        "  #24 monitoring: too few successes",
    ]


def test_explain_answers_at_any_time_from_a_prefix_of_the_log():
    events = audit_log()
    assert explain(events[:12], "L.v1")[0] == "L.v1: active"
    assert explain(events[:14], "L.v2") == ["L.v2: candidate (inactive)", *V2_ORIGIN[:-2]]
    assert explain(events[:5], "L.v1") == ["L.v1: unknown", "  no promotion or intervention event for L.v1 in this log"]
    assert explain(events, "m1") == ["m1: unknown", "  no promotion or intervention event for m1 in this log"]


# The paper (appendix D) publishes each memory-side prompt's constraints, not its wording: each phrase below is
# where our wording states one of them, so dropping a constraint from a prompt turns this test red.
PAPER_CONSTRAINTS = {
    prompts.SKILL_ABSTRACTION: [
        "SEED memory is the primary evidence",  # seed as primary evidence
        "AUXILIARY memories are supplementary",
        "Preserve the coordination scope",
        "granularity of the seed",  # target granularity
        "Remove task-specific details",
        '"applicability"',
        '"triggers"',
        '"procedure"',
        '"avoidance"',
        '"evidence_summary"',
    ],
    prompts.FAILURE_ATTRIBUTION: [
        "through a specific clause of its text that the trace shows was applied",
        "the observed behaviour that followed",
        "Test alternative explanations",
        "Abstain when the evidence is incomplete",
        "when candidates cannot be told apart",
        "when a non-memory explanation is stronger",
        "one of two independent judges",  # admission needs the judges' agreement
    ],
    prompts.CONTEXT_NARROWING: [
        "minimal pre-execution applicability predicate supported by the bad cases",
        "Revise only the applicability and the triggers",
        "it is activated only after replay",
        "Abstain if no safe predicate can represent the failure region, or if it would exclude valid uses",
    ],
    prompts.PROCEDURAL_REPAIR: [
        "Change only the steps or avoidance rules that the bad cases show to be defective",
        "keep every useful step and keep the scope",
        "Do not change the applicability or the triggers",
        "Do not hard-code any single bad case",
        "it is activated only after replay",
    ],
}


@pytest.mark.parametrize("kind", prompts.KINDS)
def test_each_prompt_states_the_constraints_the_paper_lists_for_it(kind):
    system = prompts.messages(kind, {})[0]["content"]
    for phrase in PAPER_CONSTRAINTS[kind]:
        assert phrase in system, (kind, phrase)


# -- simulation: the detection delays docs/memory/aecg.md reports ------------------------------------------


def delays(c: Corruption, fast: bool, seeds: int = 200) -> tuple[float, float, float]:
    """(mean uses to review, share missed, share of streams with a false alarm), as scripts/aecg_detection_delay.py."""
    out = [detection_delay(c, s, BeliefParams(fast=fast), DriftParams()) for s in range(seeds)]
    mean = sum(d if d is not None else c.horizon for d, _ in out) / seeds
    return round(mean, 2), sum(d is None for d, _ in out) / seeds, sum(fa > 0 for _, fa in out) / seeds


def test_the_documented_detection_delays_are_what_the_simulation_computes():
    """docs/memory/aecg.md, "Detection delay": 200 streams, 20 uses at 90 %, then 20 %."""
    c = Corruption(history=20, p_before=0.9, p_after=0.2)
    assert delays(c, fast=True) == (3.17, 0.0, 0.035)
    assert delays(c, fast=False) == (4.83, 0.0, 0.02)
    noisy = Corruption(history=20, p_before=0.9, p_after=0.2, admission_noise=0.5, review_every=5)
    assert delays(noisy, fast=True) == (9.45, 0.01, 0.0)
    assert delays(noisy, fast=False) == (11.1, 0.0, 0.0)


def test_streams_are_the_given_success_rates_before_and_after_the_corruption():
    c = Corruption(history=7, p_before=1.0, p_after=0.0, horizon=5)
    assert outcome_stream(c, 0) == [True] * 7 + [False] * 5
    mixed = Corruption(history=400, p_before=0.9, p_after=0.2, horizon=400)
    stream = outcome_stream(mixed, 1)
    assert 0.85 < sum(stream[:400]) / 400 < 0.95 and 0.15 < sum(stream[400:]) / 400 < 0.25
    assert admitted_stream(Corruption(admission_noise=0.0), 0) == [True] * 80
    assert admitted_stream(Corruption(admission_noise=1.0), 0) == [False] * 80
    half = admitted_stream(Corruption(history=300, horizon=300, admission_noise=0.5), 2)
    assert 0.4 < sum(half) / 600 < 0.6 and half != admitted_stream(
        Corruption(history=300, horizon=300, admission_noise=0.5), 3
    )


def test_a_certain_corruption_is_found_at_a_review_round_and_never_when_no_failure_is_admitted():
    sure = Corruption(history=20, p_before=1.0, p_after=0.0)
    for seed in range(5):
        d, alarms = detection_delay(sure, seed, BeliefParams(), DriftParams())
        assert d is not None and 1 <= d <= 5 and alarms == 0
        d5, _ = detection_delay(
            Corruption(history=20, p_before=1.0, p_after=0.0, review_every=5), seed, BeliefParams(), DriftParams()
        )
        assert d5 is not None and d5 % 5 == 0  # rounds only every 5th use: uses 25, 30, ...
        hidden = Corruption(history=20, p_before=1.0, p_after=0.0, admission_noise=1.0)
        assert detection_delay(hidden, seed, BeliefParams(), DriftParams()) == (None, 0)


def test_a_skill_qualifies_only_after_min_uses_uses():
    sure = Corruption(history=20, p_before=1.0, p_after=0.0)
    for seed in range(3):  # detected within 1-2 uses with the default; not before use 30 with min_uses=30
        assert detection_delay(sure, seed, BeliefParams(), DriftParams(min_uses=30)) == (10, 0)


def test_every_false_alarm_is_counted_and_starts_a_cooldown_of_new_evidence_events():
    def run(cooldown: int) -> list[tuple[int | None, int]]:
        c = Corruption(history=60, p_before=0.7, p_after=0.0, cooldown=cooldown)
        return [detection_delay(c, s, BeliefParams(), DriftParams()) for s in range(30)]

    alarms = {cd: [fa for _, fa in run(cd)] for cd in (1, 2, 5)}
    assert all(fa >= 0 for fa in alarms[5]) and 1 in alarms[5] and max(alarms[5]) >= 2
    # a shorter cooldown re-reviews sooner: cooldown 1 makes the very next use eligible again
    assert sum(alarms[1]) > sum(alarms[2]) > sum(alarms[5]) > 0
    # a cooldown longer than the rest of the stream: one false alarm at most, and the corruption is then missed
    for d, fa in run(1000):
        assert fa <= 1 and (d is None if fa else d is not None)
