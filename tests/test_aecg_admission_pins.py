"""Asymmetric admission and evidence-routed intervention pinned one rule at a time (issue 17: mutation
testing of `aecg/admission.py` and `aecg/intervention.py`; AECG sec. 3.2.2, 3.4.2, B.1, B.5).

Unit rules here (what a judge's verdict means, the agreement rule and its reasons, the payloads the
judges and revisers see, the constraints on a proposal); the same rules on the hand-built multi-level
framework in test_aecg_memory.py / test_aecg_fixes.py / test_aecg_governance_pins.py.
"""

from __future__ import annotations

import json
import re

import pytest
from aecg_fixtures import embedded_client, episode, events, make_memory
from conftest import mock_client
from gbnf_check import matches
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.aecg import prompts
from aecg_bench.aecg.admission import (
    Candidate,
    attribution_payload,
    decide,
    family_credit,
    parse_judgement,
    success_confidence,
)
from aecg_bench.aecg.beliefs import Belief, Beta
from aecg_bench.aecg.intervention import (
    NARROWING,
    NO_CHANGE,
    REPAIR,
    fixture_payload,
    hardcoded,
    intervention_payload,
    parse_narrowing,
    parse_repair,
    route,
    skill_payload,
)
from aecg_bench.aecg.mock_policy import mock_policy
from aecg_bench.aecg.objects import Fixture, Judgement, Skill, SkillContent
from aecg_bench.aecg.params import AdmissionParams
from aecg_bench.aecg.predicate import Predicate
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.types import Action, DecisionNode, Episode, Outcome, Task, Trajectory

SCOPES = {"s1.v1": "team", "m3": "agent"}


def verdict(**kw) -> str:
    base = {"abstain": False, "skill_id": "s1.v1", "scope": "team", "confidence": 0.9, "failure_mode": "procedure"}
    return json.dumps({**base, **kw})


def judged(i: int = 0, **kw) -> Judgement:
    return parse_judgement(verdict(**kw), i, SCOPES)


# -- success evidence ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "confidence"),
    [(None, 1.0), (0.0, 1.0), (-0.5, 1.0), (1e-9, 1e-9), (0.3, 0.3), (1.0, 1.0), (1.0000001, 1.0), (35.0, 1.0)],
)
def test_success_confidence_is_the_value_only_inside_0_1(value, confidence):
    assert success_confidence(Outcome(success=True, value=value)) == confidence


@settings(deadline=None)  # no wall-clock limit on a loaded machine
@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.sampled_from("xyz"), min_size=1),
    st.floats(0.01, 1.0),
)
def test_family_credit_gives_each_family_an_equal_share_split_among_its_members(families, confidence):
    credit = family_credit(families, confidence)
    assert set(credit) == set(families)
    assert sum(credit.values()) == pytest.approx(confidence)
    n_fam = len(set(families.values()))
    for fam in set(families.values()):
        members = [o for o, f in families.items() if f == fam]
        assert sum(credit[o] for o in members) == pytest.approx(confidence / n_fam)
        assert len({credit[o] for o in members}) == 1


# -- the judges' input --------------------------------------------------------------------------


def failed_episode(instruction: str = "Sort the numbers.") -> Episode:
    task = Task(id="t9", benchmark="hand", instruction=instruction, task_type="sort")
    traj = Trajectory(task_id="t9", framework="hand", initial_observation="unsorted")
    traj.add_decision(
        DecisionNode(
            id="d0",
            agent="team-agent",
            role="planner",
            level="team",
            parents=(),
            recalled_memory_ids=("s1.v1",),
            output="split",
            action=Action(kind="command", text="split"),
        )
    )
    return Episode(task=task, trajectory=traj, outcome=Outcome(success=False, value=0.25))


def test_the_judges_see_the_task_the_failed_outcome_the_trace_and_every_candidate():
    cand = Candidate("s1.v1", "skill", "team", "Skill text", ("d0",))
    payload = attribution_payload(failed_episode("x" * 2000), [cand], 40)
    assert payload["task"] == {"type": "sort", "instruction": "x" * 1500}
    assert payload["outcome"]["success"] is False and payload["outcome"]["value"] == 0.25
    assert payload["outcome"]["status"] == str(failed_episode().trajectory.status)
    assert [row["id"] for row in payload["trace"]] == ["d0"]
    assert payload["candidates"] == [
        {"id": "s1.v1", "kind": "skill", "scope": "team", "text": "Skill text", "used_at": ["d0"]}
    ]


