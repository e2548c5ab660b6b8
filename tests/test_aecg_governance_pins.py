"""Governance rounds pinned through behaviour (issue 17: mutation testing of `aecg/governance.py`).

A memory on hand-built team/agent decision graphs with the scripted mock model (tests/aecg_fixtures.py):
the review cooldown is actually exercised, the exposure the triage ranks by is the skill's measured
reach, the reviser and the replay get the seeded disjoint fixture sets, a monitored candidate is
replayed under its own route, and every gate outcome leaves its audit record and inherited belief.
"""

from __future__ import annotations

import json
import logging

import pytest
from aecg_fixtures import episode, events, make_memory

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg import prompts, replay
from aecg_bench.aecg.mock_policy import mock_policy
from aecg_bench.aecg.objects import ACTIVE, ISOLATED, MONITORED, SUPERSEDED, to_dict
from aecg_bench.aecg.store import Store
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import ContextLimitError

LONG = "The list is long and unsorted."


def body(event: dict) -> dict:
    """An audit event without its sequence number."""
    return {k: v for k, v in event.items() if k != "seq"}


def grow_skill(mem, level: str = "team") -> str:
    for i in range(3):
        mem.observe(episode(f"grow{i}", [("t0", level, (), (), "split the list in halves")], True))
    return next(s.id for s in mem.store.active_skills() if s.level == level)


def use(mem, sid: str, task: str, success: bool, **kw) -> None:
    mem.observe(episode(task, [("t0", "team", (), (sid,), "split the list in halves")], success, **kw))


def degrade(mem, sid: str, good: int = 8, bad: int = 6, **kw) -> None:
    for i in range(good):
        use(mem, sid, f"good{i}", True)
    for i in range(bad):
        use(mem, sid, f"bad{i}", False, **{"observation": LONG, **kw})


RECORDED: list[tuple[str | None, dict]] = []


def recording(request, spec):
    """aecg_oracle, remembering every memory-side payload and every replayed agent prompt."""
    kind = prompts.kind_of(request.messages)
    RECORDED.append((kind, prompts.payload_of(request.messages) if kind else {"messages": request.messages}))
    return mock_policy(request, spec)


def useless_repair(request, spec):
    """A repair that only adds an avoidance rule: on replay the long lists still fail, so it is isolated
    and the parent stays active (and reviewable again)."""
    if prompts.kind_of(request.messages) == prompts.PROCEDURAL_REPAIR:
        skill = prompts.payload_of(request.messages)["skill"]
        return json.dumps({"procedure": skill["procedure"], "avoidance": [*skill["avoidance"], "be careful"]})
    return mock_policy(request, spec)


def too_long_replay(request, spec):
    if prompts.kind_of(request.messages) is None and "making a team-level decision" in str(request.messages[0]):
        raise ContextLimitError("prompt too long")
    return mock_policy(request, spec)


register_mock_policy("aecg_pins_recording", recording)
register_mock_policy("aecg_pins_useless_repair", useless_repair)
register_mock_policy("aecg_pins_too_long_replay", too_long_replay)


# -- selection: cooldown and exposure -------------------------------------------------------


def test_a_reviewed_skill_waits_exactly_cooldown_events_before_it_can_be_reviewed_again():
    mem = make_memory({"triage": {"cooldown_events": 3}}, policy="aecg_pins_useless_repair")
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    skill = mem.store.skills[sid]
    assert events(mem, "isolation") and skill.status == ACTIVE
    assert skill.reviewed_at == skill.belief.events  # the cooldown counts from the review
    for i in range(2):
        use(mem, sid, f"again{i}", False, observation=LONG)
    mem.maintain(2)
    assert events(mem, "review_round")[-1]["qualified"] == [] and len(events(mem, "review")) == 1
    assert skill.belief.events - skill.reviewed_at == 2
    use(mem, sid, "again2", False, observation=LONG)  # the third new event ends the cooldown
    mem.maintain(3)
    assert [e["skill"] for e in events(mem, "review")] == [sid, sid] and mem.store.counters.reviews == 2
    assert mem.store.counters.isolations == 2  # counted per isolation
    assert events(mem, "review")[-1]["round"] == 3


def test_the_exposure_triage_ranks_by_is_the_sum_of_the_measured_reach():
    """The skill decides at the team node and an agent decision follows: reach 1 + discount per task."""
    mem = make_memory({"triage": {"exposure_discount": 0.1234567}})
    sid = grow_skill(mem)
    for i, ok in enumerate([True] * 8 + [False] * 6):
        nodes = [("t0", "team", (), (sid,), "split the list in halves"), ("a1", "agent", ("t0",), (), "merge")]
        mem.observe(episode(f"u{i}", nodes, ok, observation="The list is unsorted." if ok else LONG))
    mem.maintain(1)
    (q,) = events(mem, "review_round")[0]["qualified"]
    reach = mem.store.skills[sid].exposure
    assert reach == [pytest.approx(1.1234567)] * 14
    assert q["exposure"] == round(sum(reach), 6) and q["exposure"] != round(sum(reach), 7)
    review = events(mem, "review")[0]
    assert review["exposure"] == q["exposure"] and review["severity"] == q["severity"]


# -- fixture sets ----------------------------------------------------------------------------


def test_reviser_and_replay_get_the_seeded_split_of_disjoint_failure_and_success_fixtures():
    mem = make_memory()
    sid = grow_skill(mem)
    use(mem, sid, "bad0", True)  # a task that later fails: never a success fixture of this review
    degrade(mem, sid, good=8, bad=6)
    skill = mem.store.skills[sid]
    mem.maintain(1)
    review = events(mem, "review")[0]
    failures = [mem.store.badcases[b].fixtures[sid] for b in skill.badcases]
    successes = [f for f in skill.success_fixtures if f.task_id != "bad0"]
    assert len(successes) == len(skill.success_fixtures) - 1
    key = f"0:{skill.lineage}"  # run seed and lineage
    shown_f, held_f = replay.split(failures, replay.FAILURE, key, 0.5)
    shown_s, held_s = replay.split(successes, replay.SUCCESS, key, 0.5)
    ids = lambda xs: [f.task_id for f in xs][-5:]  # noqa: E731  (at most 5 each, the most recent)
    assert review["failure_fixtures"] == ids(shown_f) and review["replay_failure_fixtures"] == ids(held_f)
    assert review["success_fixtures"] == ids(shown_s) and review["replay_success_fixtures"] == ids(held_s)
    assert review["success_fixtures"] and review["replay_success_fixtures"]  # the split is not one-sided
    assert "bad0" not in review["success_fixtures"] + review["replay_success_fixtures"]


