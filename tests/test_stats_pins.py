"""Pins of the statistics behind every table (`aecg_bench/analysis/stats.py`), written against the
mutants that survived `make mutants PATHS=analysis_stats` (docs/quality.md): hand-computed outcomes and
cell rows, bootstrap quantiles on data whose replicate distribution is known exactly, the exact
sign-flip p-value against an independent enumeration, and the pairing keys."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.analysis.stats import (
    bootstrap_ci,
    mean_pass_hat_k,
    paired_difference,
    paired_stats,
    pass_hat_k,
    prepare_outcomes,
    summarize,
)

FAST = settings(max_examples=30, deadline=None)


def _rows(specs: list[dict]) -> pd.DataFrame:
    base = {
        "experiment": "e",
        "benchmark": "b",
        "framework": "f",
        "memory": "m0",
        "model": "x",
        "seed": 0,
        "sample_id": "0",
        "phase": "eval",
        "status": "ok",
        "success": True,
        "value": 1.0,
    }
    return pd.DataFrame([{**base, **s} for s in specs])


# --- prepare_outcomes ------------------------------------------------------------------------------


def _mixed() -> pd.DataFrame:
    return _rows(
        [
            {"sample_id": "a", "success": True, "value": 0.25},
            {"sample_id": "b", "success": None, "value": "n/a"},  # unknown success, non-numeric value
            {"sample_id": "c", "success": False, "value": None},
            {"sample_id": "d", "status": "infra_error", "success": True, "value": 0.75},
            {"sample_id": "t", "phase": "train", "success": True, "value": 0.5},
        ]
    )


def test_outcomes_of_value_count_infra_errors_and_missing_values_as_zero():
    out = prepare_outcomes(_mixed(), "value", "failure", "eval")
    assert list(out["sample_id"]) == ["a", "b", "c", "d"]
    assert list(out["_y"]) == [0.25, 0.0, 0.0, 0.0]


def test_outcomes_of_success_are_zero_one_with_unknown_as_failure():
    out = prepare_outcomes(_mixed(), "success", "failure", "eval")
    assert list(out["_y"]) == [1.0, 0.0, 0.0, 0.0]


def test_excluded_infra_errors_leave_the_rows_and_no_phase_keeps_every_row():
    out = prepare_outcomes(_mixed(), "value", "exclude", None)
    assert list(out["sample_id"]) == ["a", "b", "c", "t"]
    assert list(out["_y"]) == [0.25, 0.0, 0.0, 0.5]
    train = prepare_outcomes(_mixed(), "success", "failure", "train")
    assert list(train["sample_id"]) == ["t"] and list(train["_y"]) == [1.0]


def test_outcomes_do_not_change_the_callers_frame():
    df = _mixed()
    before = df.copy()
    prepare_outcomes(df, "value", "failure", None)
    pd.testing.assert_frame_equal(df, before)


# --- bootstrap_ci ----------------------------------------------------------------------------------
# One group [0, 1]: a replicate is the mean of two draws, 0 / 0.5 / 1 with chances 1/4, 1/2, 1/4.
# Two constant groups {0}, {1}: a replicate is the mean of two drawn groups, same distribution.
# With 20000 replicates the empirical quantiles at 0.2 / 0.3 / 0.7 / 0.8 sit well inside one value.


@pytest.mark.parametrize(
    ("level", "expected"),
    [(0.95, (0.0, 1.0)), (0.6, (0.0, 1.0)), (0.4, (0.5, 0.5))],
)
def test_bootstrap_quantiles_on_a_known_replicate_distribution(level, expected):
    assert bootstrap_ci([np.array([0.0, 1.0])], n_boot=20000, level=level) == expected
    assert bootstrap_ci([np.zeros(3), np.ones(3)], n_boot=20000, level=level) == expected


def test_bootstrap_defaults_are_2000_replicates_seed_0_and_95_percent():
    groups = [np.array([0.0, 1.0, 1.0, 0.3]), np.array([0.2, 0.9, 0.4])]
    default = bootstrap_ci(groups)
    assert default == bootstrap_ci(groups, n_boot=2000, seed=0, level=0.95)
    assert default != bootstrap_ci(groups, n_boot=2001, seed=0)
    assert default != bootstrap_ci(groups, seed=1)
    assert default != bootstrap_ci(groups, level=0.9)
    assert bootstrap_ci(groups, seed=5) == bootstrap_ci(groups, seed=5)  # seeded, reproducible


def test_bootstrap_ignores_empty_groups_and_has_no_interval_without_data():
    assert bootstrap_ci([np.array([]), np.ones(4)], n_boot=50) == (1.0, 1.0)
    for groups in ([], [np.array([])]):
        lo, hi = bootstrap_ci(groups)
        assert math.isnan(lo) and math.isnan(hi)


# --- paired_stats ----------------------------------------------------------------------------------


def _exact_p(d: list[int]) -> float:
    """Two-sided sign-flip p-value by plain enumeration in integers (no floating-point ties)."""
    observed = abs(sum(d))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    return hits / 2 ** len(d)


@FAST
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=9))
def test_exact_p_value_is_the_share_of_sign_flips_at_least_as_extreme(d):
    assert paired_stats(np.array(d, dtype=float), n_boot=50)["p_value"] == pytest.approx(_exact_p(d))


def test_twelve_pairs_are_enumerated_and_thirteen_drawn_with_the_plus_one_correction():
    assert paired_stats(np.ones(12))["p_value"] == 2 / 2**12
    # Monte Carlo: (hits + 1) / (n_boot + 1); no flip of 999 (seed 0) gives 13 equal signs
    assert paired_stats(np.ones(13), n_boot=999)["p_value"] == pytest.approx(1 / 1000, abs=1e-15)
    p = paired_stats(np.ones(13), n_boot=5000)["p_value"]
    assert p * 5001 == pytest.approx(round(p * 5001)) and p != pytest.approx(2 / 2**13)


def test_monte_carlo_p_value_counts_ties_and_never_exceeds_one():
    # 19 differences of +-1 and a zero: every flip's |sum| is odd, so at least the observed 1, and p = 1
    # exactly ((hits + 1) / (n_boot + 1) with hits = n_boot).
    d = np.array([1.0] * 10 + [-1.0] * 9 + [0.0])
    assert paired_stats(d, n_boot=300)["p_value"] == 1.0
    assert paired_stats(np.zeros(20), n_boot=300)["p_value"] == 1.0


def test_paired_ci_quantiles_on_a_known_replicate_distribution():
    wide = paired_stats(np.array([0.0, 1.0]), n_boot=20000, level=0.6)
    narrow = paired_stats(np.array([0.0, 1.0]), n_boot=20000, level=0.4)
    assert (wide["ci_low"], wide["ci_high"]) == (0.0, 1.0)
    assert (narrow["ci_low"], narrow["ci_high"]) == (0.5, 0.5)
    assert wide["mean_diff"] == 0.5 and wide["n"] == 2


def test_paired_defaults_are_5000_replicates_seed_0_and_95_percent():
    d = np.random.default_rng(7).normal(size=15)
    default = paired_stats(d)
    assert default == paired_stats(d, n_boot=5000, seed=0, level=0.95)
    assert default["ci_low"] != paired_stats(d, seed=1)["ci_low"]
    assert default["ci_low"] != paired_stats(d, n_boot=5001)["ci_low"]
    assert default["ci_low"] != paired_stats(d, level=0.9)["ci_low"]


def test_no_pairs_give_no_numbers():
    out = paired_stats(np.array([]))
    assert set(out) == {"n", "mean_diff", "ci_low", "ci_high", "p_value"}
    assert out["n"] == 0
    assert all(math.isnan(out[k]) for k in ("mean_diff", "ci_low", "ci_high", "p_value"))


@FAST
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=30), st.integers(0, 99))
def test_paired_ci_contains_the_mean_and_p_is_a_probability(d, seed):
    out = paired_stats(np.array(d), n_boot=300, seed=seed)
    assert out["ci_low"] - 1e-9 <= out["mean_diff"] <= out["ci_high"] + 1e-9
    assert 0.0 < out["p_value"] <= 1.0
    assert out["mean_diff"] == pytest.approx(float(np.mean(d)))


# --- summarize -------------------------------------------------------------------------------------


def _cells() -> pd.DataFrame:
    rows = []
    # memory m1: seed 0 values 1, 0.5 (one model error); seed 1 values 0, 1 (one limit exceeded)
    for seed, vals, statuses in ((0, [1.0, 0.5], ["ok", "model_error"]), (1, [0.0, 1.0], ["limit_exceeded", "ok"])):
        for i, (v, s) in enumerate(zip(vals, statuses, strict=True)):
            rows.append(
                {
                    "memory": "m1",
                    "seed": seed,
                    "sample_id": str(i),
                    "value": v,
                    "status": s,
                    "success": v == 1.0,
                    "cost": 0.5,
                    "input_tokens": 10,
                    "output_tokens": 3,
                    "n_eval_expected": 2,
                }
            )
    # memory m0: one seed, one sample, an infra error with expected 3
    rows.append(
        {
            "memory": "m0",
            "seed": 0,
            "sample_id": "0",
            "value": None,
            "status": "infra_error",
            "success": None,
            "cost": 0.25,
            "input_tokens": 4,
            "output_tokens": 1,
            "n_eval_expected": 3,
        }
    )
    rows.append(
        {
            "memory": "m1",
            "seed": 0,
            "sample_id": "t",
            "phase": "train",
            "value": 1.0,
            "status": "ok",
            "cost": 9.0,
            "input_tokens": 100,
            "output_tokens": 100,
            "n_eval_expected": 2,
        }
    )
    return _rows(rows)


def test_summary_rows_are_hand_computed():
    out = summarize(_cells(), n_boot=100)
    assert list(out["memory"]) == ["m0", "m1"]  # sorted cells
    m0, m1 = (out.iloc[i].to_dict() for i in range(2))
    assert m1["mean"] == pytest.approx(62.5)  # seed means 0.75 and 0.5
    assert m1["std"] == pytest.approx(np.std([75.0, 50.0], ddof=1))
    assert (m1["n_seeds"], m1["n_samples"], m1["n_expected"]) == (2, 4, 4)
    assert (m1["n_infra_error"], m1["n_model_error"], m1["n_limit_exceeded"]) == (0, 1, 1)
    assert m1["cost"] == pytest.approx(2.0) and m1["tokens"] == pytest.approx(52.0)
    assert m1["complete"] and m1["flag"] == ""
    lo, hi = bootstrap_ci([np.array([1.0, 0.5]), np.array([0.0, 1.0])], n_boot=100)
    assert (m1["ci_low"], m1["ci_high"]) == pytest.approx((100 * lo, 100 * hi))
    assert m0["mean"] == 0.0 and m0["std"] == 0.0  # infra error = failure; one seed has no spread
    assert (m0["n_seeds"], m0["n_samples"], m0["n_expected"], m0["n_infra_error"]) == (1, 1, 3, 1)
    assert (m0["n_model_error"], m0["n_limit_exceeded"]) == (0, 0)
    assert m0["cost"] == pytest.approx(0.25) and m0["tokens"] == pytest.approx(5.0)
    assert not m0["complete"] and m0["flag"] == "incomplete"


def test_summary_scale_phase_and_default_cells():
    df = _cells()
    scaled = summarize(df, n_boot=100, scale=10.0)
    assert scaled.iloc[1]["mean"] == pytest.approx(6.25) and scaled.iloc[1]["std"] == pytest.approx(
        np.std([7.5, 5.0], ddof=1)
    )
    train = summarize(df, phase="train", n_boot=50)
    assert list(train["memory"]) == ["m1"] and train.iloc[0]["mean"] == 100.0
    everything = summarize(df, phase=None, metric="success", n_boot=50)
    m1 = everything[everything["memory"] == "m1"].iloc[0]
    # seed 0 now holds three rows (two eval successes 1, 0 and the train success 1): mean (2/3 + 1/2) / 2
    assert m1["mean"] == pytest.approx(100 * (2 / 3 + 1 / 2) / 2) and m1["n_samples"] == 5
    assert m1["flag"] == "extra samples" and not m1["complete"]
    # default cells: every pairing column present (not seed, not sample id)
    cols = list(summarize(df, n_boot=20).columns)
    assert cols[:6] == ["experiment", "benchmark", "framework", "memory", "model", "mean"]


def test_summary_by_given_columns_and_cells_with_missing_keys():
    df = _cells()
    df.loc[df["memory"] == "m0", "model"] = None
    out = summarize(df, by=["model"], n_boot=20)
    assert len(out) == 2 and out["model"].isna().sum() == 1  # the cell with no model is kept


def test_summary_skips_cells_left_empty_and_keeps_the_later_ones():
    df = _cells()
    df.loc[df["memory"] == "m0", "memory"] = "a0"  # first in order, made only of an infra error
    out = summarize(df, infra="exclude", n_boot=20)
    assert list(out["memory"]) == ["m1"]


def test_summary_without_optional_columns_counts_rows():
    df = _cells().drop(columns=["n_eval_expected", "cost", "input_tokens"])
    out = summarize(df, n_boot=20)
    m1 = out[out["memory"] == "m1"].iloc[0]
    assert m1["n_expected"] == 4 and m1["cost"] == 0.0 and m1["tokens"] == 0.0
    # a run whose header had no n_eval (NaN after loading) expects the rows it has, seed by seed
    df = _cells()
    df.loc[(df["memory"] == "m1") & (df["seed"] == 1), "n_eval_expected"] = np.nan
    df.loc[df["memory"] == "m0", "n_eval_expected"] = np.nan
    m0, m1 = (summarize(df, n_boot=20).iloc[i] for i in range(2))
    assert m0["n_expected"] == 1 and m0["flag"] == "incomplete"  # infra error, though all rows are present
    assert m1["n_expected"] == 4 and m1["flag"] == "" and m1["complete"]
    df.loc[(df["memory"] == "m1") & (df["seed"] == 0), "n_eval_expected"] = 5
    assert summarize(df, n_boot=20).iloc[1]["n_expected"] == 7


def test_summary_of_no_rows_is_empty():
    df = _cells()
    assert summarize(df[df["phase"] == "none"], n_boot=20).empty
    assert summarize(df, phase="test", n_boot=20).empty


def test_extra_samples_are_flagged():
    df = _cells()
    df["n_eval_expected"] = 1
    out = summarize(df, n_boot=20)
    m1 = out[out["memory"] == "m1"].iloc[0]
    assert m1["flag"] == "extra samples" and not m1["complete"]


def test_summary_n_boot_reaches_the_bootstrap():
    df = _rows([{"seed": s, "sample_id": str(i), "value": v} for s in range(3) for i, v in enumerate([0.1, 0.9, 0.4])])
    row = summarize(df, n_boot=37).iloc[0]
    lo, hi = bootstrap_ci([np.array([0.1, 0.9, 0.4])] * 3, n_boot=37)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((100 * lo, 100 * hi))
    assert (lo, hi) != bootstrap_ci([np.array([0.1, 0.9, 0.4])] * 3)


# --- paired_difference -----------------------------------------------------------------------------


def _pairs() -> pd.DataFrame:
    rows = []
    for bench, gap in (("b1", 0.5), ("b2", -0.25)):
        for seed in (0, 1):
            for i in range(3):
                base = 0.1 * i + 0.05 * seed
                rows.append(
                    {
                        "benchmark": bench,
                        "memory": "A",
                        "seed": seed,
                        "sample_id": str(i),
                        "value": base + 0.4 + gap,
                        "success": gap > 0,
                    }
                )
                rows.append(
                    {
                        "benchmark": bench,
                        "memory": "B",
                        "seed": seed,
                        "sample_id": str(i),
                        "value": base + 0.4,
                        "success": False,
                    }
                )
    rows.append({"benchmark": "b1", "memory": "A", "seed": 2, "sample_id": "0", "value": 1.0})  # no partner
    rows.append({"benchmark": "b3", "memory": "B", "seed": 0, "sample_id": "0", "value": 0.0})  # no partner
    return _rows(rows)


def test_pairs_match_on_every_other_id_and_skip_the_unmatched():
    out = paired_difference(_pairs(), "memory", "A", "B", n_boot=200)
    assert out["n"] == 12
    assert out["mean_diff"] == pytest.approx((6 * 0.5 + 6 * -0.25) / 12)
    flipped = paired_difference(_pairs(), "memory", "B", "A", n_boot=200)
    assert flipped["mean_diff"] == pytest.approx(-out["mean_diff"]) and flipped["p_value"] == out["p_value"]


def test_paired_difference_passes_metric_phase_infra_and_bootstrap_settings():
    df = _pairs()
    assert paired_difference(df, "memory", "A", "B", metric="success")["mean_diff"] == pytest.approx(0.5)
    df.loc[(df["memory"] == "A") & (df["benchmark"] == "b2"), "status"] = "infra_error"
    failure = paired_difference(df, "memory", "A", "B", n_boot=50)
    excluded = paired_difference(df, "memory", "A", "B", infra="exclude", n_boot=50)
    assert failure["n"] == 12 and failure["mean_diff"] == pytest.approx((3.0 - 3.15) / 12)
    assert excluded["n"] == 6 and excluded["mean_diff"] == pytest.approx(0.5)
    df2 = _pairs()
    df2.loc[df2["benchmark"] == "b2", "phase"] = "train"
    assert paired_difference(df2, "memory", "A", "B", phase="train")["mean_diff"] == pytest.approx(-0.25)
    assert paired_difference(df2, "memory", "A", "B", phase=None)["n"] == 12
    df = _pairs()
    a_rows = df["memory"] == "A"
    df.loc[a_rows, "value"] += np.random.default_rng(0).normal(0, 0.1, int(a_rows.sum()))  # distinct differences
    a = df[df["memory"] == "A"].iloc[:12]["value"].to_numpy()
    b = df[df["memory"] == "B"].iloc[:12]["value"].to_numpy()
    default = paired_difference(df, "memory", "A", "B")
    assert default == paired_difference(df, "memory", "A", "B", n_boot=5000, seed=0, infra="failure")
    assert default["ci_low"] != paired_difference(df, "memory", "A", "B", seed=1)["ci_low"]
    assert default["ci_low"] != paired_difference(df, "memory", "A", "B", n_boot=5001)["ci_low"]
    got = paired_difference(df, "memory", "A", "B", n_boot=77, seed=3)
    assert got == paired_stats(a - b, n_boot=77, seed=3)
    assert got != paired_difference(_pairs(), "memory", "A", "B")


# --- pass^k ------------------------------------------------------------------------------------------


def test_pass_hat_k_bounds_are_inclusive_and_errors_name_the_values():
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(3, 0, 1) == 0.0 and pass_hat_k(4, 3, 2) == 0.5
    with pytest.raises(ValueError, match=r"pass\^k needs 1 <= k <= trials; got k=0 with 3 trials"):
        pass_hat_k(3, 1, 0)
    with pytest.raises(ValueError, match=r"got k=4 with 3 trials"):
        pass_hat_k(3, 1, 4)
    with pytest.raises(ValueError, match=r"^successes 4 outside 0\.\.3$"):
        pass_hat_k(3, 4, 1)
    with pytest.raises(ValueError, match=r"^successes -1 outside 0\.\.3$"):
        pass_hat_k(3, -1, 1)


def test_mean_pass_hat_k_counts_a_missing_success_as_a_failure_and_reads_named_columns():
    df = pd.DataFrame({"task": ["a", "a", "b", "b"], "ok": [True, None, True, True]})
    assert mean_pass_hat_k(df, 2, task_col="task", success_col="ok") == pytest.approx(0.5)
    assert mean_pass_hat_k(df, 1, task_col="task", success_col="ok") == pytest.approx(0.75)
    floats = pd.DataFrame({"sample_id": ["a", "a", "b", "b"], "success": [1.0, float("nan"), 0.0, 1.0]})
    assert mean_pass_hat_k(floats, 1) == pytest.approx(0.5)  # NaN (no result) is a failure, not a truthy float


def test_a_flip_within_1e_12_of_the_observed_mean_counts_as_a_tie():
    # Differences found by search so that a sign flip's |mean| lands exactly 1e-12 below the observed
    # |mean| in floating point: the tolerance makes it "at least as extreme", so every flip counts (p = 1).
    exact = np.array([2.5478467492858172, 9.999999999999394e-13])
    assert paired_stats(exact)["p_value"] == 1.0
    drawn = np.zeros(13)
    drawn[:2] = [2.047286498801027, 6.499999999999758e-12]
    assert paired_stats(drawn, n_boot=200)["p_value"] == 1.0


def test_summary_defaults_and_explicit_cells():
    df = _cells()
    assert summarize(df).equals(summarize(df, n_boot=2000, infra="failure", phase="eval", scale=100.0))
    values = np.random.default_rng(3).uniform(0, 1, 15)
    cont = _rows([{"seed": i // 5, "sample_id": str(i % 5), "value": v} for i, v in enumerate(values)])
    assert summarize(cont).iloc[0]["ci_low"] == summarize(cont, n_boot=2000).iloc[0]["ci_low"]
    assert summarize(cont).iloc[0]["ci_low"] != summarize(cont, n_boot=2001).iloc[0]["ci_low"]
    by_memory = summarize(df, by=["memory"], n_boot=20)
    assert list(by_memory.columns[:2]) == ["memory", "mean"] and "model" not in by_memory.columns