# -- one judge's verdict ---------------------------------------------------------------------------


def test_a_verdict_is_read_field_by_field():
    j = parse_judgement(
        verdict(scope="TEAM", failure_mode="Applicability", clause="c", behaviour="b", alternatives_considered="r"),
        1,
        SCOPES,
    )
    assert j == Judgement(
        judge=1,
        abstain=False,
        skill_id="s1.v1",
        scope="team",
        confidence=0.9,
        failure_mode="applicability",
        clause="c",
        behaviour="b",
        reason="r",
    )
    assert parse_judgement(verdict(behavior="us spelling"), 0, SCOPES).behaviour == "us spelling"
    assert parse_judgement(verdict(skill_id="S1.V1"), 0, SCOPES).skill_id == "s1.v1"  # case of the id
    assert parse_judgement(verdict(failure_mode="weather"), 0, SCOPES).failure_mode == "unclear"
    assert parse_judgement(verdict(scope=""), 0, SCOPES).scope is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no verdict here", "unparsable verdict"),
        (json.dumps({"abstain": True, "alternatives_considered": "both plausible"}), "judge abstained: both plausible"),
        (json.dumps({"abstain": "yes", "reason": "unsure"}), "judge abstained: unsure"),
        (verdict(skill_id="s9.v1"), "named no recalled object ('s9.v1')"),
        (verdict(confidence="high"), "no readable confidence"),
    ],
)
def test_an_unusable_verdict_is_an_abstention_with_its_reason(text, reason):
    j = parse_judgement(text, 1, SCOPES)
    assert j == Judgement(
        judge=1, abstain=True, skill_id=None, scope=None, confidence=0.0, failure_mode="unclear", reason=reason
    )


# -- the agreement rule ------------------------------------------------------------------------------


def test_agreement_admits_at_exactly_the_minimum_mean_confidence():
    att = decide([judged(0, confidence=0.6), judged(1, confidence=0.8)], SCOPES, 0.7)
    assert (att.admitted, att.failure_mode, att.reason) == ("s1.v1", "procedure", "both judges agree")
    assert att.mean_confidence == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("second", "reason"),
    [
        (dict(skill_id="m3", scope="agent"), "judges named different objects (s1.v1 vs m3)"),
        (dict(scope="event"), "judges named different scopes (team vs event)"),
        (dict(confidence=0.4), "mean confidence 0.65 < 0.70"),
    ],
)
def test_disagreement_leaves_the_failure_unresolved_with_the_mean_and_the_reason(second, reason):
    att = decide([judged(0), judged(1, **second)], SCOPES, 0.7)
    assert (att.admitted, att.failure_mode, att.reason) == (None, "unclear", reason)
    assert att.mean_confidence == pytest.approx((0.9 + second.get("confidence", 0.9)) / 2)


def test_an_agreed_scope_that_is_not_the_objects_own_is_refused_with_both_scopes_named():
    att = decide([judged(0, scope="agent"), judged(1, scope="agent")], SCOPES, 0.7)
    assert (att.admitted, att.reason) == (None, "named scope agent is not the object's (team)")


def test_an_abstaining_judge_leaves_no_mean_and_is_named():
    abst = parse_judgement('{"abstain": true, "reason": "unsure"}', 1, SCOPES)
    att = decide([judged(0), abst], SCOPES, 0.7)
    assert (att.admitted, att.mean_confidence, att.failure_mode) == (None, None, "unclear")
    assert att.reason == "judge 1 abstained (judge abstained: unsure)"
    first = decide([parse_judgement("??", 0, SCOPES), abst], SCOPES, 0.7)
    assert first.reason == "judge 0 abstained (unparsable verdict)"


@pytest.mark.parametrize("n", [0, 1, 3])
def test_the_rule_needs_exactly_two_judgements(n):
    with pytest.raises(ValueError, match=f"exactly two judgements, got {n}"):
        decide([judged(i) for i in range(n)], SCOPES, 0.7)


# -- routing ----------------------------------------------------------------------------------------


def test_routes_and_their_reasons():
    assert route(["applicability", "procedure", "unclear"]) == (NARROWING, "1 applicability vs 1 procedure verdicts")
    assert route(["procedure", "procedure", "applicability"]) == (REPAIR, "2 procedure vs 1 applicability verdicts")
    assert route(["unclear", "unclear"]) == (NO_CHANGE, "no qualified failure carries a diagnosis")
    assert route(["procedure"])[0] == REPAIR and route(["applicability"])[0] == NARROWING


