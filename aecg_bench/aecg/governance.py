"""One governance round: gate, triage, intervention, replay, activation (AECG sec. 3.4, Alg. 1).

`plan_round` is read-only apart from LLM calls: it scores every active
skill version (drift + gate, exposure), selects at most `budget` qualified
ones in the configured order, and for each asks for an intervention and
replays the candidate. `commit_round` then applies the plans and writes the
audit events, so a failed call leaves nothing half-done.

Bookkeeping choices (ours): a reviewed version is not eligible again until
it has `cooldown_events` new evidence events (otherwise an unfixable skill
would take the whole budget every round); a "monitor" verdict keeps the
candidate inactive and replays it again at the parent's next review,
instead of asking for a new proposal; an activated version starts from the
parent's slow evidence by the same inheritance rule as a promoted skill,
except that the share of admitted failures the replay showed mitigated is
not carried over (with the gate disabled, all of it is).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg import intervention as iv
from aecg_bench.aecg import prompts, replay, triage
from aecg_bench.aecg.drift import Drift, belief_drift, qualifies
from aecg_bench.aecg.objects import ACTIVE, ISOLATED, MONITORED, SUPERSEDED, Fixture, Skill, SkillContent, to_dict

if TYPE_CHECKING:
    from aecg_bench.aecg.method import AECGMemory


@dataclass
class ReviewPlan:
    skill_id: str
    candidate: triage.ReviewCandidate
    drift: Drift
    route: str
    route_reason: str
    failures: list[Fixture]  # shown to the reviser
    successes: list[Fixture]
    replay_failures: list[Fixture]  # held out for replay
    replay_successes: list[Fixture]
    content: SkillContent | None = None
    proposal_reason: str = ""
    existing_candidate: str | None = None
    results: list[replay.FixtureResult] = field(default_factory=list)
    gate: replay.GateResult | None = None


@dataclass
class RoundPlan:
    round_index: int
    scored: list[tuple[triage.ReviewCandidate, Drift]]
    selected: list[str]
    reviews: list[ReviewPlan]


def score(mem: AECGMemory, skill: Skill) -> tuple[triage.ReviewCandidate, Drift]:
    p = mem.p
    d = belief_drift(skill.belief, p.beliefs, p.drift, f"{mem.services.seed}:{skill.id}")
    cooling = skill.reviewed_at is not None and skill.belief.events - skill.reviewed_at < p.triage.cooldown_events
    ok = qualifies(d, skill.uses, p.drift) and not cooling
    return triage.ReviewCandidate(skill.id, d.score, float(sum(skill.exposure)), ok), d


def failure_fixtures(mem: AECGMemory, skill: Skill) -> list[Fixture]:
    """Decisions of the BadCases admitted against the version (the last `fixture_history`)."""
    return [mem.store.badcases[b].fixtures[skill.id] for b in skill.badcases]


def success_fixtures(skill: Skill, failures: list[Fixture]) -> list[Fixture]:
    """Historical same-scope successes, disjoint (by task) from the failure fixtures."""
    failed = {f.task_id for f in failures}
    return [f for f in skill.success_fixtures if f.task_id not in failed]


def fixture_sets(mem: AECGMemory, skill: Skill) -> tuple[list[Fixture], list[Fixture], list[Fixture], list[Fixture]]:
    """(failures, successes) shown to the reviser, then (failures, successes) held out for replay:
    a fixed seeded split per fixture (replay.holdout_fraction), each side capped at
    intervention.max_failure_fixtures / max_success_fixtures (the most recent)."""
    failures = failure_fixtures(mem, skill)
    successes = success_fixtures(skill, failures)
    key, frac = f"{mem.services.seed}:{skill.lineage}", mem.p.replay.holdout_fraction
    shown_f, held_f = replay.split(failures, replay.FAILURE, key, frac)
    shown_s, held_s = replay.split(successes, replay.SUCCESS, key, frac)
    nf, ns = mem.p.intervention.max_failure_fixtures, mem.p.intervention.max_success_fixtures

    def last(xs: list[Fixture], n: int) -> list[Fixture]:
        return xs[-n:] if n else []

    return last(shown_f, nf), last(shown_s, ns), last(held_f, nf), last(held_s, ns)


def plan_round(mem: AECGMemory, round_index: int) -> RoundPlan:
    scored = [score(mem, s) for s in mem.store.active_skills()]
    p = mem.p.triage
    chosen = triage.select([c for c, _ in scored], p.budget, p.order, f"{mem.services.seed}:review:{round_index}")
    drifts = {c.skill_id: d for c, d in scored}
    reviews = [_plan_review(mem, mem.store.skills[c.skill_id], c, drifts[c.skill_id]) for c in chosen]
    return RoundPlan(round_index, scored, [c.skill_id for c in chosen], reviews)


def _plan_review(mem: AECGMemory, skill: Skill, cand: triage.ReviewCandidate, drift: Drift) -> ReviewPlan:
    failures, successes, held_failures, held_successes = fixture_sets(mem, skill)
    if skill.pending_candidate is not None:
        pending = mem.store.skills[skill.pending_candidate]
        plan = ReviewPlan(
            skill.id,
            cand,
            drift,
            pending.route or iv.NO_CHANGE,
            "replaying the monitored candidate",
            failures,
            successes,
            held_failures,
            held_successes,
            pending.content,
            existing_candidate=pending.id,
        )
        return _replay(mem, skill, plan)
    modes = [mem.store.badcases[b].failure_mode for b in skill.badcases]
    route, why = iv.route(modes)
    plan = ReviewPlan(skill.id, cand, drift, route, why, failures, successes, held_failures, held_successes)
    if route == iv.NO_CHANGE:
        plan.proposal_reason = why
        return plan
    payload = iv.intervention_payload(skill, failures, successes, mem.p.intervention.max_predicate_terms)
    if route == iv.NARROWING:
        reply = mem.llm_call(prompts.CONTEXT_NARROWING, payload)
        plan.content, plan.proposal_reason = iv.parse_narrowing(
            reply, skill.content, mem.p.intervention.max_predicate_terms
        )
    else:
        reply = mem.llm_call(prompts.PROCEDURAL_REPAIR, payload)
        plan.content, plan.proposal_reason = iv.parse_repair(
            reply, skill.content, failures, mem.p.intervention.hardcode_ngram
        )
    if plan.content is None:
        return plan
    if not mem.p.replay.enabled:
        plan.gate = replay.GateResult(replay.ACTIVATE, "replay gate disabled (ablation)", 0, 0, 0, 0)
        return plan
    return _replay(mem, skill, plan)


def _replay(mem: AECGMemory, skill: Skill, plan: ReviewPlan) -> ReviewPlan:
    """Re-execute every held-out fixture with the parent and with the candidate (paired)."""
    assert plan.content is not None
    role = mem.p.replay.role

    def execute(messages: list[dict[str, str]]) -> str:
        return mem.complete(messages, role, "replay")

    for kind, fixtures in ((replay.FAILURE, plan.replay_failures), (replay.SUCCESS, plan.replay_successes)):
        for f in fixtures:
            plan.results.append(replay.replay_fixture(f, kind, skill.content, plan.content, skill.level, execute))
    plan.gate = replay.gate(plan.results, mem.p.replay)
    return plan


# -- commit ------------------------------------------------------------------------


def commit_round(mem: AECGMemory, plan: RoundPlan) -> None:
    qualified = [c.to_dict() | {"drift_detail": d.to_dict()} for c, d in plan.scored if c.qualified]
    mem.audit.record(
        "review_round",
        round=plan.round_index,
        order=mem.p.triage.order,
        budget=mem.p.triage.budget,
        active_skills=len(plan.scored),
        qualified=qualified,
        selected=plan.selected,
    )
    for review in plan.reviews:
        _commit_review(mem, review, plan.round_index)


def _next_version(mem: AECGMemory, lineage: str) -> int:
    return 1 + max(s.version for s in mem.store.skills.values() if s.lineage == lineage)


def _commit_review(mem: AECGMemory, plan: ReviewPlan, round_index: int) -> None:
    skill = mem.store.skills[plan.skill_id]
    skill.reviewed_at = skill.belief.events
    mem.store.counters.reviews += 1
    mem.audit.record(
        "review",
        skill=skill.id,
        lineage=skill.lineage,
        round=round_index,
        drift=plan.drift.to_dict(),
        exposure=round(plan.candidate.exposure, 6),
        severity=round(plan.candidate.severity, 6),
        belief=to_dict(skill.belief),
        route=plan.route,
        route_reason=plan.route_reason,
        failure_fixtures=[f.task_id for f in plan.failures],
        success_fixtures=[f.task_id for f in plan.successes],
        replay_failure_fixtures=[f.task_id for f in plan.replay_failures],
        replay_success_fixtures=[f.task_id for f in plan.replay_successes],
    )
    if plan.content is None:
        mem.audit.record(
            "intervention",
            skill=skill.id,
            lineage=skill.lineage,
            route=plan.route,
            outcome="no_change",
            reason=plan.proposal_reason,
        )
        return
    if plan.existing_candidate is not None:
        cand = mem.store.skills[plan.existing_candidate]
    else:
        version = _next_version(mem, skill.lineage)
        cand = Skill(
            id=f"{skill.lineage}.v{version}",
            lineage=skill.lineage,
            version=version,
            level=skill.level,
            family=skill.family,
            status=MONITORED,
            content=plan.content,
            belief=copy.deepcopy(skill.belief),  # placeholder until activation
            parent=skill.id,
            seed=skill.seed,
            route=plan.route,
            success_fixtures=list(skill.success_fixtures),
        )
        mem.store.skills[cand.id] = cand
        mem.audit.record(
            "intervention",
            skill=skill.id,
            lineage=skill.lineage,
            route=plan.route,
            outcome="candidate",
            candidate=cand.id,
            changed=_changed_fields(skill.content, cand.content),
            content=to_dict(cand.content),
            reason=plan.proposal_reason,
        )
    assert plan.gate is not None
    mem.audit.record(
        "replay",
        skill=skill.id,
        lineage=skill.lineage,
        candidate=cand.id,
        route=plan.route,
        results=[r.to_dict() for r in plan.results],
        gate=plan.gate.to_dict(),
    )
    _apply_gate(mem, skill, cand, plan.gate)


def _apply_gate(mem: AECGMemory, parent: Skill, cand: Skill, gate: replay.GateResult) -> None:
    p = mem.p
    if gate.decision == replay.ACTIVATE:
        pos, neg = B.evidence(parent.belief.slow, mem.prior)
        mitigated = gate.mitigated / gate.reproduced if gate.reproduced else 0.0
        cand.belief = B.inherit(pos, neg * (1 - mitigated), p.formation.inherit_fraction, mem.prior, p.beliefs.window)
        cand.status, parent.status, parent.pending_candidate = ACTIVE, SUPERSEDED, None
        mem.index.remove_skill(parent)
        mem.index.add_skill(cand)
        mem.store.counters.activations += 1
        mem.audit.record(
            "activation",
            skill=cand.id,
            lineage=cand.lineage,
            parent=parent.id,
            route=cand.route,
            reason=gate.reason,
            belief=to_dict(cand.belief),
        )
    elif gate.decision == replay.ISOLATE:
        cand.status, parent.pending_candidate = ISOLATED, None
        mem.store.counters.isolations += 1
        mem.audit.record(
            "isolation",
            skill=cand.id,
            lineage=cand.lineage,
            parent=parent.id,
            reason=gate.reason,
            parent_stays_active=True,
        )
    else:
        cand.status, parent.pending_candidate = MONITORED, cand.id
        mem.store.counters.monitored += 1
        mem.audit.record(
            "monitoring",
            skill=cand.id,
            lineage=cand.lineage,
            parent=parent.id,
            reason=gate.reason,
            parent_stays_active=True,
        )


def _changed_fields(old: SkillContent, new: SkillContent) -> list[str]:
    a, b = to_dict(old), to_dict(new)
    return [k for k in a if a[k] != b[k]]
