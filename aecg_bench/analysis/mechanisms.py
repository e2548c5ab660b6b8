"""AECG Table 3 and Figures 3-4 from the mechanism tests' `mechanisms.csv` files, beside the paper's.

Ours: mean over seeds with a bootstrap 95% CI over seeds (`stats.bootstrap_ci`
with one value per seed); the paper's values from
results/reference/aecg_mechanisms.csv, with the difference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from aecg_bench.analysis.paper import REFERENCE_DIR
from aecg_bench.analysis.plots import _pyplot, _save, _wrap
from aecg_bench.analysis.stats import bootstrap_ci, paired_stats
from aecg_bench.analysis.tables import write_table
from aecg_bench.results_format import find_runs

FIGURE3 = ("uses_to_review", "polluted_failed_uses", "post_corruption_success_pct")
# Each quantity's y axis (aecg_bench/mechanisms/metrics.py defines them).
UNITS = {
    "uses_to_review": "uses of a corrupted skill before its first review",
    "polluted_failed_uses": "uses in failed tasks (count)",
    "post_corruption_success_pct": "success after corruption (%)",
    "exposure_covered_first_two_reviews_pct": "predicted exposure covered (%)",
    "failed_task_exposure": "summed reach in failed tasks",
    "cross_scope_use_pct": "cross-scope uses (%)",
    "success": "success (%)",
    "exposure": "mean downstream reach per use",
}
FIGURE4 = ("exposure_covered_first_two_reviews_pct", "failed_task_exposure")
# The full-AECG variant of each test, which every other variant is paired against (same seed, same
# corrupted snapshot): conf/experiment/aecg_rq*.yaml list it first.
FULL_VARIANT = {"rq2_scope": "hard_scope", "rq3_drift": "dual_timescale", "rq4_triage": "exposure_aware"}
MEASURES = "mechanisms.csv"
MEASURE_COLUMNS = ["test", "quantity", "variant", "seed", "value"]


def read_measures(folder: Path) -> pd.DataFrame:
    """One test's `mechanisms.csv` with its folder's name; empty when the test never ran, an error
    naming the folder when its runs are there but the measures are not (the test stopped early)."""
    path = Path(folder) / MEASURES
    if not path.exists():
        if find_runs(Path(folder)):
            raise ValueError(f"{folder} holds runs but no {MEASURES}: the test did not finish (rerun it to resume)")
        return pd.DataFrame(columns=[*MEASURE_COLUMNS, "folder"])
    return pd.read_csv(path).assign(folder=Path(folder).name)


def load_measures(dirs: list[Path]) -> pd.DataFrame:
    frames = [read_measures(d) for d in dirs]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=[*MEASURE_COLUMNS, "folder"])
    return pd.concat(frames, ignore_index=True)


def _paired(g: pd.DataFrame, full: pd.DataFrame | None, n_boot: int) -> dict[str, float]:
    """This variant minus the full-AECG variant, paired by seed."""
    if full is None or g.equals(full):
        return {"diff_vs_full": np.nan, "diff_ci_low": np.nan, "diff_ci_high": np.nan, "p_value": np.nan}
    both = (
        g.set_index("seed")["value"]
        .astype(float)
        .to_frame("a")
        .join(full.set_index("seed")["value"].astype(float).rename("b"), how="inner")
        .dropna()
    )
    res = paired_stats((both["a"] - both["b"]).to_numpy(), n_boot=n_boot)
    return {
        "diff_vs_full": res["mean_diff"],
        "diff_ci_low": res["ci_low"],
        "diff_ci_high": res["ci_high"],
        "p_value": res["p_value"],
    }


def summarise(measures: pd.DataFrame, reference_dir: Path = REFERENCE_DIR, *, n_boot: int = 2000) -> pd.DataFrame:
    """One row per (test, quantity, variant): ours (mean, std and bootstrap CI over seeds, the paired
    difference against the full-AECG variant with its CI and p) and the paper's value."""
    rows = []
    for (test, quantity, variant), g in measures.groupby(["test", "quantity", "variant"], sort=False):
        g = g[g["value"].notna()]
        values = g["value"].astype(float).to_numpy()
        lo, hi = bootstrap_ci([np.array([v]) for v in values], n_boot=n_boot) if len(values) else (np.nan, np.nan)
        full = measures[
            (measures["test"] == test)
            & (measures["quantity"] == quantity)
            & (measures["variant"] == FULL_VARIANT.get(test))
        ]
        rows.append(
            {
                "test": test,
                "quantity": quantity,
                "variant": variant,
                "ours": float(values.mean()) if len(values) else np.nan,
                "std": float(values.std(ddof=1)) if len(values) > 1 else (0.0 if len(values) else np.nan),
                "ci_low": lo,
                "ci_high": hi,
                "seeds": len(values),
                **_paired(g, full[full["value"].notna()] if not full.empty else None, n_boot),
            }
        )
    columns = [
        "test",
        "quantity",
        "variant",
        "ours",
        "std",
        "ci_low",
        "ci_high",
        "seeds",
        "diff_vs_full",
        "diff_ci_low",
        "diff_ci_high",
        "p_value",
    ]
    ours = pd.DataFrame(rows, columns=columns)
    ref = pd.read_csv(reference_dir / "aecg_mechanisms.csv").rename(columns={"value": "paper"})
    out = ours.merge(ref[["test", "quantity", "variant", "paper"]], how="left", on=["test", "quantity", "variant"])
    out["diff"] = out["ours"] - out["paper"]
    return out


