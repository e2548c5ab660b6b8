"""Controlled outcome streams for the reliability rule (no LLM; a unit-level check, NOT the paper's RQ3).

A skill is promoted from a seed, used `history` times at success rate
`p_before`, then corrupted and used at `p_after`. Review rounds come every
`review_every` uses (1 = after every use); at a round the drift gate is
checked, and a skill reviewed within the last `cooldown` evidence events is
not eligible (as in `governance`). A failure is admitted as negative
evidence with probability 1 - `admission_noise` (else it stays unresolved
and adds nothing, as when the two judges disagree or abstain). The
detection delay is the number of post-corruption uses until the first
review after the corruption (None if none within `horizon`); a review
before the corruption is a false alarm (it starts the cooldown). With one
skill, a budget of one review per round never binds, so there is no budget
parameter: the mechanism tests (`aecg_bench.mechanisms`) measure the
budgeted, LLM-judged version.

The streams of outcomes and admission draws depend only on `seed`, so
variants (dual timescale vs cumulative only) see the same outcomes.
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
    review_every: int = 1  # uses between review rounds
    cooldown: int = 5  # evidence events before a reviewed skill is eligible again
    admission_noise: float = 0.0  # probability that a failure stays unresolved


def outcome_stream(c: Corruption, seed: int) -> list[bool]:
    rng = random.Random(f"corruption:{seed}")
    before = [rng.random() < c.p_before for _ in range(c.history)]
    after = [rng.random() < c.p_after for _ in range(c.horizon)]
    return before + after


def admitted_stream(c: Corruption, seed: int) -> list[bool]:
    """Whether each use's failure (if it fails) is admitted; independent of the outcomes."""
    rng = random.Random(f"admission:{seed}")
    return [rng.random() >= c.admission_noise for _ in range(c.history + c.horizon)]


def detection_delay(c: Corruption, seed: int, beliefs: BeliefParams, drift: DriftParams) -> tuple[int | None, int]:
    """(post-corruption uses until the first review after the corruption or None, reviews before it)."""
    prior = B.Beta(beliefs.prior_alpha, beliefs.prior_beta)
    belief = B.inherit(c.seed_support, 0.0, c.inherit_fraction, prior, beliefs.window)
    false_alarms, reviewed_at = 0, None
    for i, (success, admitted) in enumerate(zip(outcome_stream(c, seed), admitted_stream(c, seed), strict=True)):
        if success or admitted:
            belief = B.update(belief, success, 1.0, prior, beliefs.window)
        if (i + 1) % c.review_every:
            continue
        if reviewed_at is not None and belief.events - reviewed_at < c.cooldown:
            continue
        if qualifies(belief_drift(belief, beliefs, drift, f"sim:{seed}"), i + 1, drift):
            if i >= c.history:
                return i - c.history + 1, false_alarms
            false_alarms += 1
            reviewed_at = belief.events
    return None, false_alarms
