"""Aggregation with explicit denominators and uncertainty.

Per cell (e.g. framework x benchmark x memory): the mean over seeds of each
seed's mean, its standard deviation over seeds, and a 95% CI from a
hierarchical bootstrap (resample seeds, then samples within each seed).
Infra errors are never silently dropped: by default they count as failures
(value 0) and every cell reports how many it had, so a reader sees both the
number and how complete it is. Paired comparisons between two methods use the
samples both ran (same ids and seeds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from aecg_bench.types import Status

InfraPolicy = Literal["failure", "exclude"]
NAN = float("nan")
# Columns that must agree for two samples to be a pair (besides seed and sample id).
PAIR_KEYS = ("experiment", "benchmark", "framework", "memory", "model", "assignment", "protocol", "preset")


def prepare_outcomes(df: pd.DataFrame, metric: str, infra: InfraPolicy, phase: str | None) -> pd.DataFrame:
    """The rows of `phase` with their outcome in column `_y` (success as 0/1, or `metric`), infra
    errors as failures or dropped."""
    data = df if phase is None else df[df["phase"] == phase]
    data = data.copy()
    if metric == "success":
        data["_y"] = data["success"].fillna(False).astype(float)
    else:
        data["_y"] = pd.to_numeric(data[metric], errors="coerce")
    infra_rows = data["status"] == Status.INFRA_ERROR
    if infra == "exclude":
        data = data[~infra_rows]
    else:
        data.loc[infra_rows, "_y"] = 0.0
    data["_y"] = data["_y"].fillna(0.0)
    return data


def bootstrap_ci(
    groups: list[np.ndarray], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """CI of the mean over groups (seeds) of within-group means, resampling groups then items.

    Vectorised: for every replicate and every slot a group is drawn, then that group's items are
    resampled independently (a group drawn twice gets two resamples)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    k = len(groups)
    # resampled[g, b, j]: mean of a fresh resample of group g for replicate b, slot j
    resampled = np.stack([g[rng.integers(0, len(g), (n_boot, k, len(g)))].mean(axis=-1) for g in groups])
    picked = rng.integers(0, k, (n_boot, k))
    stats = resampled[picked, np.arange(n_boot)[:, None], np.arange(k)[None, :]].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(stats, alpha)), float(np.quantile(stats, 1 - alpha))


def paired_stats(diffs: np.ndarray, *, n_boot: int = 5000, seed: int = 0, level: float = 0.95) -> dict[str, float]:
    """Mean of paired differences, its bootstrap CI, and a two-sided sign-flip permutation p-value
    (exact enumeration up to 12 pairs, Monte Carlo with the +1 correction beyond)."""
    diffs = np.asarray(diffs, dtype=float)
    n = int(diffs.size)
    if n == 0:
        return {"n": 0, "mean_diff": NAN, "ci_low": NAN, "ci_high": NAN, "p_value": NAN}
    rng = np.random.default_rng(seed)
    boots = diffs[rng.integers(0, n, (n_boot, n))].mean(axis=1)
    observed = abs(diffs.mean()) - 1e-12
    if n <= 12:
        signs = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1)
        p = float(np.mean(np.abs((signs * diffs).mean(axis=1)) >= observed))
    else:
        flips = rng.choice([-1.0, 1.0], (n_boot, n))
        p = float((np.sum(np.abs((flips * diffs).mean(axis=1)) >= observed) + 1) / (n_boot + 1))
    alpha = (1 - level) / 2
    return {
        "n": n,
        "mean_diff": float(diffs.mean()),
        "ci_low": float(np.quantile(boots, alpha)),
        "ci_high": float(np.quantile(boots, 1 - alpha)),
        "p_value": min(1.0, p),
    }


