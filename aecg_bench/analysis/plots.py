"""Figures from aggregated results (matplotlib/seaborn, headless)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from aecg_bench.analysis.paper import BENCHMARKS, FRAMEWORKS, MEMORIES, _ordered


def score_heatmap(
    summary: pd.DataFrame,
    out_stem: Path,
    *,
    highlight: str = "aecg",
    title: str = "Score by framework, benchmark and memory method",
) -> list[Path]:
    """AECG Figure 5: a heatmap of mean score, rows = methods, columns = framework x benchmark,
    the highlighted method's row outlined. Writes PNG and PDF; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.patches import Rectangle

    frameworks = _ordered(summary["framework"], FRAMEWORKS)
    benchmarks = _ordered(summary["benchmark"], BENCHMARKS)
    memories = _ordered(summary["memory"], MEMORIES)
    cols = [(f, b) for f in frameworks for b in benchmarks]
    grid = summary.set_index(["memory", "framework", "benchmark"])["mean"]
    data = pd.DataFrame(
        [[grid.get((m, f, b), float("nan")) for f, b in cols] for m in memories],
        index=[MEMORIES.get(m, m) for m in memories],
        columns=[f"{FRAMEWORKS.get(f, f)}\n{BENCHMARKS.get(b, b)}" for f, b in cols],
    )
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(cols) + 2), 0.55 * len(memories) + 1.8))
    sns.heatmap(
        data,
        annot=True,
        fmt=".1f",
        cmap="viridis",
        vmin=0,
        vmax=100,
        cbar_kws={"label": "score"},
        ax=ax,
        linewidths=0.5,
        linecolor="white",
    )
    ax.tick_params(axis="y", rotation=0)
    if highlight in memories:
        row = memories.index(highlight)
        ax.add_patch(Rectangle((0, row), len(cols), 1, fill=False, edgecolor="red", linewidth=2.5))
    ax.set_title(title)
    ax.set_ylabel("")
    fig.tight_layout()
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [out_stem.with_suffix(".png"), out_stem.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths
