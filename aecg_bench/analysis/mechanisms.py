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
from aecg_bench.analysis.stats import bootstrap_ci
from aecg_bench.analysis.tables import write_table

FIGURE3 = ("uses_to_review", "polluted_failed_uses", "post_corruption_success_pct")
FIGURE4 = ("exposure_covered_first_two_reviews_pct", "failed_task_exposure")


def load_measures(dirs: list[Path]) -> pd.DataFrame:
    frames = [pd.read_csv(d / "mechanisms.csv") for d in dirs if (d / "mechanisms.csv").exists()]
    if not frames:
        return pd.DataFrame(columns=["test", "quantity", "variant", "seed", "value"])
    return pd.concat(frames, ignore_index=True)


def summarise(measures: pd.DataFrame, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    """One row per (test, quantity, variant): ours (mean, CI, seeds) and the paper's value."""
    rows = []
    for (test, quantity, variant), g in measures.groupby(["test", "quantity", "variant"], sort=False):
        values = g["value"].astype(float).to_numpy()
        values = values[~np.isnan(values)]
        lo, hi = bootstrap_ci([np.array([v]) for v in values]) if len(values) else (np.nan, np.nan)
        rows.append(
            {
                "test": test,
                "quantity": quantity,
                "variant": variant,
                "ours": float(values.mean()) if len(values) else np.nan,
                "ci_low": lo,
                "ci_high": hi,
                "seeds": len(values),
            }
        )
    ours = pd.DataFrame(rows, columns=["test", "quantity", "variant", "ours", "ci_low", "ci_high", "seeds"])
    ref = pd.read_csv(reference_dir / "aecg_mechanisms.csv").rename(columns={"value": "paper"})
    out = ours.merge(ref[["test", "quantity", "variant", "paper"]], how="left", on=["test", "quantity", "variant"])
    out["diff"] = out["ours"] - out["paper"]
    return out


def cell(row: pd.Series) -> str:
    if np.isnan(row["ours"]):
        return "-"
    ci = "" if np.isnan(row["ci_low"]) or row["seeds"] < 2 else f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    paper = "" if np.isnan(row["paper"]) else f" (paper {row['paper']:.2f})"
    return f"{row['ours']:.2f}{ci}{paper}"


def table3(summary: pd.DataFrame, out_dir: Path, caption: str) -> dict[str, Path]:
    rq2 = summary[summary["test"] == "rq2_scope"]
    display = rq2.assign(cell=rq2.apply(cell, axis=1)).pivot(index="variant", columns="quantity", values="cell")
    return write_table(display, out_dir, "table3", caption=caption)


def bar_figure(summary: pd.DataFrame, test: str, quantities: tuple[str, ...], out_stem: Path, title: str) -> list[Path]:
    """Grouped bars (ours, 95% CI) per variant for each quantity, the paper's values as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = summary[summary["test"] == test]
    fig, axes = plt.subplots(1, len(quantities), figsize=(4.2 * len(quantities), 3.4), squeeze=False)
    for ax, q in zip(axes[0], quantities, strict=True):
        d = data[data["quantity"] == q]
        x = np.arange(len(d))
        err = np.vstack([d["ours"] - d["ci_low"], d["ci_high"] - d["ours"]]).clip(min=0)
        ax.bar(x, d["ours"], yerr=np.nan_to_num(err), capsize=3, color="#4c72b0", label="ours")
        ax.scatter(x, d["paper"], marker="D", color="#dd8452", zorder=3, label="paper")
        ax.set_xticks(x, d["variant"], rotation=20)
        ax.set_title(q.replace("_", " "), fontsize=9)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    paths = [out_stem.with_suffix(".png"), out_stem.with_suffix(".pdf")]
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def render(dirs: list[Path], out_dir: Path, note: str = "") -> pd.DataFrame:
    summary = summarise(load_measures(dirs))
    out_dir.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out_dir / "mechanisms_summary.csv", index=False)
    table3(summary, out_dir, f"AECG Table 3: hard vs flat scope (mean [95% CI over seeds] (paper)). {note}")
    bar_figure(summary, "rq3_drift", FIGURE3, out_dir / "figure3", f"AECG Figure 3: corrupted skills. {note}")
    bar_figure(summary, "rq4_triage", FIGURE4, out_dir / "figure4", f"AECG Figure 4: budgeted triage. {note}")
    return summary