def summarize(
    df: pd.DataFrame,
    by: Sequence[str] | None = None,
    *,
    metric: str = "value",
    phase: str | None = "eval",
    infra: InfraPolicy = "failure",
    scale: float = 100.0,
    n_boot: int = 2000,
) -> pd.DataFrame:
    """One row per cell: mean, std over seeds, 95% CI, counts and completeness (x `scale`).
    By default a cell is every id that makes a result different (PAIR_KEYS present in `df`)."""
    by = list(by) if by is not None else [c for c in PAIR_KEYS if c in df.columns]
    data = prepare_outcomes(df, metric, infra, phase)
    full = df if phase is None else df[df["phase"] == phase]
    rows = []
    for key, raw in full.groupby(list(by), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        cell = data.loc[data.index.intersection(raw.index)]  # same rows, outcomes prepared
        if cell.empty:
            continue
        per_seed = cell.groupby("seed")["_y"]
        seed_means = per_seed.mean()
        groups = [g.to_numpy(dtype=float) for _, g in per_seed]
        lo, hi = bootstrap_ci(groups, n_boot=n_boot)
        expected = len(raw)
        if "n_eval_expected" in raw:  # a run whose header has no n_eval expects the rows it has
            seeds = raw.groupby("seed")
            expected = int(seeds["n_eval_expected"].first().fillna(seeds.size()).sum())
        statuses = raw["status"].value_counts()
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "mean": seed_means.mean() * scale,
                "std": (seed_means.std(ddof=1) if len(seed_means) > 1 else 0.0) * scale,
                "ci_low": lo * scale,
                "ci_high": hi * scale,
                "n_seeds": int(seed_means.size),
                "n_samples": len(cell),
                "n_expected": expected,
                "n_infra_error": int(statuses.get(Status.INFRA_ERROR, 0)),
                "n_model_error": int(statuses.get(Status.MODEL_ERROR, 0)),
                "n_limit_exceeded": int(statuses.get(Status.LIMIT_EXCEEDED, 0)),
                "cost": float(raw["cost"].sum()) if "cost" in raw else 0.0,
                "tokens": float((raw["input_tokens"] + raw["output_tokens"]).sum()) if "input_tokens" in raw else 0.0,
            }
        )
    out = pd.DataFrame(rows)
    if not out.empty:
        out["complete"] = (out["n_infra_error"] == 0) & (out["n_samples"] == out["n_expected"])
        out["flag"] = [
            "extra samples" if n > e else ("incomplete" if not c else "")
            for n, e, c in zip(out["n_samples"], out["n_expected"], out["complete"], strict=True)
        ]
    return out


def paired_difference(
    df: pd.DataFrame,
    column: str,
    a: str,
    b: str,
    *,
    metric: str = "value",
    phase: str | None = "eval",
    infra: InfraPolicy = "failure",
    n_boot: int = 5000,
    seed: int = 0,
) -> dict[str, float]:
    """Mean of (a - b) over samples both ran (matched on every other id, seed and sample),
    a bootstrap 95% CI, and a two-sided sign-flip permutation p-value."""
    data = prepare_outcomes(df, metric, infra, phase)
    keys = [c for c in PAIR_KEYS if c != column and c in data.columns] + ["seed", "sample_id"]
    left = data[data[column] == a].set_index(keys)["_y"]
    right = data[data[column] == b].set_index(keys)["_y"]
    both = left.to_frame("a").join(right.to_frame("b"), how="inner")
    return paired_stats((both["a"] - both["b"]).to_numpy(dtype=float), n_boot=n_boot, seed=seed)


def pass_hat_k(num_trials: int, successes: int, k: int) -> float:
    """pass^k of one task: the chance that k trials drawn without replacement from its
    `num_trials` all succeed, C(successes, k) / C(num_trials, k) (tau2-bench
    metrics/agent_metrics.py, after Yao et al. 2024, arXiv 2406.12045)."""
    if not 1 <= k <= num_trials:
        raise ValueError(f"pass^k needs 1 <= k <= trials; got k={k} with {num_trials} trials")
    if not 0 <= successes <= num_trials:
        raise ValueError(f"successes {successes} outside 0..{num_trials}")
    return math.comb(successes, k) / math.comb(num_trials, k)


def mean_pass_hat_k(df: pd.DataFrame, k: int, *, task_col: str = "sample_id", success_col: str = "success") -> float:
    """Mean pass^k over tasks, each task's trials being its rows (one per seed, the trial index).

    Every task needs at least k trials; a missing success (infra error) counts as a failure.
    """
    by_task = df.groupby(task_col)[success_col].agg(lambda s: (len(s), int(s.fillna(False).astype(bool).sum())))
    return float(np.mean([pass_hat_k(n, c, k) for n, c in by_task]))