def cell(row: pd.Series) -> str:
    """'mean ± std [95% CI] (paper x)'; the CI only with two seeds or more."""
    if np.isnan(row["ours"]):
        return "-"
    std = f" ± {row['std']:.2f}" if row["seeds"] > 1 else ""
    ci = "" if np.isnan(row["ci_low"]) or row["seeds"] < 2 else f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    paper = "" if np.isnan(row["paper"]) else f" (paper {row['paper']:.2f})"
    return f"{row['ours']:.2f}{std}{ci}{paper}"


def table3_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """AECG Table 3's layout: one row per scope variant, one column per quantity."""
    rq2 = summary[summary["test"] == "rq2_scope"]
    return rq2.assign(cell=rq2.apply(cell, axis=1)).pivot(index="variant", columns="quantity", values="cell")


def _num(x: float, fmt: str = ".2f") -> str:
    return "–" if x != x else format(x, fmt)


def readable(summary: pd.DataFrame, test: str, *, smoke: bool) -> pd.DataFrame:
    """Every (quantity, variant) of one test: ours with std and CI, the paired difference against the
    full-AECG variant, the paper's value and (not for smoke runs) ours − paper."""
    d = summary[summary["test"] == test]
    out = pd.DataFrame(
        {
            "quantity": d["quantity"],
            "variant": d["variant"],
            "ours": [_num(x) for x in d["ours"]],
            "std": [_num(x) for x in d["std"]],
            "95% CI": [f"[{_num(lo)}, {_num(hi)}]" for lo, hi in zip(d["ci_low"], d["ci_high"], strict=True)],
            "seeds": d["seeds"].astype(int),
            f"Δ vs {FULL_VARIANT.get(test, 'full')} (paired by seed)": [
                "–" if x != x else f"{x:+.2f} [{_num(lo)}, {_num(hi)}]"
                for x, lo, hi in zip(d["diff_vs_full"], d["diff_ci_low"], d["diff_ci_high"], strict=True)
            ],
            "p": [_num(x, ".3f") for x in d["p_value"]],
            "paper": [_num(x) for x in d["paper"]],
        }
    )
    if not smoke:
        out["ours − paper"] = [_num(x, "+.2f") for x in d["diff"]]
    return out.reset_index(drop=True)


def table3(summary: pd.DataFrame, out_dir: Path, caption: str, *, preset: str = "paper") -> dict[str, Path]:
    numbers = summary[summary["test"] == "rq2_scope"].assign(preset_label=preset)
    return write_table(table3_frame(summary), out_dir, "table3", caption=caption, data=numbers)


def bar_figure(summary: pd.DataFrame, test: str, quantities: tuple[str, ...], out_stem: Path, title: str) -> list[Path]:
    """Grouped bars (ours, 95% CI) per variant for each quantity, the paper's values as markers."""
    plt = _pyplot()
    data = summary[summary["test"] == test]
    fig, axes = plt.subplots(1, len(quantities), figsize=(4.2 * len(quantities), 3.6), squeeze=False)
    for ax, q in zip(axes[0], quantities, strict=True):
        d = data[data["quantity"] == q]
        x = np.arange(len(d))
        err = np.vstack([d["ours"] - d["ci_low"], d["ci_high"] - d["ours"]]).clip(min=0)
        ax.bar(x, d["ours"], yerr=np.nan_to_num(err), capsize=3, label="ours")
        ax.scatter(x, d["paper"], marker="D", color="black", zorder=3, label="paper")
        ax.set_xticks(x, d["variant"], rotation=20)
        ax.set_title(q.replace("_", " "), fontsize=9)
        ax.set_ylabel(_wrap(UNITS.get(q, q.replace("_", " ")), 30), fontsize=8)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(_wrap(title, 100), fontsize=10)
    return _save(fig, out_stem, series=["ours", "paper"])


def render(dirs: list[Path], out_dir: Path, note: str = "", *, preset: str = "paper") -> pd.DataFrame:
    """Table 3, Figures 3-4 and `mechanisms_summary.csv` (numbers, marked with the preset; no
    ours − paper column outside the paper preset)."""
    summary = summarise(load_measures(dirs))
    out_dir.mkdir(parents=True, exist_ok=True)
    numbers = summary if preset == "paper" else summary.drop(columns=["diff"])
    numbers.assign(preset_label=preset).to_csv(out_dir / "mechanisms_summary.csv", index=False)
    table3(
        numbers,
        out_dir,
        f"AECG Table 3: hard vs flat scope (mean ± std [95% CI over seeds] (paper)). {note}",
        preset=preset,
    )
    bar_figure(summary, "rq3_drift", FIGURE3, out_dir / "figure3", f"AECG Figure 3: corrupted skills. {note}")
    bar_figure(summary, "rq4_triage", FIGURE4, out_dir / "figure4", f"AECG Figure 4: budgeted triage. {note}")
    return numbers