# -- what the reviser sees ----------------------------------------------------------------------------


def content(**kw) -> SkillContent:
    base = dict(
        name="walk",
        applicability="agent decisions in walking tasks",
        triggers=["a target is named"],
        procedure=["move toward the target", "stop on the target"],
        avoidance=["do not overshoot"],
        evidence_summary="3 successes",
        predicate=Predicate(all_of=["walk"], none_of=["left"]),
    )
    return SkillContent(**{**base, **kw})


def fixture(task_id: str = "task-17", success: bool = False, **kw) -> Fixture:
    base = dict(
        task_id=task_id,
        task_type="right",
        instruction="Walk to the target cell.",
        level="agent",
        agent="solver",
        role="actor",
        context="You are at cell 3. The target is cell 9.",
        behaviour="stop",
        success=success,
    )
    return Fixture(**{**base, **kw})


def test_the_reviser_sees_the_skill_its_bad_cases_and_supported_successes():
    skill = Skill("s1.v2", "s1", 2, "agent", "m1", "active", content(), Belief(Beta(1, 1), Beta(1, 1)))
    bad, good = fixture(), fixture("task-3", True)
    payload = intervention_payload(skill, [bad], [good], 3)
    assert payload["max_terms"] == 3
    assert (
        payload["skill"]
        == skill_payload(skill)
        == {
            "id": "s1.v2",
            "scope": "agent",
            "name": "walk",
            "applicability": "agent decisions in walking tasks",
            "triggers": ["a target is named"],
            "procedure": ["move toward the target", "stop on the target"],
            "avoidance": ["do not overshoot"],
            "predicate": {"all_of": ["walk"], "none_of": ["left"]},
        }
    )
    assert payload["bad_cases"] == [fixture_payload(bad)] and payload["supported_successes"] == [fixture_payload(good)]
    assert fixture_payload(bad) == {
        "task_type": "right",
        "task": "Walk to the target cell.",
        "level": "agent",
        "role": "actor",
        "agent": "solver",
        "observation": "You are at cell 3. The target is cell 9.",
        "behaviour": "stop",
        "outcome": "failure",
        "context_text": bad.text(),
    }
    assert fixture_payload(good)["outcome"] == "success"


# -- narrowing ------------------------------------------------------------------------------------------


def narrowing(**kw) -> str:
    return json.dumps({"abstain": False, "reason": "why", **kw})


def test_narrowing_adds_new_terms_to_the_parents_predicate_within_the_bound():
    new, why = parse_narrowing(
        narrowing(predicate={"all_of": ["walk", "right"], "none_of": ["left", "back", "up"]}), content(), 3
    )
    assert why == "why" and new is not None
    # all_of takes 2 of the 3 terms (one already the parent's), none_of the one left
    assert new.predicate == Predicate(all_of=["walk", "right"], none_of=["left"])
    assert new.applicability == content().applicability and new.triggers == content().triggers  # kept when absent
    assert (new.name, new.evidence_summary) == ("walk", "3 successes")


def test_narrowing_takes_applicability_and_at_most_six_triggers_from_the_reply():
    new, _ = parse_narrowing(
        narrowing(predicate={"none_of": ["back"]}, applicability="only rightward", triggers=list("abcdefgh")),
        content(),
        3,
    )
    assert new is not None and new.applicability == "only rightward" and new.triggers == list("abcdef")
    assert new.predicate == Predicate(all_of=["walk"], none_of=["left", "back"])


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("not json", "unparsable reply"),
        (json.dumps({"abstain": True, "reason": "would over-exclude"}), "abstained: would over-exclude"),
        (narrowing(predicate="left"), "no usable predicate"),
        (narrowing(predicate={"all_of": [], "none_of": []}), "no usable predicate"),
        (narrowing(predicate={"all_of": ["walk"], "none_of": ["left"]}), "predicate adds nothing"),
    ],
)
def test_a_narrowing_that_changes_nothing_is_no_change_with_its_reason(reply, reason):
    assert parse_narrowing(reply, content(), 3) == (None, reason)


# -- repair ------------------------------------------------------------------------------------------------


