"""AECG's math: beliefs, drift score, exposure, triage (unit and property tests, no LLM)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg.drift import belief_drift, paired_drift, qualifies
from aecg_bench.aecg.exposure import downstream_reach
from aecg_bench.aecg.params import BeliefParams, DriftParams
from aecg_bench.aecg.triage import ReviewCandidate, rank, select
from aecg_bench.types import DecisionNode

PRIOR = B.Beta(1.0, 1.0)
probs = st.floats(0.0, 1.0)
weights = st.floats(0.0, 1.0)
events = st.lists(st.tuples(st.booleans(), weights), max_size=60)


# -- beliefs -------------------------------------------------------------------


def test_slow_belief_adds_the_admitted_weight_and_fast_discounts_the_past():
    b = B.inherit(0, 0, 0.5, PRIOR, window=4.0)
    b1 = B.update(b, True, 1.0, PRIOR, window=4.0)
    assert (b1.slow.alpha, b1.slow.beta) == (2.0, 1.0)
    assert (b1.fast.alpha, b1.fast.beta) == (2.0, 1.0)
    b2 = B.update(b1, False, 0.5, PRIOR, window=4.0)
    assert (b2.slow.alpha, b2.slow.beta) == (2.0, 1.5)
    d = (1 - 1 / 4.0) ** 0.5  # a half-weight event discounts by lambda**0.5
    assert b2.fast.alpha == pytest.approx(1 + d * 1.0)
    assert b2.fast.beta == pytest.approx(1 + 0.5)
    assert b2.events == 2 and b.events == 0  # the input belief is unchanged


@given(events, st.floats(1.5, 20.0))
def test_fast_mass_stays_within_the_window_and_slow_mass_is_the_total_weight(seq, window):
    b = B.inherit(0, 0, 0.5, PRIOR, window)
    for success, w in seq:
        b = B.update(b, success, w, PRIOR, window)
    assert b.fast.mass(PRIOR) <= window + 1e-9
    assert b.slow.mass(PRIOR) == pytest.approx(sum(w for _, w in seq))
    assert b.slow.alpha - PRIOR.alpha == pytest.approx(sum(w for s, w in seq if s))


@given(st.floats(0, 200), st.floats(0, 200), st.floats(0, 1), st.floats(1.5, 20.0))
def test_inheritance_discounts_the_slow_evidence_and_caps_the_fast_mass(pos, neg, frac, window):
    b = B.inherit(pos, neg, frac, PRIOR, window)
    assert b.slow.alpha - 1 == pytest.approx(frac * pos)
    assert b.slow.beta - 1 == pytest.approx(frac * neg)
    assert b.fast.mass(PRIOR) <= min(window, frac * (pos + neg)) + 1e-9
    if frac * (pos + neg) > 0:  # the fast belief keeps the inherited success ratio
        assert (b.fast.alpha - 1) * (frac * neg) == pytest.approx((b.fast.beta - 1) * (frac * pos), abs=1e-6)


def test_negative_weight_is_refused():
    with pytest.raises(ValueError, match="weight"):
        B.update(B.inherit(0, 0, 0.5, PRIOR, 5.0), True, -1.0, PRIOR, 5.0)


# -- drift ---------------------------------------------------------------------

beta_params = st.tuples(st.floats(0.5, 60), st.floats(0.5, 60))


@given(beta_params, beta_params, st.floats(0.0, 1.0), st.booleans(), st.integers(0, 10_000))
@settings(max_examples=150)
def test_drift_never_exceeds_the_belief_mean_degradation(slow, fast, floor, dual, seed):
    belief = B.Belief(B.Beta(*slow), B.Beta(*fast), events=seed)
    d = belief_drift(belief, BeliefParams(fast=dual), DriftParams(samples=64, reliability_floor=floor), "k")
    ref_mean = max((belief.slow if dual else belief.reference("peak")).mean, floor)
    cur_mean = belief.fast.mean if dual else belief.slow.mean
    assert 0.0 <= d.score <= max(0.0, ref_mean - cur_mean) + 1e-12
    assert d.score <= d.clipped + 1e-12
    if ref_mean <= cur_mean:
        assert d.score == 0.0


@given(st.lists(st.floats(0, 1), min_size=1, max_size=50), st.floats(0, 1), st.floats(0, 1))
def test_paired_drift_is_zero_without_degradation_and_attenuated_by_inconsistency(samples, m_ref, m_cur):
    ref = np.array(samples)
    d = paired_drift(ref, ref, m_ref, m_cur)  # identical samples never degrade
    assert d.score == 0.0 and d.consistency == 0.0
    half = paired_drift(np.array([0.9, 0.1]), np.array([0.1, 0.9]), 0.9, 0.1)
    full = paired_drift(np.array([0.9, 0.9]), np.array([0.1, 0.1]), 0.9, 0.1)
    assert half.consistency == 0.5 and full.consistency == 1.0
    assert half.score < full.score


def test_drift_is_a_pure_function_of_the_belief_and_key():
    belief = B.Belief(B.Beta(20, 3), B.Beta(2, 5), events=7)
    a = belief_drift(belief, BeliefParams(), DriftParams(), "s1.v1")
    assert a == belief_drift(belief, BeliefParams(), DriftParams(), "s1.v1")
    assert a.score > 0.2 and qualifies(a, uses=7, params=DriftParams())
    assert not qualifies(a, uses=1, params=DriftParams())  # min_uses


def test_gate_needs_consistent_degradation():
    healthy = B.Belief(B.Beta(20, 3), B.Beta(5, 1.5), events=9)
    assert not qualifies(belief_drift(healthy, BeliefParams(), DriftParams(), "x"), 9, DriftParams())


def test_reliability_floor_makes_a_weak_history_failing_skill_qualify():
    failing = B.Belief(B.Beta(7, 17), B.Beta(1.1, 5.9), events=20)
    pure = belief_drift(failing, BeliefParams(), DriftParams(reliability_floor=0.0), "x")
    floored = belief_drift(failing, BeliefParams(), DriftParams(reliability_floor=0.6), "x")
    assert not qualifies(pure, 20, DriftParams()) and qualifies(floored, 20, DriftParams())


# -- exposure ------------------------------------------------------------------


def node(i: str, *parents: str, level: str = "agent") -> DecisionNode:
    return DecisionNode(id=i, agent="a", role="r", level=level, parents=parents)  # type: ignore[arg-type]


def test_exposure_counts_a_converging_path_once_and_discounts_by_distance():
    # t0 -> e1, e2 -> a1 (both paths converge) -> a2
    g = [node("t0", level="team"), node("e1", "t0"), node("e2", "t0"), node("a1", "e1", "e2"), node("a2", "a1")]
    assert downstream_reach(g, ["t0"], 0.5) == pytest.approx(1 + 2 * 0.5 + 0.25 + 0.125)
    assert downstream_reach(g, ["a1"], 0.5) == pytest.approx(1 + 0.5)
    both = downstream_reach(g, ["t0", "a1"], 0.5)  # a1 and a2 counted once, at their nearest source
    assert both == pytest.approx(1 + 0.5 + 0.5 + 1 + 0.5)
    assert both < downstream_reach(g, ["t0"], 0.5) + downstream_reach(g, ["a1"], 0.5)


def test_exposure_ignores_unknown_parents_and_cycles():
    g = [node("a", "ghost", "c"), node("b", "a"), node("c", "b")]
    assert downstream_reach(g, ["a"], 0.5) == pytest.approx(1 + 0.5 + 0.25)
    assert downstream_reach(g, ["missing"], 0.5) == 0.0


@given(st.integers(1, 12), st.floats(0.05, 1.0))
def test_exposure_decreases_with_the_distance_of_the_source_from_the_root(n, discount):
    chain = [node("n0")] + [node(f"n{i}", f"n{i - 1}") for i in range(1, n + 1)]
    reaches = [downstream_reach(chain, [f"n{i}"], discount) for i in range(n + 1)]
    assert all(a >= b for a, b in itertools.pairwise(reaches))
    # a descendant at distance h contributes discount**h <= 1
    assert reaches[0] <= n + 1


# -- triage --------------------------------------------------------------------

cands = st.lists(
    st.builds(
        ReviewCandidate,
        skill_id=st.text("abcdefgh", min_size=1, max_size=4),
        drift=st.floats(0, 1),
        exposure=st.floats(0, 50),
        qualified=st.booleans(),
    ),
    max_size=20,
    unique_by=lambda c: c.skill_id,
)


@given(cands, st.integers(0, 5), st.sampled_from(["exposure", "risk", "random"]))
def test_triage_respects_the_budget_and_ranks_only_qualified_skills(cs, budget, order):
    chosen = select(cs, budget, order, "seed:round")
    assert len(chosen) <= budget
    assert all(c.qualified for c in chosen)
    assert len(chosen) == min(budget, sum(c.qualified for c in cs))
    if order == "exposure" and chosen:
        top = max((c.severity for c in cs if c.qualified), default=0)
        assert chosen[0].severity == top


def test_exposure_order_prefers_reach_and_risk_order_ignores_it():
    a = ReviewCandidate("a", drift=0.30, exposure=2.0, qualified=True)
    b = ReviewCandidate("b", drift=0.20, exposure=10.0, qualified=True)
    c = ReviewCandidate("c", drift=0.90, exposure=99.0, qualified=False)
    assert [x.skill_id for x in rank([a, b, c], "exposure", "k")] == ["b", "a"]
    assert [x.skill_id for x in rank([a, b, c], "risk", "k")] == ["a", "b"]
    with pytest.raises(ValueError, match="valid"):
        rank([a], "loudest", "k")
