"""Properties of the statistics behind every table: the hierarchical bootstrap CI, the paired
difference with its permutation p-value, the model-assignment label, and the recomputed claims."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.analysis.load import assignment_label
from aecg_bench.analysis.paper import aecg_claims, reference_method
from aecg_bench.analysis.stats import bootstrap_ci, paired_stats

FAST = settings(max_examples=40, deadline=None)
binary = st.lists(st.integers(0, 1), min_size=1, max_size=30)
diffs = st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=40)


@FAST
@given(st.lists(binary, min_size=1, max_size=4), st.integers(0, 2**16))
def test_bootstrap_ci_lies_within_the_range_of_group_means_and_is_ordered(groups, seed):
    arrays = [np.array(g, dtype=float) for g in groups]
    lo, hi = bootstrap_ci(arrays, n_boot=300, seed=seed)
    assert lo <= hi
    assert min(a.min() for a in arrays) - 1e-9 <= lo and hi <= max(a.max() for a in arrays) + 1e-9


@FAST
@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=20), st.integers(1, 4))
def test_bootstrap_ci_of_constant_groups_is_a_point(values, k):
    value = values[0]
    lo, hi = bootstrap_ci([np.full(len(values), value)] * k, n_boot=200)
    assert lo == hi == value


@FAST
@given(diffs, st.integers(0, 2**16))
def test_paired_stats_is_antisymmetric(d, seed):
    a = paired_stats(np.array(d), n_boot=400, seed=seed)
    b = paired_stats(-np.array(d), n_boot=400, seed=seed)
    assert a["mean_diff"] == pytest.approx(-b["mean_diff"], abs=1e-12)
    assert a["p_value"] == pytest.approx(b["p_value"])
    assert a["ci_low"] == pytest.approx(-b["ci_high"], abs=1e-9)
    assert 0 < a["p_value"] <= 1 and a["n"] == len(d)
    assert a["ci_low"] - 1e-9 <= a["mean_diff"] <= a["ci_high"] + 1e-9


@FAST
@given(st.integers(1, 12))
def test_exact_sign_flip_p_value_for_all_positive_differences(n):
    # only the identity and the all-flipped assignment reach |mean| = 1: p = 2 / 2^n (1 when n = 1)
    assert paired_stats(np.ones(n))["p_value"] == pytest.approx(min(1.0, 2 / 2**n))


@FAST
@given(st.integers(0, 40))
def test_no_difference_has_p_one(n):
    res = paired_stats(np.zeros(n + 1))
    assert res["mean_diff"] == 0 and res["p_value"] == 1.0


def test_large_samples_use_monte_carlo_and_still_detect_a_gap():
    rng = np.random.default_rng(0)
    gap = paired_stats(rng.choice([0.0, 1.0], 200, p=[0.4, 0.6]), n_boot=2000)
    assert gap["p_value"] < 0.001 and gap["ci_low"] > 0


model_ids = st.sampled_from(["openai/gpt-4.1-mini", "gpt-4.1-mini", "openai/gpt-4o-mini", "aecg-local/smollm2"])


@FAST
@given(model_ids, model_ids, st.sampled_from(["a", "agent_model", "x1"]), st.sampled_from(["m", "memory", "x2"]))
def test_assignment_label_depends_on_models_not_on_config_labels(agent, memory, la, lm):
    label = assignment_label({la: {"model": agent}, lm: {"model": memory}}, {"agent": la, "default": lm})
    again = assignment_label(
        {"A": {"model": agent.split("/")[-1]}, "M": {"model": memory}}, {"agent": "A", "default": "M"}
    )
    assert label == again
    assert agent.split("/")[-1] in label and memory.split("/")[-1] in label


scores = st.floats(0, 100, allow_nan=False).map(lambda x: round(x, 2))


counts = st.integers(0, 6)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(counts, counts, counts), min_size=1, max_size=5), st.randoms())
def test_claims_do_not_depend_on_row_order_and_ties_never_count_as_wins(cells, rnd):
    """Each setting: AECG, ConMem and No-Memory succeed on the first a, c, n of 6 samples (one seed)."""
    rows = []
    for i, ks in enumerate(cells):
        fw, bench = ("autogen", "macnet")[i % 2], f"b{i}"
        for mem, k in zip(("aecg", "conmem", "no_memory"), ks, strict=True):
            rows += [
                {"framework": fw, "benchmark": bench, "memory": mem, "seed": 0, "sample_id": f"s{j}"}
                | {"phase": "eval", "status": "ok", "success": j < k}
                for j in range(6)
            ]
    samples = pd.DataFrame(rows)
    summary = samples.groupby(["framework", "benchmark", "memory"])["success"].mean().mul(100).rename("mean")
    summary = summary.reset_index()
    shuffled = summary.sample(frac=1, random_state=rnd.randint(0, 1000))
    a = aecg_claims(summary, pd.DataFrame(), samples, n_boot=200).set_index(["framework", "quantity"])
    b = aecg_claims(shuffled, pd.DataFrame(), samples.sample(frac=1, random_state=1), n_boot=200)
    b = b.set_index(["framework", "quantity"])
    pd.testing.assert_frame_equal(a.sort_index(), b.sort_index())
    best = a.loc[("all", "aecg_best_settings")]
    strictly = sum(x > max(c, n) for x, c, n in cells)
    # decided wins need a strict lead (ties and all-zero settings are undecided), and a range holds them
    assert 0 <= best["ours"] <= strictly <= len(cells) == a.loc[("all", "settings"), "ours"]
    assert best["ci_low"] == best["ours"] <= best["ci_high"] <= len(cells)
    margin = a.loc[("all", "aecg_max_margin_over_best_baseline"), "ours"]
    assert margin == pytest.approx(max(100 * (x - c) / 6 for x, c, _ in cells))
    assert set(a["verdict"]) <= {"", "holds", "undecided", "fails", "not run"}


def test_strongest_baseline_excludes_the_method_its_ablations_and_no_memory():
    cell = pd.DataFrame(
        {"memory": ["aecg", "aecg_flat_scope", "no_memory", "conmem", "memorybank"], "mean": [90, 95, 99, 40, 60]}
    )
    assert reference_method(cell, "strongest_baseline") == "memorybank"
    assert reference_method(cell[cell["memory"].isin(["aecg", "no_memory"])], "strongest_baseline") == "no_memory"
    assert reference_method(cell, "aecg") == "aecg" and reference_method(cell, "g_memory") is None


@FAST
@given(st.lists(st.booleans(), min_size=1, max_size=30), st.integers(1, 12), st.randoms())
def test_running_success_is_the_rolling_mean_of_each_stream(outcomes, window, rnd):
    from aecg_bench.analysis.plots import running_success

    rows = [
        {"framework": "f", "benchmark": "b", "memory": m, "seed": s, "phase": "eval", "position": i, "success": ok}
        for m in ("a", "b")
        for s in (0, 1)
        for i, ok in enumerate(outcomes if (m, s) == ("a", 0) else outcomes[::-1])
    ]
    rnd.shuffle(rows)  # stream order comes from `position`, not from row order
    out = running_success(pd.DataFrame(rows), window)
    got = out[(out["memory"] == "a") & (out["seed"] == 0)].sort_values("_i")["_cum"].to_numpy()
    expected = pd.Series(outcomes, dtype=float).rolling(window, min_periods=1).mean().to_numpy() * 100
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert out.groupby(["memory", "seed"])["_i"].max().eq(len(outcomes)).all()