def test_repair_takes_at_most_ten_steps_and_six_avoidance_rules_and_keeps_everything_else():
    steps = [f"step number {i}" for i in range(12)]
    rules = [f"rule number {i}" for i in range(8)]
    new, why = parse_repair(json.dumps({"procedure": steps, "avoidance": rules, "reason": "r"}), content(), [], 6)
    assert why == "r" and new is not None
    assert new.procedure == steps[:10] and new.avoidance == rules[:6]
    parent = content()
    assert (new.name, new.applicability, new.triggers, new.evidence_summary) == (
        parent.name,
        parent.applicability,
        parent.triggers,
        parent.evidence_summary,
    )
    assert new.predicate == parent.predicate and new.predicate is not parent.predicate


def test_repair_without_avoidance_keeps_the_parents_and_an_empty_list_clears_it():
    kept, _ = parse_repair(json.dumps({"procedure": ["look first"]}), content(), [], 6)
    assert kept is not None and kept.avoidance == ["do not overshoot"]
    cleared, _ = parse_repair(json.dumps({"procedure": ["look first"], "avoidance": []}), content(), [], 6)
    assert cleared is not None and cleared.avoidance == []


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("not json", "unparsable reply"),
        (json.dumps({"abstain": True, "reason": "fine as is"}), "abstained: fine as is"),
        (json.dumps({"procedure": []}), "no procedure in the repair"),
        (json.dumps({"procedure": ["move toward the target", "stop on the target"]}), "repair changes nothing"),
        (json.dumps({"procedure": ["for task-17 go right"]}), "rejected: quotes the task id 'task-17'"),
    ],
)
def test_a_repair_that_is_refused_says_why(reply, reason):
    assert parse_repair(reply, content(), [fixture()], 6) == (None, reason)


def test_hard_coding_is_a_new_verbatim_n_gram_or_task_id_of_a_bad_case():
    bad = [fixture()]
    parent = content()
    # exactly n=6 consecutive words of the bad case
    assert hardcoded(["then: you are at cell 3. the"], parent, bad, 6) == (
        "quotes a bad case verbatim ('you are at cell 3 the')"
    )
    assert hardcoded(["you are at cell 3."], parent, bad, 6) is None  # 5 words
    assert hardcoded(["the target is cell 9 stop"], parent, bad, 6) is not None  # context then behaviour
    # already in the parent: not new
    own = content(procedure=["you are at cell 3 the target"])
    assert hardcoded(["you are at cell 3 the target"], own, bad, 6) is None
    assert hardcoded(["for task-17 do this"], own, bad, 6) == "quotes the task id 'task-17'"
    # a task id shorter than 3 characters is not matched (too common as a word)
    assert hardcoded(["go to t1 now"], parent, [fixture("t1")], 6) is None
    assert hardcoded(["go to abc now"], parent, [fixture("abc")], 6) == "quotes the task id 'abc'"
    # a task id the parent already names is not new either
    named = content(avoidance=["unlike task-17"])
    assert hardcoded(["for task-17 do this"], named, bad, 6) is None


def test_a_narrowing_reply_need_not_say_it_does_not_abstain_and_its_terms_and_text_are_bounded():
    reply = json.dumps(
        {"predicate": {"all_of": ["north", "east", "south", "west"], "none_of": ["left"]}, "applicability": "a" * 700}
    )
    new, _ = parse_narrowing(reply, content(), 3)
    assert new is not None  # no "abstain" key: a proposal
    # three new all_of terms fill the bound; none_of gets no room
    assert new.predicate == Predicate(all_of=["walk", "north", "east", "south"], none_of=["left"])
    assert new.applicability == "a" * 600


def test_hard_coding_is_found_across_proposal_lines_and_only_for_full_n_grams():
    bad = [fixture()]  # words: walk to the target cell you are at cell 3 the target is cell 9 stop
    parent = content(procedure=["move toward the target"], avoidance=[])
    assert hardcoded(["you are at", "cell 3 the"], parent, bad, 6) is not None  # six words over two lines
    assert hardcoded(["so target is cell 9 stop"], parent, bad, 6) is None  # the last five words only
    assert hardcoded(["then stop"], parent, bad, 6) is None  # the last word only


def test_a_verdict_need_not_say_it_does_not_abstain_and_its_text_fields_are_bounded():
    text = json.dumps({"skill_id": "s1.v1", "scope": "x" * 30, "confidence": 0.9})
    j = parse_judgement(text, 0, SCOPES)
    assert not j.abstain and j.scope == "x" * 20
    long_id = parse_judgement(verdict(skill_id="z" * 100), 0, SCOPES)
    assert long_id.abstain and long_id.reason == f"named no recalled object ({'z' * 80!r})"


