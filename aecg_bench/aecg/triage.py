"""Budgeted review triage (AECG sec. 3.4.1).

Only skills that passed the reliability gate are ranked; exposure never
makes an unqualified skill eligible. At most `budget` skills are reviewed
per round.

Orders:
- exposure (AECG): severity = drift * exposure, highest first;
- risk (risk-only ablation): drift, highest first;
- random (random-review ablation): a shuffle seeded by (run seed, round).

Ties break by skill id so every order is deterministic. The paper ranks by
"severity from drift and exposure" without a formula; the product is ours.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ORDERS = ("exposure", "risk", "random")


@dataclass(frozen=True)
class ReviewCandidate:
    skill_id: str
    drift: float
    exposure: float
    qualified: bool

    @property
    def severity(self) -> float:
        return self.drift * self.exposure

    def to_dict(self) -> dict[str, object]:
        return {
            "skill": self.skill_id,
            "drift": round(self.drift, 6),
            "exposure": round(self.exposure, 6),
            "severity": round(self.severity, 6),
            "qualified": self.qualified,
        }


def rank(candidates: list[ReviewCandidate], order: str, seed_key: str) -> list[ReviewCandidate]:
    """Qualified candidates in review order."""
    pool = sorted((c for c in candidates if c.qualified), key=lambda c: c.skill_id)
    if order == "exposure":
        return sorted(pool, key=lambda c: -c.severity)
    if order == "risk":
        return sorted(pool, key=lambda c: -c.drift)
    if order == "random":
        random.Random(seed_key).shuffle(pool)
        return pool
    raise ValueError(f"unknown triage order {order!r}; valid: {', '.join(ORDERS)}")


def select(candidates: list[ReviewCandidate], budget: int, order: str, seed_key: str) -> list[ReviewCandidate]:
    return rank(candidates, order, seed_key)[: max(budget, 0)]
