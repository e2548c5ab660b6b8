"""The replay gate's parts pinned one behaviour at a time (issue 17: mutation testing of `aecg/replay.py`).

What the re-executed prompt contains, how a replayed decision is compared with the recorded one, how
each side of a fixture passes, and every boundary of the gate (AECG sec. 3.4.2; thresholds ours,
docs/memory/aecg.md).
"""

from __future__ import annotations

import hashlib

import pytest

from aecg_bench.aecg.objects import Fixture, SkillContent
from aecg_bench.aecg.params import ReplayParams
from aecg_bench.aecg.replay import (
    ACTIVATE,
    FAILURE,
    ISOLATE,
    MONITOR,
    SUCCESS,
    FixtureResult,
    GateResult,
    decision_messages,
    gate,
    held_out,
    replay_fixture,
    same_decision,
    split,
)


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


def fixture(task_id: str = "t1", behaviour: str = "stop", **kw) -> Fixture:
    base = dict(
        task_id=task_id,
        task_type="right",
        instruction="Walk to the target cell.",
        level="agent",
        agent="solver",
        role="actor",
        context="You are at cell 3.",
        behaviour=behaviour,
        success=False,
    )
    return Fixture(**{**base, **kw})


# -- the re-executed prompt -------------------------------------------------------------


def test_the_replayed_prompt_is_a_system_and_a_user_message_with_the_skill_rendered_at_its_level():
    msgs = decision_messages(fixture(), content(), "team")
    assert [m["role"] for m in msgs] == ["system", "user"]
    system = msgs[0]["content"]
    assert system.startswith(
        "You are agent solver (actor) making a agent-level decision in a multi-agent system.\n"
        "Task: Walk to the target cell.\n\n"
    )
    assert "- [skill] Skill 'walk' (team-level decisions)" in system  # rendered at the version's level
    assert msgs[1]["content"].startswith("You are at cell 3.\n\n")


def test_without_a_shown_skill_the_system_prompt_has_no_memory_block():
    msgs = decision_messages(fixture(), None, "agent")
    assert msgs[0]["content"] == (
        "You are agent solver (actor) making a agent-level decision in a multi-agent system.\n"
        "Task: Walk to the target cell."
    )


def test_replay_renders_both_versions_at_the_level_it_is_given():
    seen: list[str] = []

    def execute(messages):
        seen.append(messages[0]["content"])
        return "stop"

    replay_fixture(fixture(), FAILURE, content(), content(name="walk2"), "event", execute)
    assert "Skill 'walk' (event-level decisions)" in seen[0]
    assert "Skill 'walk2' (event-level decisions)" in seen[1]


# -- comparing a replayed decision with the record -------------------------------------------


@pytest.mark.parametrize(
    ("replayed", "recorded", "same"),
    [
        ("```\nmove right\n```", "move right", True),  # a fenced reply: the fence is no decision
        ("move right ```", "move right", True),  # a fence on the decision's line
        ("`move right`", "move right", True),  # inline code
        ("X marks the spot", "x marks the spot", True),  # case only
        ("  Move   Right \nthen stop", "move right", True),  # first non-empty line, whitespace collapsed
        ("a" * 240 + "b", "a" * 240 + "c", True),  # compared on the first 240 characters
        ("a" * 239 + "b", "a" * 239 + "c", False),
        ("move left", "move right", False),
    ],
)
def test_a_replayed_decision_is_compared_on_its_normalised_first_line(replayed, recorded, same):
    assert same_decision(replayed, recorded) is same


def test_a_success_fixture_passes_only_the_side_that_reproduces_the_recorded_behaviour():
    replies = iter(["move left", "stop"])  # parent departs, candidate reproduces
    res = replay_fixture(
        fixture(success=True), SUCCESS, content(), content(name="w2"), "agent", lambda m: next(replies)
    )
    assert (res.parent_pass, res.candidate_pass) == (False, True)


def test_a_failure_fixture_passes_only_the_side_that_departs_from_the_implicated_behaviour():
    replies = iter(["move left", "stop"])  # parent departs (not reproduced), candidate repeats the failure
    res = replay_fixture(fixture(), FAILURE, content(), content(name="w2"), "agent", lambda m: next(replies))
    assert (res.parent_pass, res.candidate_pass) == (True, False)


def test_the_result_notes_the_recorded_and_both_replayed_decisions_within_400_characters():
    replies = iter(["Move Left", "STOP"])
    res = replay_fixture(fixture(behaviour="Stop"), FAILURE, content(), content(), "agent", lambda m: next(replies))
    assert res.note == "recorded 'stop'; parent 'move left'; candidate 'stop'"
    assert (res.task_id, res.kind, res.how) == ("t1", FAILURE, "replayed")
    long = "x" * 300
    res = replay_fixture(fixture(behaviour=long), FAILURE, content(), content(), "agent", lambda m: long)
    assert len(res.note) == 400 and res.note.startswith("recorded 'xxx")


# -- the gate --------------------------------------------------------------------------------


def r(kind: str, parent: bool, cand: bool) -> FixtureResult:
    return FixtureResult("t", kind, parent, cand, "replayed")


