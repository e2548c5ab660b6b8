"""AECG's belief, drift, exposure and triage math at its boundaries (issue 17's mutation campaign).

tests/test_aecg_math.py checks the properties the paper states; these tests pin the exact values and the
edges (equality at a gate, zero weight, empty graphs, ties, seeds) that its properties leave free, so a
one-character change to a formula or a comparison fails a test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg.drift import Drift, belief_drift, paired_drift, qualifies, rng_for
from aecg_bench.aecg.exposure import children_map, distances, downstream_reach
from aecg_bench.aecg.params import BeliefParams, DriftParams
from aecg_bench.aecg.triage import ReviewCandidate, rank, select
from aecg_bench.types import DecisionNode

PRIOR = B.Beta(1.0, 1.0)

# -- beliefs -------------------------------------------------------------------------------------------------


def test_beta_mean_mass_and_evidence():
    b = B.Beta(3.0, 1.0)
    assert b.mean == 0.75
    assert b.mass(PRIOR) == 2.0 and b.mass(B.Beta(0.5, 0.5)) == 3.0
    assert B.evidence(b, PRIOR) == (2.0, 0.0)
    assert B.evidence(B.Beta(1.5, 4.0), B.Beta(0.5, 1.0)) == (1.0, 3.0)
    draws = b.sample(np.random.default_rng(0), 4000)
    assert draws.shape == (4000,) and abs(draws.mean() - 0.75) < 0.02 and 0 <= draws.min() <= draws.max() <= 1


def test_discount_is_one_minus_one_over_the_window():
    assert B.discount(4.0) == 0.75 and B.discount(2.0) == 0.5


def test_update_with_a_failure_and_a_non_uniform_prior():
    prior = B.Beta(2.0, 1.0)
    start = B.Belief(B.Beta(4.0, 3.0), B.Beta(4.0, 3.0), events=5)
    after = B.update(start, False, 1.0, prior, window=2.0)  # lambda = 0.5
    assert (after.slow.alpha, after.slow.beta) == (4.0, 4.0)
    # fast: prior + 0.5 * (evidence above the prior) + the new failure
    assert (after.fast.alpha, after.fast.beta) == (2.0 + 0.5 * 2.0, 1.0 + 0.5 * 2.0 + 1.0)
    assert after.events == 6
    zero = B.update(start, True, 0.0, prior, window=2.0)  # weight 0 is allowed and changes no evidence
    assert (zero.slow, zero.fast, zero.events) == (start.slow, start.fast, 6)


def test_inherit_caps_the_fast_mass_at_the_window_and_ignores_negative_evidence():
    b = B.inherit(30.0, 10.0, 0.5, PRIOR, window=5.0)  # inherited 15 + 5 = 20, scaled by 5/20
    assert (b.slow.alpha, b.slow.beta) == (16.0, 6.0)
    assert (b.fast.alpha, b.fast.beta) == (1.0 + 3.75, 1.0 + 1.25)
    assert b.events == 0
    small = B.inherit(2.0, 2.0, 0.5, PRIOR, window=5.0)  # mass 2 < window: kept whole
    assert (small.fast.alpha, small.fast.beta) == (2.0, 2.0)
    exact = B.inherit(5.0, 5.0, 0.5, PRIOR, window=5.0)  # mass == window: kept whole
    assert (exact.fast.alpha, exact.fast.beta) == (3.5, 3.5)
    neg = B.inherit(-4.0, 2.0, 1.0, PRIOR, window=5.0)
    assert (neg.slow.alpha, neg.slow.beta, neg.fast.alpha) == (1.0, 3.0, 1.0)
    none = B.inherit(0.0, 0.0, 1.0, B.Beta(2.0, 3.0), window=5.0)
    assert (none.slow, none.fast) == (B.Beta(2.0, 3.0), B.Beta(2.0, 3.0))


# -- drift ---------------------------------------------------------------------------------------------------


def test_paired_drift_components_by_hand():
    ref = np.array([0.9, 0.8, 0.3, 0.6])
    cur = np.array([0.5, 0.9, 0.1, 0.6])  # d = 0.4, -0.1, 0.2, 0
    d = paired_drift(ref, cur, reference_mean=0.7, current_mean=0.6)
    assert d.clipped == pytest.approx(0.15) and d.consistency == 0.5 and d.mean_gap == pytest.approx(0.1)
    assert d.score == pytest.approx(min(0.15, 0.1) * 0.5)
    better = paired_drift(ref, cur, reference_mean=0.5, current_mean=0.6)  # means show no degradation
    assert better.mean_gap == 0.0 and better.score == 0.0
    assert d.to_dict() == {"score": 0.05, "mean_gap": 0.1, "clipped": 0.15, "consistency": 0.5}
    assert Drift(1 / 3, 0.1234567, 0.7654321, 0.5555557).to_dict() == {
        "score": 0.333333,
        "mean_gap": 0.123457,
        "clipped": 0.765432,
        "consistency": 0.555556,
    }


def test_rng_for_depends_on_every_part_only():
    a = rng_for("s1", 3).random(4)
    assert np.array_equal(a, rng_for("s1", 3).random(4))
    assert not np.array_equal(a, rng_for("s1", 4).random(4))
    assert not np.array_equal(a, rng_for("s13").random(4))  # parts are joined with a separator


def test_belief_drift_samples_depend_on_key_and_events():
    belief = B.Belief(B.Beta(20, 3), B.Beta(3, 4), events=7)
    base = belief_drift(belief, BeliefParams(), DriftParams(samples=64), "s1.v1")
    assert base != belief_drift(belief, BeliefParams(), DriftParams(samples=64), "s2.v1")
    moved = B.Belief(belief.slow, belief.fast, events=8)
    assert base != belief_drift(moved, BeliefParams(), DriftParams(samples=64), "s1.v1")
    more = belief_drift(belief, BeliefParams(), DriftParams(samples=4096), "s1.v1")
    assert more.mean_gap == base.mean_gap  # the means do not depend on the samples
    expected_gap = max(20 / 23, 0.6) - 3 / 7
    assert base.mean_gap == pytest.approx(expected_gap)


def test_cumulative_only_drift_compares_the_slow_belief_with_the_floor():
    belief = B.Belief(B.Beta(2, 8), B.Beta(50, 1), events=3)  # fast belief healthy, slow one poor
    cumulative = belief_drift(belief, BeliefParams(fast=False), DriftParams(reliability_floor=0.6), "k")
    assert cumulative.mean_gap == pytest.approx(0.6 - 0.2)
    assert cumulative.consistency > 0.9 and cumulative.score > 0.3
    dual = belief_drift(belief, BeliefParams(fast=True), DriftParams(reliability_floor=0.6), "k")
    assert dual.score == 0.0  # the fast belief is better than the (floored) slow one
    floor_only = belief_drift(belief, BeliefParams(fast=False), DriftParams(reliability_floor=0.0), "k")
    assert floor_only.score == 0.0 and floor_only.mean_gap == 0.0
    at_floor = B.Belief(B.Beta(6, 4), B.Beta(6, 4), events=3)  # slow mean 0.6 = the floor: samples split
    split = belief_drift(at_floor, BeliefParams(fast=False), DriftParams(samples=512, reliability_floor=0.6), "k")
    assert 0.3 < split.consistency < 0.7  # one sample per draw, not one draw for all


def test_floor_bounds_the_reference_samples():
    weak = B.Belief(B.Beta(1, 30), B.Beta(1, 30), events=1)  # slow and fast alike, both near 0
    d = belief_drift(weak, BeliefParams(), DriftParams(reliability_floor=0.5), "k")
    assert d.mean_gap == pytest.approx(0.5 - 1 / 31)
    assert d.consistency == 1.0 and d.clipped == pytest.approx(d.mean_gap, abs=0.02)


def test_qualifies_at_each_threshold():
    p = DriftParams(gate_confidence=0.9, min_drift=0.05, min_uses=2)
    at = Drift(score=0.05, mean_gap=0.1, clipped=0.1, consistency=0.9)
    assert qualifies(at, 2, p)  # every threshold is inclusive
    assert not qualifies(Drift(0.049, 0.1, 0.1, 0.9), 2, p)
    assert not qualifies(Drift(0.05, 0.1, 0.1, 0.899), 2, p)
    assert not qualifies(at, 1, p)


# -- exposure ------------------------------------------------------------------------------------------------


def node(i: str, *parents: str) -> DecisionNode:
    return DecisionNode(id=i, agent="a", role="r", level="agent", parents=parents)  # type: ignore[arg-type]


def test_children_map_and_distances():
    g = [node("a"), node("b", "a", "a2"), node("c", "b", "c"), node("d", "a", "c")]
    assert children_map(g) == {"a": ["b", "d"], "b": ["c"], "c": ["d"], "d": []}  # no self edge
    assert distances(children_map(g), ["a"]) == {"a": 0, "b": 1, "d": 1, "c": 2}
    assert distances(children_map(g), ["c", "c", "zz"]) == {"c": 0, "d": 1}
    assert distances(children_map(g), []) == {}
    assert downstream_reach([], ["a"], 0.5) == 0.0
    assert downstream_reach(g, ["a"], 1.0) == 4.0 and downstream_reach(g, ["a"], 0.1) == pytest.approx(1.21)


@given(st.integers(1, 8), st.floats(0.05, 1.0))
def test_a_source_with_no_children_counts_one(n, discount):
    g = [node(f"n{i}") for i in range(n)]
    assert downstream_reach(g, ["n0"], discount) == 1.0
    assert downstream_reach(g, [f"n{i}" for i in range(n)], discount) == float(n)


# -- triage --------------------------------------------------------------------------------------------------


def cand(skill: str, drift: float, exposure: float, qualified: bool = True) -> ReviewCandidate:
    return ReviewCandidate(skill, drift=drift, exposure=exposure, qualified=qualified)


def test_severity_and_record():
    c = cand("s", 0.1234567, 3.1234567)
    assert c.severity == pytest.approx(0.1234567 * 3.1234567)
    assert c.to_dict() == {
        "skill": "s",
        "drift": 0.123457,
        "exposure": 3.123457,
        "severity": round(0.1234567 * 3.1234567, 6),
        "qualified": True,
    }
    with pytest.raises(ValueError) as err:
        rank([c], "loudest", "k")
    assert str(err.value) == "unknown triage order 'loudest'; valid: exposure, risk, random"


def test_ties_break_by_skill_id_in_every_deterministic_order():
    pool = [cand("c", 0.2, 1.0), cand("a", 0.2, 1.0), cand("b", 0.2, 1.0)]
    assert [c.skill_id for c in rank(pool, "exposure", "k")] == ["a", "b", "c"]
    assert [c.skill_id for c in rank(pool, "risk", "k")] == ["a", "b", "c"]


def test_random_order_is_a_seeded_shuffle_not_the_sorted_order():
    pool = [cand(f"s{i:02d}", 0.1 * (i % 3), 1.0 + i) for i in range(12)]
    orders = {tuple(c.skill_id for c in rank(pool, "random", f"seed:{r}")) for r in range(6)}
    assert len(orders) > 1  # the seed changes the order
    sorted_ids = tuple(sorted(c.skill_id for c in pool))
    assert any(o != sorted_ids for o in orders) and all(sorted(o) == list(sorted_ids) for o in orders)
    again = [c.skill_id for c in rank(list(reversed(pool)), "random", "seed:0")]
    assert again == [c.skill_id for c in rank(pool, "random", "seed:0")]  # input order does not matter


def test_select_cuts_at_the_budget_and_a_negative_budget_selects_nothing():
    pool = [cand("a", 0.3, 1.0), cand("b", 0.2, 9.0), cand("c", 0.9, 9.0, qualified=False)]
    assert [c.skill_id for c in select(pool, 1, "exposure", "k")] == ["b"]
    assert [c.skill_id for c in select(pool, 1, "risk", "k")] == ["a"]
    assert select(pool, 0, "exposure", "k") == [] and select(pool, -1, "risk", "k") == []
    assert [c.skill_id for c in select(pool, 5, "exposure", "k")] == ["b", "a"]
    many = [cand(f"s{i:02d}", 0.1, 1.0) for i in range(12)]
    assert select(many, 4, "random", "seed:3") == rank(many, "random", "seed:3")[:4]  # the same seeded shuffle