def test_an_exact_id_wins_over_a_case_insensitive_match():
    scopes = {"M1": "team", "m1": "agent"}
    assert parse_judgement(verdict(skill_id="M1"), 0, scopes).skill_id == "M1"


def test_a_refused_scope_keeps_the_mean_and_no_failure_mode():
    att = decide([judged(0, scope="agent"), judged(1, scope="agent", confidence=0.7)], SCOPES, 0.7)
    assert (att.admitted, att.failure_mode) == (None, "unclear") and att.mean_confidence == pytest.approx(0.8)


# -- the failure-attribution grammar (a decoding aid for grammar-capable models) -----------------------

GRAMMAR_VERDICT = {
    "abstain": False,
    "skill_id": "s1.v1",
    "scope": "team",
    "clause": "enter the code",
    "behaviour": "typed 317",
    "alternatives_considered": "agent error",
    "failure_mode": "procedure",
    "confidence": 0.85,
}


def grammar_shaped(**kw) -> str:
    """A verdict as the grammar writes it: the prompt's keys in its order, `": "` and `", "` separators."""
    return "{ " + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in {**GRAMMAR_VERDICT, **kw}.items()) + " }"


def test_the_attribution_grammar_allows_the_offered_ids_the_levels_the_modes_and_bounded_fields_only():
    from llama_cpp import LlamaGrammar

    grammar = prompts.attribution_grammar(["s1.v1", "m3"], 16)
    LlamaGrammar.from_string(grammar, verbose=False)  # compiles (a bad grammar raises)
    assert matches(grammar, grammar_shaped())
    assert matches(grammar, grammar_shaped(skill_id="m3", scope="agent", failure_mode="applicability"))
    assert matches(grammar, grammar_shaped(abstain=True, skill_id=None, scope=None, failure_mode="unclear"))
    for confidence in (0, 1, 0.7, 0.05, 1.0):
        assert matches(grammar, grammar_shaped(confidence=confidence)), confidence
    refused = [
        {"skill_id": "s2.v1"},  # an object this call did not offer
        {"skill_id": "s1.v1 "},
        {"scope": "flat"},
        {"failure_mode": "weather"},
        {"confidence": 1.5},
        {"confidence": 0.123},
        {"confidence": -0.1},
        {"abstain": "no"},
        {"clause": "x" * 17},
        {"behaviour": ""},
        {"alternatives_considered": "two\nlines"},
    ]
    for change in refused:
        assert not matches(grammar, grammar_shaped(**change)), change
    assert not matches(grammar, grammar_shaped().replace('"scope": "team", ', ""))  # every key, in order
    long = prompts.attribution_grammar(["s1.v1"], 40)
    assert matches(long, grammar_shaped(clause="x" * 40)) and not matches(long, grammar_shaped(skill_id="m3"))
    # ids that need escaping become JSON string literals the verdict parser reads back
    odd = prompts.attribution_grammar(['we"ird\\id'], 16)
    LlamaGrammar.from_string(odd, verbose=False)
    assert matches(odd, grammar_shaped(skill_id='we"ird\\id'))
    assert parse_judgement(grammar_shaped(skill_id='we"ird\\id'), 0, {'we"ird\\id': "team"}).skill_id == 'we"ird\\id'
    # an id with a non-ASCII letter or a control character: the reply writes it as JSON does
    uni = prompts.attribution_grammar(["mé", "a\tb"], 16)
    LlamaGrammar.from_string(uni, verbose=False)
    assert matches(uni, grammar_shaped().replace('"s1.v1"', '"mé"'))
    assert matches(uni, grammar_shaped(skill_id="a\tb")) and "\t" not in uni
    with pytest.raises(ValueError, match=r"^a failure-attribution grammar needs at least one candidate id$"):
        prompts.attribution_grammar([])
    # the default bound is the parameter's default
    assert "{1,16}" in prompts.attribution_grammar(["s1.v1"]) and AdmissionParams().grammar_max_chars == 16