def test_the_gate_counts_reproduced_mitigated_supported_and_regressed_fixtures():
    results = [
        r(FAILURE, False, True),
        r(FAILURE, False, False),
        r(FAILURE, True, False),  # parent no longer fails: not reproduced
        r(SUCCESS, True, True),
        r(SUCCESS, True, False),  # regressed
        r(SUCCESS, False, True),  # the candidate restores what the parent no longer does: supported, preserved
        r(SUCCESS, False, False),  # neither version shows the recorded behaviour: no evidence either way
    ]
    g = gate(results, ReplayParams(max_regression=0.5))
    assert g == GateResult(ACTIVATE, "mitigates 1/2 failures, regresses 1/3 successes", 2, 1, 3, 1)


def test_the_gate_monitors_when_nothing_reproduces_or_too_few_successes_were_replayed():
    g = gate([r(FAILURE, True, True), r(SUCCESS, True, True)], ReplayParams())
    assert g == GateResult(MONITOR, "no failure fixture reproduces the implicated behaviour", 0, 0, 1, 0)
    g = gate([r(FAILURE, False, True), r(SUCCESS, True, True)], ReplayParams(min_success_fixtures=2))
    assert g == GateResult(MONITOR, "1 of 1 success fixtures replayed show the supported behaviour < 2", 1, 1, 1, 0)


def test_mitigation_is_a_share_of_the_reproduced_failures_inclusive_at_the_threshold():
    ok = [r(SUCCESS, True, True)]
    half = [r(FAILURE, False, True), r(FAILURE, False, False)]
    assert gate(half + ok, ReplayParams(min_mitigation=0.5)).decision == ACTIVATE  # 1/2 = 0.5 passes
    third = [r(FAILURE, False, True), r(FAILURE, False, False), r(FAILURE, False, False)]
    g = gate(third + ok, ReplayParams(min_mitigation=0.5))
    assert g.decision == ISOLATE and g.reason == "mitigates 1/3 failures (< 0.50)"


def test_a_candidate_that_mitigates_nothing_is_isolated_even_with_no_mitigation_threshold():
    g = gate([r(FAILURE, False, False), r(SUCCESS, True, True)], ReplayParams(min_mitigation=0.0))
    assert g.decision == ISOLATE


def test_regression_over_the_tolerance_isolates_and_preservation_is_never_passed_on_no_evidence():
    g = gate([r(FAILURE, False, True), r(SUCCESS, True, False)], ReplayParams(max_regression=0.2))
    assert g == GateResult(ISOLATE, "regresses 1/1 successes (> 0.20)", 1, 1, 1, 1)
    # a corrupted parent no longer shows what worked; a candidate that restores it preserves it (1/1)
    g = gate([r(FAILURE, False, True), r(SUCCESS, False, True)], ReplayParams(max_regression=0.0))
    assert g == GateResult(ACTIVATE, "mitigates 1/1 failures, regresses 0/1 successes", 1, 1, 1, 0)
    # only a run that asks for no success fixture at all (min_success_fixtures=0) activates on none
    g = gate([r(FAILURE, False, True), r(SUCCESS, False, False)], ReplayParams(min_success_fixtures=0))
    assert g == GateResult(ACTIVATE, "mitigates 1/1 failures, regresses 0/0 successes", 1, 1, 0, 0)
    # neither shows it: preservation cannot be judged, so the candidate waits (it used to pass as 0/0)
    g = gate([r(FAILURE, False, True), r(SUCCESS, False, False)], ReplayParams(max_regression=0.0))
    assert g == GateResult(MONITOR, "0 of 1 success fixtures replayed show the supported behaviour < 1", 1, 1, 0, 0)


def test_results_and_gates_serialise_every_field():
    assert r(FAILURE, False, True).to_dict() == {
        "task_id": "t",
        "kind": "failure",
        "parent_pass": False,
        "candidate_pass": True,
        "how": "replayed",
        "note": "",
    }
    assert GateResult(MONITOR, "why", 1, 2, 3, 4).to_dict() == {
        "decision": "monitor",
        "reason": "why",
        "reproduced": 1,
        "mitigated": 2,
        "supported": 3,
        "regressed": 4,
    }


# -- the held-out split ------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
def test_about_the_held_out_fraction_of_fixtures_goes_to_replay(fraction):
    """The split is a uniform hash in [0, 1): over 400 fixtures the held-out share is near `fraction`."""
    fixtures = [fixture(f"task{i}") for i in range(400)]
    _, held = split(fixtures, FAILURE, "0:s1", fraction)
    assert abs(len(held) / 400 - fraction) < 0.08


def test_a_fixtures_side_is_the_documented_hash_of_seed_lineage_kind_and_task():
    f = fixture("task-7")
    digest = hashlib.sha256(b"0:s1:success:task-7").digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    assert held_out(f, SUCCESS, "0:s1", u + 1e-9) and not held_out(f, SUCCESS, "0:s1", u - 1e-9)
    assert not held_out(f, SUCCESS, "0:s1", u)  # held out iff the hash is strictly below the fraction
