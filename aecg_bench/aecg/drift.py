"""Drift score and confidence gate (AECG sec. 3.3, B.2).

From K paired samples (r_k, c_k) of a reference belief and a current belief,
with d_k = r_k - c_k:

    mean_gap    = max(0, mean(reference) - mean(current))   belief-mean degradation
    clipped     = mean_k max(0, d_k)                        clipped sampled degradation
    consistency = mean_k [d_k > 0]                          how consistently samples degrade
    drift       = min(clipped, mean_gap) * consistency

so the drift never exceeds the belief-mean degradation, is zero when the
means show none, and shrinks when the samples disagree. It is a ranking
score, not a calibrated test statistic (as in the paper).

A skill qualifies for review when consistency >= gate_confidence,
drift >= min_drift and the version has been used at least min_uses times
(and is out of its post-review cooldown, see `governance`).

Reference and current beliefs:
- AECG (dual timescale, sec. 3.3): reference = the slow belief (history),
  current = the fast belief (recent).
- Cumulative-only ablation (RQ3, Figure 3): no fast belief, so degradation
  is judged on the slow belief alone: current = the slow belief now,
  reference = the slow belief at an earlier point of the same version,
  `cumulative_reference`: `peak` (default: its highest-mean state since the
  version was created) or `origin` (the belief it was created with). The
  qualification rule is the full method's. The paper names the variant
  without a formula; both references are our readings (docs/memory/aecg.md
  gives their detection delays: `origin` rarely reviews a skill with a long
  good history at all, `peak` reviews it a little later than dual).
- `reliability_floor` (ours, default 0 = off, the paper has none) bounds the
  reference from below in both variants: r_k = max(r_k, floor), its mean
  max(mean, floor). With it, a skill that fails from its first uses after a
  weak history is reviewed too; the paper's method does not do that.

Samples come from a generator seeded by a hash of (run seed, skill version,
evidence events), so the score is a pure function of the belief: no RNG
state to snapshot, and the same score on resume.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from aecg_bench.aecg.beliefs import Belief
from aecg_bench.aecg.params import BeliefParams, DriftParams


@dataclass(frozen=True)
class Drift:
    score: float
    mean_gap: float
    clipped: float
    consistency: float

    def to_dict(self) -> dict[str, float]:
        return {
            "score": round(self.score, 6),
            "mean_gap": round(self.mean_gap, 6),
            "clipped": round(self.clipped, 6),
            "consistency": round(self.consistency, 6),
        }


def rng_for(*parts: object) -> np.random.Generator:
    """A generator determined by `parts` only."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


def paired_drift(reference: np.ndarray, current: np.ndarray, reference_mean: float, current_mean: float) -> Drift:
    d = reference - current
    mean_gap = max(0.0, reference_mean - current_mean)
    clipped = float(np.mean(np.clip(d, 0.0, None)))
    consistency = float(np.mean(d > 0))
    return Drift(min(clipped, mean_gap) * consistency, mean_gap, clipped, consistency)


def belief_drift(belief: Belief, beliefs: BeliefParams, params: DriftParams, key: str) -> Drift:
    rng = rng_for(key, belief.events)
    n, floor = params.samples, params.reliability_floor
    if beliefs.fast:
        reference, current = belief.slow, belief.fast
    else:
        reference, current = belief.reference(params.cumulative_reference), belief.slow
    ref = np.maximum(reference.sample(rng, n), floor)
    return paired_drift(ref, current.sample(rng, n), max(reference.mean, floor), current.mean)


def qualifies(drift: Drift, uses: int, params: DriftParams) -> bool:
    return drift.consistency >= params.gate_confidence and drift.score >= params.min_drift and uses >= params.min_uses
