"""Results tree -> tidy frame -> aggregates with honest denominators -> tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aecg_bench.analysis import load, paired_difference, summarize
from aecg_bench.analysis.stats import bootstrap_ci
from aecg_bench.analysis.tables import compare_with_reference, pivot, write_table
from aecg_bench.run import run_from_config


def _frame(
    values: dict[tuple[str, int], list[float]], statuses: dict[tuple[str, int], list[str]] | None = None
) -> pd.DataFrame:
    rows = []
    for (memory, seed), vals in values.items():
        st = (statuses or {}).get((memory, seed), ["ok"] * len(vals))
        for i, (v, s) in enumerate(zip(vals, st, strict=True)):
            rows.append(
                {
                    "experiment": "e",
                    "benchmark": "b",
                    "framework": "f",
                    "memory": memory,
                    "model": "m",
                    "seed": seed,
                    "sample_id": str(i),
                    "phase": "eval",
                    "status": s,
                    "success": v > 0.5,
                    "value": None if s == "infra_error" else v,
                    "n_eval_expected": len(vals),
                    "cost": 0.01,
                    "input_tokens": 10,
                    "output_tokens": 2,
                }
            )
    return pd.DataFrame(rows)


def test_mean_is_over_seed_means_and_std_over_seeds():
    df = _frame({("a", 0): [1, 1, 0, 0], ("a", 1): [1, 1, 1, 1]})
    row = summarize(df, n_boot=200).iloc[0]
    assert row["mean"] == pytest.approx(75.0)
    assert row["std"] == pytest.approx(np.std([50, 100], ddof=1))
    assert row["n_seeds"] == 2 and row["n_samples"] == 8 and row["complete"]
    assert row["ci_low"] <= row["mean"] <= row["ci_high"]


def test_infra_errors_count_as_failures_and_mark_the_cell_incomplete():
    df = _frame({("a", 0): [1, 1, 1, 1]}, {("a", 0): ["ok", "ok", "ok", "infra_error"]})
    failure = summarize(df, n_boot=100).iloc[0]
    excluded = summarize(df, infra="exclude", n_boot=100).iloc[0]
    assert failure["mean"] == pytest.approx(75.0) and excluded["mean"] == pytest.approx(100.0)
    assert failure["n_infra_error"] == 1 and not failure["complete"]


def test_missing_samples_mark_the_cell_incomplete():
    df = _frame({("a", 0): [1, 1]})
    df["n_eval_expected"] = 5
    assert not summarize(df, n_boot=50).iloc[0]["complete"]


def test_bootstrap_ci_narrows_with_more_data():
    rng = np.random.default_rng(1)
    small = [rng.integers(0, 2, 10).astype(float) for _ in range(3)]
    large = [rng.integers(0, 2, 400).astype(float) for _ in range(3)]
    w_small = np.subtract(*bootstrap_ci(small)[::-1])
    w_large = np.subtract(*bootstrap_ci(large)[::-1])
    assert w_large < w_small


def test_paired_difference_matches_samples_and_detects_a_real_gap():
    better = {("a", s): [1.0] * 30 for s in range(3)}
    worse = {("b", s): [1.0] * 10 + [0.0] * 20 for s in range(3)}
    res = paired_difference(_frame({**better, **worse}), "memory", "a", "b")
    assert res["n"] == 90 and res["mean_diff"] == pytest.approx(2 / 3)
    assert res["p_value"] < 0.01 and res["ci_low"] > 0
    same = paired_difference(_frame({**better, **{("b", s): [1.0] * 30 for s in range(3)}}), "memory", "a", "b")
    assert same["mean_diff"] == 0 and same["p_value"] == 1.0


def test_load_reads_real_runs_into_one_row_per_sample(make_config, tmp_path):
    for memory in ("no_memory", "recorder"):
        for seed in (0, 1):
            run_from_config(
                make_config(
                    "benchmark.params.size=4",
                    f"memory={memory}",
                    f"seed={seed}",
                    "+model.models.mock.options.error_rate=0.3",
                )
            )
    root = tmp_path / "results"
    df = load(root)
    assert len(df) == 16 and set(df["memory"]) == {"no_memory", "recorder"} and set(df["seed"]) == {0, 1}
    assert df.groupby(["memory", "seed"]).size().eq(4).all()
    assert {"metric_steps", "tokens_actor", "cost_actor"} <= set(df.columns)  # usage by decision role
    summary = summarize(df, n_boot=100)
    assert len(summary) == 2 and summary["complete"].all()
    manual = df[df["memory"] == "recorder"].groupby("seed")["value"].mean().mean() * 100
    assert summary.set_index("memory").loc["recorder", "mean"] == pytest.approx(manual)

    table = pivot(summary, rows="memory", cols=["benchmark", "framework"])
    paths = write_table(table, tmp_path / "tables", "t", caption="Toy")
    assert "±" in paths["md"].read_text() and r"\toprule" in paths["tex"].read_text()
    ref = pd.DataFrame(
        {"benchmark": ["toy"], "framework": ["single"], "memory": ["recorder"], "model": ["mock"], "value": [50.0]}
    )
    cmp = compare_with_reference(summary, ref, ["benchmark", "framework", "memory", "model"])
    row = cmp.set_index("memory").loc["recorder"]
    assert row["diff"] == pytest.approx(row["mean"] - 50.0)
    assert np.isnan(cmp.set_index("memory").loc["no_memory", "paper"])  # no paper value: kept, marked missing


def test_load_of_an_empty_tree_is_an_empty_frame(tmp_path):
    df = load(tmp_path)
    assert df.empty and "memory" in df.columns


def test_cost_table_splits_agent_and_memory_side():
    from aecg_bench.analysis.paper import cost_table

    df = _frame({("aecg", 0): [1.0, 0.0]})
    df = df.assign(
        framework="f",
        benchmark="pddl",
        calls=4,
        in_tokens_agent=100,
        out_tokens_agent=10,
        tokens_agent=110,
        in_tokens_executor=50,
        out_tokens_executor=5,
        tokens_executor=55,
        in_tokens_memory=200,
        out_tokens_memory=20,
        tokens_memory=220,
        tokens_user_simulator=7,
        input_tokens=357,
        output_tokens=35,
    )
    cost = cost_table(df).iloc[0]
    assert cost["agent_tokens"] == 2 * 165 and cost["memory_side_tokens"] == 2 * 220


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_hat_k_is_the_success_rate_at_k1_and_never_grows_with_k(args):
    from aecg_bench.analysis.stats import pass_hat_k

    n, c, k = args
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n)
    assert 0.0 <= pass_hat_k(n, c, k) <= 1.0
    if k > 1:
        assert pass_hat_k(n, c, k) <= pass_hat_k(n, c, k - 1) + 1e-12
    assert pass_hat_k(n, n, k) == 1.0
    assert (pass_hat_k(n, c, k) == 0.0) == (c < k)


def test_mean_pass_hat_k_averages_over_tasks_from_per_seed_rows():
    from aecg_bench.analysis.stats import mean_pass_hat_k

    df = pd.DataFrame(
        {"sample_id": ["a", "a", "a", "b", "b", "b"], "seed": [0, 1, 2] * 2, "success": [1, 1, 0, 1, 1, 1]}
    )
    assert mean_pass_hat_k(df, 1) == pytest.approx((2 / 3 + 1) / 2)
    assert mean_pass_hat_k(df, 2) == pytest.approx((1 / 3 + 1) / 2)
    with pytest.raises(ValueError, match="k=4"):
        mean_pass_hat_k(df, 4)
