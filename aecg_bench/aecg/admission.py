"""Asymmetric evidence admission (AECG sec. 3.2.2, B.1, B.5).

Success: the task's success confidence c (the outcome value clipped to
[0, 1] when the label gives one in (0, 1], else 1) is positive evidence for
what the trajectory recalled, divided across distinct provenance families:
each family gets c / F, split evenly among its recalled members. A family
is a lineage of derived objects (a seed memory, the skill it became, every
version and every equivalent linked to it), so a task that recalled a skill
and the memory it came from is not credited twice.

Failure: two independent LLM judges read the BadCase. Negative evidence
(the object's share of the task, by the success rule with confidence 1; ours)
is admitted against one object only when both judges name
the same recalled object and the same scope, that scope is the object's,
neither abstains and their mean confidence is at least 0.70 (paper). An
unparsable verdict counts as an abstention. Anything else leaves the
failure unresolved: no negative evidence, the BadCase is kept.

Symmetric ablation: the judges still diagnose (the failure mode routes the
intervention), but their agreement no longer gates admission: every failure
adds negative evidence (its share of the task) against every recalled object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aecg_bench.aecg import llm_json
from aecg_bench.aecg.objects import Judgement
from aecg_bench.aecg.traces import trace_summary
from aecg_bench.types import Episode, Outcome

FAILURE_MODES = ("applicability", "procedure", "unclear")


def success_confidence(outcome: Outcome) -> float:
    if outcome.value is not None and 0.0 < outcome.value <= 1.0:
        return float(outcome.value)
    return 1.0


def family_credit(families: dict[str, str], confidence: float) -> dict[str, float]:
    """object id -> positive evidence weight, given each recalled object's family."""
    members: dict[str, list[str]] = {}
    for oid, fam in families.items():
        members.setdefault(fam, []).append(oid)
    if not members:
        return {}
    per_family = confidence / len(members)
    return {oid: per_family / len(ids) for ids in members.values() for oid in ids}


@dataclass(frozen=True)
class Candidate:
    id: str
    kind: str  # skill | memory
    scope: str
    text: str
    used_at: tuple[str, ...]

    def to_payload(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "scope": self.scope, "text": self.text, "used_at": list(self.used_at)}


def attribution_payload(episode: Episode, candidates: list[Candidate], max_decisions: int) -> dict[str, Any]:
    task = episode.task
    return {
        "task": {"type": task.task_type, "instruction": task.instruction[:1500]},
        "outcome": {"success": False, "value": episode.outcome.value, "status": str(episode.trajectory.status)},
        "trace": trace_summary(episode.trajectory, max_decisions),
        "candidates": [c.to_payload() for c in candidates],
    }


def parse_judgement(text: str, judge: int, scopes: dict[str, str]) -> Judgement:
    """One judge's verdict; anything unusable becomes an abstention with the reason."""

    def abstain(reason: str) -> Judgement:
        return Judgement(
            judge=judge, abstain=True, skill_id=None, scope=None, confidence=0.0, failure_mode="unclear", reason=reason
        )

    obj = llm_json.parse_object(text)
    if obj is None:
        return abstain("unparsable verdict")
    if llm_json.as_bool(obj.get("abstain", False)):
        return abstain("judge abstained: " + llm_json.as_str(obj.get("alternatives_considered") or obj.get("reason")))
    raw_id = llm_json.as_str(obj.get("skill_id"), 80)
    by_lower = {k.lower(): k for k in scopes}
    skill_id = raw_id if raw_id in scopes else by_lower.get(raw_id.lower())
    if skill_id is None:
        return abstain(f"named no recalled object ({raw_id!r})")
    confidence = llm_json.as_confidence(obj.get("confidence"))
    if confidence is None:
        return abstain("no readable confidence")
    mode = llm_json.as_str(obj.get("failure_mode"), 20).lower()
    return Judgement(
        judge=judge,
        abstain=False,
        skill_id=skill_id,
        scope=llm_json.as_str(obj.get("scope"), 20).lower() or None,
        confidence=confidence,
        failure_mode=mode if mode in FAILURE_MODES else "unclear",
        clause=llm_json.as_str(obj.get("clause")),
        behaviour=llm_json.as_str(obj.get("behaviour") or obj.get("behavior")),
        reason=llm_json.as_str(obj.get("alternatives_considered")),
    )


@dataclass(frozen=True)
class Attribution:
    admitted: str | None  # object id negative evidence goes to
    mean_confidence: float | None
    failure_mode: str
    reason: str


def decide(judgements: list[Judgement], scopes: dict[str, str], min_mean_confidence: float) -> Attribution:
    """The paper's agreement rule over the two verdicts."""
    if len(judgements) != 2:
        raise ValueError(f"asymmetric admission needs exactly two judgements, got {len(judgements)}")
    a, b = judgements
    for j in judgements:
        if j.abstain:
            return Attribution(None, None, "unclear", f"judge {j.judge} abstained ({j.reason})")
    mean = (a.confidence + b.confidence) / 2
    if a.skill_id != b.skill_id:
        return Attribution(None, mean, "unclear", f"judges named different objects ({a.skill_id} vs {b.skill_id})")
    assert a.skill_id is not None
    if a.scope != b.scope:
        return Attribution(None, mean, "unclear", f"judges named different scopes ({a.scope} vs {b.scope})")
    if a.scope != scopes[a.skill_id]:
        return Attribution(None, mean, "unclear", f"named scope {a.scope} is not the object's ({scopes[a.skill_id]})")
    if mean < min_mean_confidence:
        return Attribution(None, mean, "unclear", f"mean confidence {mean:.2f} < {min_mean_confidence:.2f}")
    mode = a.failure_mode if a.failure_mode == b.failure_mode else "unclear"
    return Attribution(a.skill_id, mean, mode, "both judges agree")
