"""Controlled outcome streams for the reliability mechanism (no LLM; AECG RQ3, Figure 3).

A skill is promoted from a seed, used `history` times at success rate
`p_before`, then corrupted and used at `p_after`. After every use the drift
gate is checked, as a review round with a free budget would; the detection
delay is the number of post-corruption uses until the skill first qualifies
(None if it never does within `horizon`). Admission is taken as given: every
success is full positive evidence and every failure admitted negative
evidence, so the comparison isolates the beliefs.

The stream of outcomes depends only on `seed`, so variants (dual timescale
vs cumulative only) see the same outcomes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg.drift import belief_drift, qualifies
from aecg_bench.aecg.params import BeliefParams, DriftParams


@dataclass(frozen=True)
class Corruption:
    history: int = 20
    p_before: float = 0.9
    p_after: float = 0.2
    horizon: int = 60
    seed_support: float = 2.0  # successes the seed memory had at promotion
    inherit_fraction: float = 0.5


def outcome_stream(c: Corruption, seed: int) -> list[bool]:
    rng = random.Random(f"corruption:{seed}")
    before = [rng.random() < c.p_before for _ in range(c.history)]
    after = [rng.random() < c.p_after for _ in range(c.horizon)]
    return before + after


def detection_delay(c: Corruption, seed: int, beliefs: BeliefParams, drift: DriftParams) -> tuple[int | None, int]:
    """(post-corruption uses until the first qualification or None, qualifications before corruption)."""
    prior = B.Beta(beliefs.prior_alpha, beliefs.prior_beta)
    belief = B.inherit(c.seed_support, 0.0, c.inherit_fraction, prior, beliefs.window)
    false_alarms = 0
    for i, success in enumerate(outcome_stream(c, seed)):
        belief = B.update(belief, success, 1.0, prior, beliefs.window)
        d = belief_drift(belief, beliefs, drift, f"sim:{seed}")
        if qualifies(d, i + 1, drift):
            if i >= c.history:
                return i - c.history + 1, false_alarms
            false_alarms += 1
    return None, false_alarms
