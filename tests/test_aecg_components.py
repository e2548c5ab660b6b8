"""AECG's parts without a run: parsing, admission rule, predicates, intervention constraints, replay gate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aecg_bench.aecg import llm_json
from aecg_bench.aecg.admission import decide, family_credit, parse_judgement, success_confidence
from aecg_bench.aecg.formation import parse_skill
from aecg_bench.aecg.intervention import NARROWING, NO_CHANGE, REPAIR, hardcoded, parse_narrowing, parse_repair, route
from aecg_bench.aecg.objects import Fixture, SkillContent
from aecg_bench.aecg.params import ReplayParams
from aecg_bench.aecg.predicate import Predicate, clean_terms, normalised
from aecg_bench.aecg.replay import ACTIVATE, ISOLATE, MONITOR, FixtureResult, gate, replay_fixture, split
from aecg_bench.types import Outcome

# -- robust JSON -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        'Sure! Here it is:\n```json\n{"a": 1}\n```\nHope this helps.',
        "Verdict: {'a': 1} as requested",
        'noise {not json} then {"a": 1, "b": {"c": "}"}}',
    ],
)
def test_json_is_found_in_prose_fences_and_python_literals(text):
    assert llm_json.parse_object(text)["a"] == 1


@pytest.mark.parametrize("text", ["", "no json here", '{"a": 1', "[1, 2]", "{" * 500])
def test_unreadable_replies_parse_to_none(text):
    assert llm_json.parse_object(text) is None


def test_confidences_and_lists_are_normalised():
    assert llm_json.as_confidence("85%") == 0.85
    assert llm_json.as_confidence(0.7) == 0.7
    assert llm_json.as_confidence("high") is None
    assert llm_json.as_confidence(float("nan")) is None
    assert llm_json.as_str_list("1. plan\n2. act") == ["plan", "act"]


# -- admission -------------------------------------------------------------------

SCOPES = {"s1.v1": "team", "m3": "agent"}


def verdict(skill="s1.v1", scope="team", conf=0.9, mode="procedure") -> str:
    return f'{{"abstain": false, "skill_id": "{skill}", "scope": "{scope}", "confidence": {conf}, "failure_mode": "{mode}"}}'


def test_both_judges_naming_the_same_object_and_scope_admit_a_failure():
    a = parse_judgement(verdict(), 0, SCOPES)
    b = parse_judgement(verdict(conf=0.5), 1, SCOPES)
    att = decide([a, b], SCOPES, 0.70)
    assert att.admitted == "s1.v1" and att.mean_confidence == pytest.approx(0.70)
    assert att.failure_mode == "procedure"


@pytest.mark.parametrize(
    ("second", "why"),
    [
        (verdict(skill="m3", scope="agent"), "different objects"),
        (verdict(scope="agent"), "different scopes"),
        (verdict(conf=0.49), "mean confidence"),
        ('{"abstain": true}', "abstained"),
        ("I think it was probably the planner.", "unparsable"),
        (verdict(skill="s9.v1"), "named no recalled object"),
    ],
)
def test_any_disagreement_abstention_or_low_confidence_leaves_the_failure_unresolved(second, why):
    att = decide([parse_judgement(verdict(), 0, SCOPES), parse_judgement(second, 1, SCOPES)], SCOPES, 0.70)
    assert att.admitted is None
    assert why in att.reason


def test_a_scope_that_is_not_the_objects_own_is_refused():
    wrong = verdict(scope="agent")
    att = decide([parse_judgement(wrong, 0, SCOPES), parse_judgement(wrong, 1, SCOPES)], SCOPES, 0.70)
    assert att.admitted is None and "not the object's" in att.reason


def test_mode_is_kept_only_when_the_judges_agree_on_it():
    a = parse_judgement(verdict(mode="applicability"), 0, SCOPES)
    b = parse_judgement(verdict(mode="procedure"), 1, SCOPES)
    assert decide([a, b], SCOPES, 0.7).failure_mode == "unclear"


def test_success_credit_is_divided_across_provenance_families():
    credit = family_credit({"s1.v1": "m1", "m1": "m1", "m5": "m5"}, 1.0)
    assert credit == {"s1.v1": 0.25, "m1": 0.25, "m5": 0.5}
    assert family_credit({}, 1.0) == {}
    assert success_confidence(Outcome(success=True, value=0.4)) == 0.4
    assert success_confidence(Outcome(success=True, value=None)) == 1.0
    assert success_confidence(Outcome(success=True, value=35.0)) == 1.0


# -- predicates and intervention ------------------------------------------------------


def content(**kw) -> SkillContent:
    base = dict(
        name="walk",
        applicability="agent decisions in walking tasks",
        triggers=["a target is named"],
        procedure=["move toward the target", "stop on the target"],
        avoidance=["do not overshoot"],
        evidence_summary="3 successes",
    )
    return SkillContent(**{**base, **kw})


def fixture(task_id: str, task_type: str, success: bool, context: str = "You are at cell 3.") -> Fixture:
    return Fixture(task_id, task_type, "Walk to the target cell.", "agent", "solver", "actor", context, "stop", success)


def test_predicate_terms_match_whole_words_of_the_decision_context():
    p = Predicate(all_of=["walk"], none_of=["type left"])
    assert p.admits(normalised(fixture("a", "right", True).text()))
    assert not p.admits(normalised("task type: left\ntask: walk"))
    assert not p.admits(normalised("sidewalk"))
    assert clean_terms(["Left!", "left", 3, "a b c d e", ""], 5) == ["left"]


def test_routing_follows_the_qualified_failure_modes():
    assert route(["applicability", "procedure", "applicability"])[0] == NARROWING
    assert route(["procedure", "procedure", "applicability"])[0] == REPAIR
    assert route(["applicability", "procedure"])[0] == NARROWING  # tie: least invasive
    assert route(["unclear"])[0] == NO_CHANGE
    assert route([])[0] == NO_CHANGE


def test_narrowing_changes_only_applicability_triggers_and_predicate():
    reply = (
        '{"abstain": false, "predicate": {"all_of": [], "none_of": ["left", "west", "back", "up"]},'
        ' "applicability": "only rightward walks", "triggers": ["target is to the right"],'
        ' "procedure": ["do something else"]}'
    )
    new, _ = parse_narrowing(reply, content(), max_terms=3)
    assert new is not None
    assert new.procedure == content().procedure and new.avoidance == content().avoidance
    assert new.predicate.none_of == ["left", "west", "back"]
    assert new.applicability == "only rightward walks"
    assert parse_narrowing('{"abstain": true, "reason": "would over-exclude"}', content(), 3)[0] is None
    assert parse_narrowing('{"predicate": {}}', content(), 3)[0] is None
    assert parse_narrowing("nonsense", content(), 3)[0] is None


def test_repair_changes_only_procedure_and_avoidance_and_may_not_hard_code_a_bad_case():
    bad = [fixture("task-17", "right", False, "You are at cell 3. The target is cell 9.")]
    ok = '{"procedure": ["move toward the target", "check the goal before stopping"], "applicability": "x"}'
    new, _ = parse_repair(ok, content(), bad, 6)
    assert new is not None and new.applicability == content().applicability
    assert new.procedure[-1] == "check the goal before stopping" and new.avoidance == content().avoidance
    quoting = '{"procedure": ["if you are at cell 3 the target is cell 9 so move right"]}'
    assert parse_repair(quoting, content(), bad, 6)[0] is None
    naming = '{"procedure": ["for task-17 move right six times"]}'
    assert "task id" in parse_repair(naming, content(), bad, 6)[1]
    same = '{"procedure": ["move toward the target", "stop on the target"], "avoidance": ["do not overshoot"]}'
    assert parse_repair(same, content(), bad, 6)[0] is None
    assert hardcoded(["stop on the target"], content(), bad, 6) is None


def test_skill_abstraction_needs_applicability_and_a_procedure():
    good, _ = parse_skill('{"name": "n", "applicability": "when", "procedure": "1. a\\n2. b"}')
    assert good is not None and good.procedure == ["a", "b"] and good.predicate.empty
    assert parse_skill('{"name": "n", "procedure": ["a"]}')[0] is None
    assert parse_skill("no")[0] is None


# -- replay gate ------------------------------------------------------------------------


def scripted_agent(calls: list[list[dict[str, str]]]):
    """An agent that stops when the skill it is shown says to stop, and otherwise walks right."""

    def execute(messages: list[dict[str, str]]) -> str:
        calls.append(messages)
        return "Stop" if "stop on the target" in messages[0]["content"] else "move right"

    return execute


def test_replay_re_executes_the_recorded_decision_with_parent_and_candidate_and_scores_against_the_record():
    calls: list = []
    repaired = content(procedure=["move toward the target", "check the goal first"])
    bad, good = fixture("f1", "right", False), fixture("s1", "right", True)  # both recorded "stop"
    fail = replay_fixture(bad, "failure", content(), repaired, "agent", scripted_agent(calls))
    keep = replay_fixture(good, "success", content(), repaired, "agent", scripted_agent(calls))
    # parent reproduces the implicated "stop"; the candidate departs from it: mitigated
    assert (fail.parent_pass, fail.candidate_pass) == (False, True)
    # on the supported success the candidate no longer does what worked: a regression
    assert (keep.parent_pass, keep.candidate_pass) == (True, False)
    assert gate([fail, keep], ReplayParams()).decision == ISOLATE
    # paired: the same recorded context and task in both prompts; only the skill differs
    (p_sys, p_user), (c_sys, c_user) = ([m["content"] for m in c] for c in calls[:2])
    assert p_user == c_user and "You are at cell 3." in p_user and "Walk to the target cell." in p_sys
    assert "- [skill] Skill 'walk'" in p_sys and "stop on the target" in p_sys and "check the goal first" in c_sys


def test_a_narrowed_candidate_is_replayed_without_the_skill_where_its_predicate_excludes_the_context():
    calls: list = []
    narrowed = content(predicate=Predicate(none_of=["left"]))
    fail = replay_fixture(fixture("f1", "left", False), "failure", content(), narrowed, "agent", scripted_agent(calls))
    keep = replay_fixture(fixture("s1", "right", True), "success", content(), narrowed, "agent", scripted_agent(calls))
    assert "[skill]" not in calls[1][0]["content"] and "[skill]" in calls[3][0]["content"]
    assert gate([fail, keep], ReplayParams()).decision == ACTIVATE
    over = content(predicate=Predicate(none_of=["walk"]))  # excludes the supported success too
    results = [
        replay_fixture(fixture("f1", "left", False), "failure", content(), over, "agent", scripted_agent([])),
        replay_fixture(fixture("s1", "right", True), "success", content(), over, "agent", scripted_agent([])),
    ]
    assert gate(results, ReplayParams()).decision == ISOLATE


def test_an_empty_replayed_decision_never_counts_for_the_candidate():
    res = replay_fixture(fixture("f", "x", False), "failure", content(), content(name="w2"), "agent", lambda m: "")
    assert not res.candidate_pass and not res.parent_pass
    ok = replay_fixture(fixture("s", "x", True), "success", content(), content(name="w2"), "agent", lambda m: " ")
    assert ok.parent_pass and not ok.candidate_pass


@given(st.lists(st.integers(0, 10**6), unique=True, max_size=40), st.floats(0.05, 0.95), st.integers(0, 99))
def test_the_held_out_split_is_disjoint_complete_and_fixed_per_fixture(numbers, fraction, seed):
    fixtures = [fixture(f"t{n}", "right", False) for n in numbers]
    shown, held = split(fixtures, "failure", f"{seed}:s1", fraction)
    assert {f.task_id for f in shown}.isdisjoint(f.task_id for f in held)
    assert len(shown) + len(held) == len(fixtures)
    # a fixture's side does not depend on which other fixtures exist (a monitored candidate's
    # later replay never reaches a fixture its reviser saw)
    for f in fixtures:
        alone_shown, _ = split([f], "failure", f"{seed}:s1", fraction)
        assert (f in shown) == bool(alone_shown)


def r(kind: str, parent: bool, cand: bool) -> FixtureResult:
    return FixtureResult("t", kind, parent, cand, "replayed")


@pytest.mark.parametrize(
    ("results", "decision"),
    [
        ([r("failure", False, True), r("success", True, True)], ACTIVATE),
        ([r("failure", False, False), r("success", True, True)], ISOLATE),
        ([r("failure", False, True), r("success", True, False)], ISOLATE),
        ([r("failure", True, True), r("success", True, True)], MONITOR),  # failure not reproduced
        ([r("failure", False, True)], MONITOR),  # no supported success to check preservation
        (
            [r("failure", False, True)] + [r("success", True, True)] * 4 + [r("success", True, False)],
            ACTIVATE,  # 1/5 regressed is within the 0.2 tolerance
        ),
    ],
)
def test_replay_gate_decisions(results, decision):
    assert gate(results, ReplayParams()).decision == decision