def test_no_success_fixtures_when_the_cap_is_zero_so_the_candidate_is_monitored():
    mem = make_memory({"intervention": {"max_success_fixtures": 0}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    review = events(mem, "review")[0]
    assert review["success_fixtures"] == [] and review["replay_success_fixtures"] == []
    assert (
        events(mem, "monitoring")
        and "0 of 0 success fixtures replayed show the supported behaviour < 1"
        in events(mem, "monitoring")[0]["reason"]
    )


# -- routes and proposals ----------------------------------------------------------------------


def test_a_review_records_its_route_and_why():
    mem = make_memory()
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    review = events(mem, "review")[0]
    assert (review["route"], review["route_reason"]) == ("repair", "6 procedure vs 0 applicability verdicts")


def test_a_monitored_candidate_is_replayed_again_under_its_own_route():
    mem = make_memory({"replay": {"min_success_fixtures": 50}, "triage": {"cooldown_events": 0}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    use(mem, sid, "bad-again", False, observation=LONG)
    mem.maintain(2)
    second = events(mem, "review")[1]
    assert (second["route"], second["route_reason"]) == ("repair", "replaying the monitored candidate")
    assert events(mem, "replay")[1]["route"] == "repair"
    assert mem.store.counters.monitored == 2  # monitored again, counted again


def test_failures_without_a_diagnosis_change_nothing_and_say_why():
    mem = make_memory({"admission": {"mode": "symmetric"}}, judge_abstain=True)  # blamed, mode "unclear"
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    review = events(mem, "review")[0]
    assert review["route"] == "none"
    (iv,) = events(mem, "intervention")
    assert body(iv) == {
        "event": "intervention",
        "skill": sid,
        "lineage": mem.store.skills[sid].lineage,
        "route": "none",
        "outcome": "no_change",
        "reason": "no qualified failure carries a diagnosis",
    }
    assert not events(mem, "replay") and mem.store.skills[sid].status == ACTIVE


def test_the_narrowing_prompt_carries_the_predicate_bound_and_replay_shows_versions_at_their_level():
    RECORDED.clear()
    mem = make_memory({"intervention": {"max_predicate_terms": 2}}, policy="aecg_pins_recording")
    sid = grow_skill(mem)
    degrade(mem, sid, task_type="reverse")  # misapplied: narrowing
    mem.maintain(1)
    (payload,) = [p for k, p in RECORDED if k == prompts.CONTEXT_NARROWING]
    assert payload["max_terms"] == 2
    replayed = [p["messages"][0]["content"] for k, p in RECORDED if k is None and "making a" in str(p)]
    assert replayed and any("(team-level decisions)" in s for s in replayed)
    assert all("(None-level" not in s for s in replayed)


def test_a_too_long_replayed_prompt_is_logged_as_a_replay_call(caplog):
    mem = make_memory(policy="aecg_pins_too_long_replay")
    sid = grow_skill(mem)
    degrade(mem, sid)
    with caplog.at_level(logging.WARNING, logger="aecg_bench.aecg"):
        mem.maintain(1)
    assert "aecg replay prompt exceeds the model's context" in caplog.text


# -- gate outcomes -------------------------------------------------------------------------------


def test_without_the_replay_gate_the_activation_records_a_gate_that_replayed_nothing():
    mem = make_memory({"replay": {"enabled": False}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    (rep,) = events(mem, "replay")
    assert rep["gate"] == {
        "decision": "activate",
        "reason": "replay gate disabled (ablation)",
        "reproduced": 0,
        "mitigated": 0,
        "supported": 0,
        "regressed": 0,
    }
    parent = mem.store.skills[sid]
    assert parent.status == SUPERSEDED
    # nothing was shown mitigated, so the candidate inherits all of the parent's failures
    pos, neg = B.evidence(parent.belief.slow, mem.prior)
    new = events(mem, "activation")[0]["skill"]
    expected = B.inherit(pos, neg, mem.p.formation.inherit_fraction, mem.prior, mem.p.beliefs.window)
    assert neg > 0 and mem.store.skills[new].belief == expected


def test_a_review_is_counted_and_audited_with_its_inputs():
    mem = make_memory()
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    skill = mem.store.skills[sid]
    review = events(mem, "review")[0]
    (q,) = events(mem, "review_round")[0]["qualified"]
    assert (review["skill"], review["lineage"], review["round"]) == (sid, skill.lineage, 1)
    assert review["drift"] == q["drift_detail"] and review["severity"] == q["severity"] > 0
    assert review["belief"] == to_dict(skill.belief)  # the parent's belief when it was reviewed
    assert mem.store.counters.reviews == 1 and mem.stats()["reviews"] == 1.0
    new = events(mem, "activation")[0]["skill"]
    assert new == f"{skill.lineage}.v2"  # the next version of the lineage


def test_an_activated_candidate_is_a_new_version_that_inherits_the_parents_unmitigated_evidence():
    mem = make_memory({"formation": {"inherit_fraction": 0.4}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    parent = mem.store.skills[sid]
    mem.maintain(1)
    (cand_ev,) = [e for e in events(mem, "intervention") if e["outcome"] == "candidate"]
    new = cand_ev["candidate"]
    cand = mem.store.skills[new]
    assert body(cand_ev) == {
        "event": "intervention",
        "skill": sid,
        "lineage": parent.lineage,
        "route": "repair",
        "outcome": "candidate",
        "candidate": new,
        "changed": ["procedure", "avoidance"],
        "content": to_dict(cand.content),
        "reason": "the procedure ended the task without checking the goal",
    }
    assert (cand.lineage, cand.version, cand.level, cand.family) == (parent.lineage, 2, "team", parent.family)
    assert (cand.parent, cand.seed, cand.route) == (sid, parent.seed, "repair") and cand.seed is not None
    assert cand.success_fixtures == parent.success_fixtures and cand.success_fixtures
    (rep,) = events(mem, "replay")
    assert (rep["skill"], rep["lineage"], rep["candidate"], rep["route"]) == (sid, parent.lineage, new, "repair")
    assert rep["results"] and rep["results"][0]["how"] == "replayed"
    g = rep["gate"]
    assert g["decision"] == "activate" and g["reproduced"] > 0 and g["mitigated"] > 0
    pos, neg = B.evidence(parent.belief.slow, mem.prior)
    share = g["mitigated"] / g["reproduced"]
    assert cand.belief == B.inherit(pos, neg * (1 - share), 0.4, mem.prior, mem.p.beliefs.window)
    assert (cand.status, parent.status, parent.pending_candidate) == (ACTIVE, SUPERSEDED, None)
    (act,) = events(mem, "activation")
    assert body(act) == {
        "event": "activation",
        "skill": new,
        "lineage": parent.lineage,
        "parent": sid,
        "route": "repair",
        "reason": g["reason"],
        "belief": to_dict(cand.belief),
    }
    assert mem.store.counters.activations == 1 and mem.stats()["activations"] == 1.0


def test_an_isolated_candidate_is_counted_and_audited_and_the_parent_keeps_no_pending_candidate():
    mem = make_memory(policy="aecg_pins_useless_repair")
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    (iso,) = events(mem, "isolation")
    cand = iso["skill"]
    assert body(iso) == {
        "event": "isolation",
        "skill": cand,
        "lineage": mem.store.skills[sid].lineage,
        "parent": sid,
        "reason": events(mem, "replay")[0]["gate"]["reason"],
        "parent_stays_active": True,
    }
    assert mem.store.skills[cand].status == ISOLATED and mem.store.skills[sid].pending_candidate is None
    # an isolated candidate keeps the parent's belief as it was proposed, and the store round-trips
    assert mem.store.skills[cand].belief == mem.store.skills[sid].belief
    restored = Store.from_dict(json.loads(json.dumps(mem.store.to_dict())))
    assert restored.skills[cand].belief == mem.store.skills[sid].belief
    assert mem.store.counters.isolations == 1 and mem.store.counters.activations == 0
    assert cand not in [i.id for i in mem.recall(query_team())]


def test_a_monitored_candidate_is_counted_audited_and_kept_pending():
    mem = make_memory({"replay": {"min_success_fixtures": 50}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(1)
    (mon,) = events(mem, "monitoring")
    cand = mon["skill"]
    assert body(mon) == {
        "event": "monitoring",
        "skill": cand,
        "lineage": mem.store.skills[sid].lineage,
        "parent": sid,
        "reason": events(mem, "replay")[0]["gate"]["reason"],
        "parent_stays_active": True,
    }
    assert mem.store.skills[cand].status == MONITORED and mem.store.skills[sid].pending_candidate == cand
    assert mem.store.counters.monitored == 1 and mem.store.skills[sid].status == ACTIVE


def query_team():
    from aecg_bench.types import RecallQuery, Task

    task = Task(id="q", benchmark="hand", instruction="Sort the numbers in the list.", task_type="sort")
    return RecallQuery(task=task, level="team", agent="team-agent", role="planner", context="The list is unsorted.")


def test_skills_of_two_scopes_are_reviewed_in_one_round_under_a_budget_of_two_and_each_activation_counts():
    mem = make_memory({"triage": {"budget": 2}})
    team, agent = grow_skill(mem, "team"), grow_skill(mem, "agent")
    for sid, level in ((team, "team"), (agent, "agent")):
        for i in range(8):
            mem.observe(episode(f"{level}-good{i}", [("t0", level, (), (sid,), "split the list in halves")], True))
        for i in range(6):
            nodes = [("t0", level, (), (sid,), "split the list in halves")]
            mem.observe(episode(f"{level}-bad{i}", nodes, False, observation=LONG))
    mem.maintain(1)
    assert sorted(events(mem, "review_round")[0]["selected"]) == sorted([team, agent])
    assert {e["parent"] for e in events(mem, "activation")} == {team, agent}
    assert mem.store.counters.activations == 2 and mem.store.counters.reviews == 2


def test_a_partly_mitigating_candidate_keeps_the_unmitigated_share_of_the_parents_failures():
    from aecg_bench.aecg import governance

    mem = make_memory({"replay": {"enabled": False}})
    sid = grow_skill(mem)
    degrade(mem, sid)
    plan = governance.plan_round(mem, 1)  # a candidate, not yet committed
    parent = mem.store.skills[sid]
    review = plan.reviews[0]
    review.gate = replay.GateResult(replay.ACTIVATE, "partly", 4, 1, 1, 0)  # 1 of 4 mitigated
    governance.commit_round(mem, plan)
    new = events(mem, "activation")[0]["skill"]
    pos, neg = B.evidence(parent.belief.slow, mem.prior)
    expected = B.inherit(pos, neg * 0.75, mem.p.formation.inherit_fraction, mem.prior, mem.p.beliefs.window)
    assert mem.store.skills[new].belief == expected


def test_a_round_is_audited_with_its_order_budget_candidates_and_selection():
    from aecg_bench.aecg.drift import belief_drift

    mem = make_memory(policy="aecg_pins_useless_repair")  # isolated: the parent and its belief stay
    sid = grow_skill(mem)
    degrade(mem, sid)
    mem.maintain(4)
    skill = mem.store.skills[sid]
    (rnd,) = events(mem, "review_round")
    drift = belief_drift(skill.belief, mem.p.beliefs, mem.p.drift, f"0:{sid}")  # seeded by run seed and version
    assert body(rnd) == {
        "event": "review_round",
        "round": 4,
        "order": "exposure",
        "budget": 1,
        "active_skills": 1,
        "qualified": [
            {
                "skill": sid,
                "drift": round(drift.score, 6),
                "exposure": round(sum(skill.exposure), 6),
                "severity": round(drift.score * sum(skill.exposure), 6),
                "qualified": True,
                "drift_detail": drift.to_dict(),
            }
        ],
        "selected": [sid],
    }


def test_random_review_draws_a_seeded_shuffle_per_round():
    from aecg_bench.aecg import governance, triage

    mem = make_memory({"triage": {"order": "random"}})
    team, agent = grow_skill(mem, "team"), grow_skill(mem, "agent")
    for sid, level in ((team, "team"), (agent, "agent")):
        for i in range(8):
            mem.observe(episode(f"{level}-good{i}", [("t0", level, (), (sid,), "split the list in halves")], True))
        for i in range(6):
            nodes = [("t0", level, (), (sid,), "split the list in halves")]
            mem.observe(episode(f"{level}-bad{i}", nodes, False, observation=LONG))
    picked = []
    for r in range(1, 9):
        plan = governance.plan_round(mem, r)  # read-only: the same skills every round
        cands = [c for c, _ in plan.scored]
        assert plan.selected == [c.skill_id for c in triage.select(cands, 1, "random", f"0:review:{r}")]
        picked.append(plan.selected[0])
    assert set(picked) == {team, agent}  # the draw differs between rounds


# -- replay fixtures on a multi-level framework (issue 34) -----------------------------------------------


def test_replay_success_fixtures_on_agentnet_exclude_the_failures_that_triggered_the_review(tmp_path):
    """Paper 3.4.2: failure fixtures test the implicated behaviour; *disjoint* historical same-scope
    success fixtures test preservation. AgentNet (routers at team level, executors at agent level) builds
    AECG memory on the same 12 toy tasks for three epochs (scripted skill-following agents, 10% errors),
    so a task succeeds in one epoch and fails in another; reviews are made frequent and the fixture caps
    wide, so a reviewed skill's success history holds tasks that are also its failure fixtures. No review
    may show or replay such a task as a success."""
    from conftest import compose

    from aecg_bench.jsonl import read_jsonl
    from aecg_bench.run import run_from_config

    overrides = [
        "framework=agentnet",
        "benchmark=toy",
        "memory=aecg",
        "model=mock_aecg",
        "model.models.mock.options.agent_policy=aecg_skill_follower",
        "model.models.mock.options.error_rate=0.3",
        "benchmark.params.train_size=12",
        "benchmark.params.size=1",
        "protocol.mode=build_then_freeze",
        "protocol.build_epochs=3",
        "protocol.maintain_every=4",
        "memory.params.recall.k_skills=1",
        "memory.params.recall.k_memories=0",
        "memory.params.drift.min_drift=0.0",
        "memory.params.drift.gate_confidence=0.5",
        "memory.params.triage.budget=3",
        "memory.params.triage.cooldown_events=1",
        "memory.params.intervention.fixture_history=100",
        "memory.params.intervention.max_failure_fixtures=100",
        "memory.params.intervention.max_success_fixtures=100",
    ]
    final = run_from_config(compose(overrides, tmp_path))
    assert final is not None and final["status"] == "complete"
    audit = read_jsonl(next(tmp_path.rglob("audit.jsonl")))
    succeeded: dict[str, set[str]] = {}  # lineage -> tasks in which one of its versions was used and succeeded
    overlapping = checked = 0
    for e in audit:
        if e["event"] == "belief_update" and e.get("success") and "lineage" in e:
            succeeded.setdefault(e["lineage"], set()).add(e["task"])
        if e["event"] != "review":
            continue
        failures = {*e["failure_fixtures"], *e["replay_failure_fixtures"]}
        successes = {*e["success_fixtures"], *e["replay_success_fixtures"]}
        assert not successes & failures, (e["skill"], sorted(successes & failures))
        overlapping += bool(succeeded.get(e["lineage"], set()) & failures)
        checked += bool(successes)
    levels = set().union(*(r["decisions_by"]["level"] for r in read_jsonl(next(tmp_path.rglob("samples.jsonl")))))
    assert {"team", "agent"} <= levels
    print(f"reviews whose failures also succeeded once: {overlapping}; with success fixtures: {checked}")
    assert overlapping >= 3 and checked >= 3  # the exclusion had something to exclude, and successes were left
