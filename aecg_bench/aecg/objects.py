"""Scope-preserving memory objects (AECG sec. 3.2.1) and their JSON form.

- `Memory`: one successful experience at one coordination level (team,
  event or agent), with its evidence (confidence-weighted successes `pos`,
  admitted failures `neg`) and the fixture it came from.
- `Skill`: one version of a reusable procedure, formed from a seed memory
  and keeping the seed's level. Versions of one skill share a `lineage`;
  each version has its own dual belief.
- `BadCase`: a failed trajectory, kept whether or not a failure was
  attributed, with the decision context of every object it recalled.
- `Fixture`: a recorded decision (context, behaviour, outcome) used by
  intervention prompts and replay.

Every object carries its level; evidence is only ever applied to the object
that was recalled, so nothing is pooled across levels unless the flat-scope
ablation pools the scopes themselves. All fields are JSON types (lists, not
tuples), so `to_dict`/`from_dict` round-trip exactly.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from aecg_bench.aecg.beliefs import Belief, Beta
from aecg_bench.aecg.predicate import Predicate, decision_text
from aecg_bench.types import Level

ACTIVE, MONITORED, ISOLATED, SUPERSEDED = "active", "monitored", "isolated", "superseded"
SKILL_STATUSES = (ACTIVE, MONITORED, ISOLATED, SUPERSEDED)


@dataclass
class Fixture:
    task_id: str
    task_type: str
    instruction: str
    level: Level
    agent: str
    role: str
    context: str
    behaviour: str
    success: bool
    value: float | None = None

    def text(self) -> str:
        return decision_text(self.task_type, self.instruction, self.level, self.role, self.agent, self.context)


@dataclass
class SkillContent:
    name: str
    applicability: str
    triggers: list[str]
    procedure: list[str]
    avoidance: list[str]
    evidence_summary: str
    predicate: Predicate = field(default_factory=Predicate)

    def render(self, level: str) -> str:
        """The text agents see when the skill is recalled."""
        lines = [f"Skill '{self.name}' ({level}-level decisions)", f"Use when: {self.applicability}"]
        if not self.predicate.empty:
            lines.append(f"Only if the situation matches: {self.predicate.describe()}")
        if self.triggers:
            lines.append("Triggers: " + "; ".join(self.triggers))
        lines.append("Procedure: " + " ".join(f"{i + 1}) {s}" for i, s in enumerate(self.procedure)))
        if self.avoidance:
            lines.append("Avoid: " + "; ".join(self.avoidance))
        return "\n".join(lines)

    def match_text(self) -> str:
        """What recall embeds: where the skill applies first, then what it does."""
        return "\n".join([self.name, self.applicability, *self.triggers, *self.procedure])


@dataclass
class Memory:
    id: str
    level: Level
    text: str
    family: str
    fixture: Fixture
    pos: float = 0.0
    neg: float = 0.0
    support: int = 1
    uses: int = 0
    consolidated_into: str | None = None
    promotion_attempts: int = 0


@dataclass
class Skill:
    id: str
    lineage: str
    version: int
    level: Level
    family: str
    status: str
    content: SkillContent
    belief: Belief
    parent: str | None = None
    seed: str | None = None
    neighbours: list[str] = field(default_factory=list)
    route: str | None = None  # intervention that produced this version
    uses: int = 0
    exposure: list[float] = field(default_factory=list)
    success_fixtures: list[Fixture] = field(default_factory=list)
    badcases: list[str] = field(default_factory=list)  # BadCases admitted against this version
    reviewed_at: int | None = None  # belief.events at the last review
    pending_candidate: str | None = None  # a monitored candidate awaiting replay

    def text(self) -> str:
        return self.content.render(self.level)


@dataclass
class Judgement:
    judge: int
    abstain: bool
    skill_id: str | None
    scope: str | None
    confidence: float
    failure_mode: str
    clause: str = ""
    behaviour: str = ""
    reason: str = ""


@dataclass
class BadCase:
    id: str
    task_id: str
    status: str  # admitted | unresolved | symmetric | no_candidates
    fixtures: dict[str, Fixture] = field(default_factory=dict)  # recalled object id -> decision where used
    judgements: list[Judgement] = field(default_factory=list)
    blamed: list[str] = field(default_factory=list)
    failure_mode: str = "unclear"
    mean_confidence: float | None = None
    reason: str = ""


# -- JSON ---------------------------------------------------------------------


def to_dict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


def fixture_from(d: dict[str, Any]) -> Fixture:
    return Fixture(**d)


def content_from(d: dict[str, Any]) -> SkillContent:
    return SkillContent(**{**d, "predicate": Predicate(**d["predicate"])})


def belief_from(d: dict[str, Any]) -> Belief:
    origin, peak = d.get("origin"), d.get("peak")
    return Belief(
        slow=Beta(**d["slow"]),
        fast=Beta(**d["fast"]),
        events=d["events"],
        origin=Beta(**origin) if origin else None,
        peak=Beta(**peak) if peak else None,
    )


def memory_from(d: dict[str, Any]) -> Memory:
    return Memory(**{**d, "fixture": fixture_from(d["fixture"])})


def skill_from(d: dict[str, Any]) -> Skill:
    return Skill(
        **{
            **d,
            "content": content_from(d["content"]),
            "belief": belief_from(d["belief"]),
            "success_fixtures": [fixture_from(f) for f in d["success_fixtures"]],
        }
    )


def badcase_from(d: dict[str, Any]) -> BadCase:
    return BadCase(
        **{
            **d,
            "fixtures": {k: fixture_from(f) for k, f in d["fixtures"].items()},
            "judgements": [Judgement(**j) for j in d["judgements"]],
        }
    )
