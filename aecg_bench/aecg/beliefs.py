"""Dual-timescale Beta-style reliability beliefs (AECG sec. 3.3, B.2).

Each active skill version keeps two Beta(alpha, beta) beliefs over its
success probability. They are scoring devices, not posteriors of a full
generative model (the paper says the same):

- slow: cumulative. An admitted outcome of weight w adds w to alpha (success)
  or beta (failure).
- fast: discounted. Before adding, the evidence above the prior is multiplied
  by lambda**w with lambda = 1 - 1/W, so the fast belief's evidence mass stays
  below the window W (measured in evidence mass, not in calls: a half-credit
  success discounts half as much as a full one).

Evidence inheritance at promotion (sec. 3.2.3): a skill inherits a fraction
rho of its seed's evidence; the slow belief keeps that discounted evidence,
the fast belief keeps the same evidence scaled down so that its mass is at
most W. The same rule carries a parent version's slow evidence into a newly
activated version.

Deviation/choices: the paper does not publish W, rho, the prior or the exact
discount form; the values in `params.BeliefParams` are ours.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Beta:
    alpha: float
    beta: float

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def mass(self, prior: Beta) -> float:
        """Evidence above the prior."""
        return self.alpha + self.beta - prior.alpha - prior.beta

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.beta(self.alpha, self.beta, size=n)


@dataclass
class Belief:
    slow: Beta
    fast: Beta
    events: int = 0  # admitted evidence events since this version was created
    # references of the cumulative-only ablation, which judges degradation on the slow belief alone
    # (see `drift`): the slow belief this version started from (inherited at promotion or activation)
    # and the slow belief at its highest mean since then
    origin: Beta | None = None
    peak: Beta | None = None

    def reference(self, which: str) -> Beta:
        ref = self.peak if which == "peak" else self.origin
        return ref if ref is not None else self.slow


def _peak(previous: Beta | None, slow: Beta) -> Beta:
    return slow if previous is None or slow.mean >= previous.mean else previous


def discount(window: float) -> float:
    """Per-unit-mass decay of the fast belief for window W."""
    return 1.0 - 1.0 / window


def update(belief: Belief, success: bool, weight: float, prior: Beta, window: float) -> Belief:
    """The belief after one admitted outcome of `weight` (a new object; the input is unchanged)."""
    if weight < 0:
        raise ValueError(f"evidence weight must be >= 0, got {weight}")
    s, f = (weight, 0.0) if success else (0.0, weight)
    slow = Beta(belief.slow.alpha + s, belief.slow.beta + f)
    d = discount(window) ** weight
    fast = Beta(
        prior.alpha + d * (belief.fast.alpha - prior.alpha) + s,
        prior.beta + d * (belief.fast.beta - prior.beta) + f,
    )
    return Belief(slow=slow, fast=fast, events=belief.events + 1, origin=belief.origin, peak=_peak(belief.peak, slow))


def inherit(pos: float, neg: float, fraction: float, prior: Beta, window: float) -> Belief:
    """Initial belief of a skill (version) from `fraction` of inherited evidence (pos, neg)."""
    ip, ineg = fraction * max(pos, 0.0), fraction * max(neg, 0.0)
    mass = ip + ineg
    scale = min(1.0, window / mass) if mass > 0 else 1.0
    slow = Beta(prior.alpha + ip, prior.beta + ineg)
    return Belief(
        slow=slow, fast=Beta(prior.alpha + scale * ip, prior.beta + scale * ineg), events=0, origin=slow, peak=slow
    )


def evidence(b: Beta, prior: Beta) -> tuple[float, float]:
    """(successes, failures) a belief holds above its prior."""
    return b.alpha - prior.alpha, b.beta - prior.beta