def test_the_attribution_grammar_keeps_the_prompts_keys_in_its_order_and_its_replies_parse():
    template = prompts.messages(prompts.FAILURE_ATTRIBUTION, {})[0]["content"].splitlines()[-1]
    keys = re.findall(r'"(\w+)":', template)
    assert re.findall(r'\\"(\w+)\\": ', prompts.attribution_grammar(["s1.v1"]).splitlines()[0]) == keys
    j = parse_judgement(grammar_shaped(), 1, SCOPES)
    assert (j.abstain, j.skill_id, j.scope, j.confidence, j.failure_mode) == (False, "s1.v1", "team", 0.85, "procedure")
    assert (j.clause, j.behaviour, j.reason) == ("enter the code", "typed 317", "agent error")


JUDGE_REQUESTS: list = []


def recording_judge(request, spec):
    """Judges answer in the grammar's shape, naming the first candidate they are shown with its scope."""
    if prompts.kind_of(request.messages) == prompts.FAILURE_ATTRIBUTION:
        JUDGE_REQUESTS.append(request)
        first = prompts.payload_of(request.messages)["candidates"][0]
        return grammar_shaped(skill_id=first["id"], scope=first["scope"])
    return mock_policy(request, spec)


register_mock_policy("aecg_pins_judge_grammar_shaped", recording_judge)


@pytest.mark.parametrize("capable", [True, False])
def test_a_grammar_capable_judge_gets_a_grammar_of_the_calls_candidates_and_its_verdict_admits_negative_evidence(
    capable,
):
    JUDGE_REQUESTS.clear()
    client = mock_client(policy="aecg_pins_judge_grammar_shaped", agent_policy="hand_agent")
    client.models["mock"] = client.models["mock"].model_copy(update={"grammar": capable})
    mem = make_memory({"admission": {"grammar_max_chars": 24}, "governance": False}, llm=client)
    mem.observe(episode("a", [("t0", "team", (), (), "split"), ("a0", "agent", ("t0",), (), "merge")], True))
    by_level = {m.level: m.id for m in mem.store.memories.values()}
    assert set(by_level) == {"team", "agent"}
    other = "Count the words in the text."
    mem.observe(episode("b", [("t0", "team", (), (), "count")], True, task_type="count", instruction=other))
    (unused,) = set(mem.store.memories) - set(by_level.values())
    failed = [("t0", "team", (), (by_level["team"],), "split"), ("a0", "agent", ("t0",), (by_level["agent"],), "x")]
    mem.observe(episode("c", failed, False))
    assert len(JUDGE_REQUESTS) == 2
    if capable:
        grammar = JUDGE_REQUESTS[0].params["grammar"]
        assert JUDGE_REQUESTS[1].params["grammar"] == grammar
        offered = [c["id"] for c in prompts.payload_of(JUDGE_REQUESTS[0].messages)["candidates"]]
        assert grammar == prompts.attribution_grammar(offered, 24) and sorted(offered) == sorted(by_level.values())
        assert all(matches(grammar, grammar_shaped(skill_id=i, clause="y" * 24)) for i in offered)
        assert not matches(grammar, grammar_shaped(skill_id=unused))  # stored, but not recalled in this task
    else:  # a model without grammars (the API presets) gets the prompt alone
        assert all("grammar" not in r.params for r in JUDGE_REQUESTS)
    (admitted,) = events(mem, "admit_failure")
    named = prompts.payload_of(JUDGE_REQUESTS[0].messages)["candidates"][0]["id"]
    assert admitted["memory"] == named and admitted["reason"] == "both judges agree"
    assert not events(mem, "unresolved_failure") and mem.store.memories[named].neg > 0


@pytest.mark.slow
def test_with_the_embedded_model_the_judges_verdicts_parse_under_the_attribution_grammar():
    """SmolLM2-135M judges a `procedures`-like failure that recalled a memory: under the grammar both verdicts
    parse (none is "unparsable verdict"), and whatever they say, the audit records it (issue 27: without the
    grammar every verdict on `procedures` was unparsable)."""
    mem = make_memory({"governance": False}, llm=embedded_client(grammar=True))
    talon = "Unlock the Talon terminal in the north wing (serial 3487). You work on the day shift team."
    kw = {"task_type": "talon_terminal", "instruction": talon, "observation": "The Talon terminal is locked."}
    mem.observe(episode("a", [("t0", "team", (), (), "enter 317")], True, **kw))
    (mid,) = mem.store.memories
    mem.observe(episode("b", [("t0", "team", (), (mid,), "enter 317")], False, **kw))
    (event,) = events(mem, "admit_failure") or events(mem, "unresolved_failure")
    reasons = [j["reason"] for j in event["judgements"]]
    assert len(reasons) == 2 and "unparsable verdict" not in reasons, reasons
