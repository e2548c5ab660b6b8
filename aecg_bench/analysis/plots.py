"""Figures from aggregated results (matplotlib, headless, one style, PNG + PDF).

Plain matplotlib with its built-in seaborn-like style: importing seaborn costs seconds and the
report should render fast."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aecg_bench.analysis.paper import (
    AGENT_ROLES,
    BENCHMARKS,
    FRAMEWORKS,
    MEMORIES,
    _ordered,
    role_side,
    role_tokens,
)

STYLE = ["seaborn-v0_8-whitegrid", "tableau-colorblind10"]


def _pyplot() -> Any:
    """matplotlib on the Agg backend with the house style (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.style.use(STYLE)
    return plt


def _wrap(title: str, width: int) -> str:
    """Long captions (a smoke run's warning) wrap instead of running off the figure."""
    return "\n".join(textwrap.wrap(title, width))


def manifest_path(png: Path) -> Path:
    """Where a figure's manifest lies beside its PNG (the report reads it; a browser test checks it)."""
    return png.with_name(png.stem + ".figure.json")


def _legend_labels(fig: Any, saved: Any) -> list[str]:
    """Legend entries whose text lies inside the saved image (`saved`: its bounding box in inches)."""
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    shown = []
    for legend in legends:
        if legend is None:
            continue
        for text in legend.get_texts():
            box = text.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
            inside = box.x0 >= saved.x0 - 0.01 and box.x1 <= saved.x1 + 0.01
            if inside and box.y0 >= saved.y0 - 0.01 and box.y1 <= saved.y1 + 0.01 and text.get_visible():
                shown.append(text.get_text())
    return shown


def _axes_facts(ax: Any) -> dict[str, Any]:
    from matplotlib.colors import to_hex

    lo, hi = sorted(ax.get_xlim())
    return {
        "title": ax.get_title(),
        "xlabel": ax.get_xlabel(),
        "ylabel": ax.get_ylabel(),
        "xticks": [float(t) for t in ax.get_xticks() if lo - 1e-9 <= t <= hi + 1e-9],
        "line_colors": {
            line.get_label(): to_hex(line.get_color())
            for line in ax.get_lines()
            if not line.get_label().startswith("_")
        },
    }


def _save(fig: Any, out_stem: Path, *, series: list[str] | None = None) -> list[Path]:
    """PNG + PDF cropped to everything drawn (legends below or beside the axes are never cut), and a
    manifest: the series the data has (`series`), the legend entries inside the saved image, and
    each panel's labels and ticks."""
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [out_stem.with_suffix(".png"), out_stem.with_suffix(".pdf")]
    fig.tight_layout()
    fig.canvas.draw()
    saved = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1)
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches=saved)
    manifest = {
        "series": list(dict.fromkeys(series or [])),
        "legend": _legend_labels(fig, saved),
        "axes": [
            _axes_facts(ax) for ax in fig.axes if ax.get_visible() and ax.axison and ax.get_label() != "<colorbar>"
        ],
    }
    manifest_path(paths[0]).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return paths


STREAM_KEYS = ["framework", "benchmark", "memory", "seed"]


def running_success(df: pd.DataFrame, window: int = 10) -> pd.DataFrame:
    """Per stream (framework, benchmark, memory, seed): the eval tasks in stream order (`_i`, from 1)
    and the mean success in percent over the last `window` of them up to each (`_cum`)."""
    data = df[df["phase"] == "eval"].sort_values([*STREAM_KEYS, "position"]).copy()
    data["_y"] = data["success"].fillna(False).astype(float) * 100
    by = [data[k] for k in STREAM_KEYS]
    data["_i"] = data.groupby(by, sort=False).cumcount() + 1
    total = data.groupby(by, sort=False)["_y"].cumsum()
    before = total.groupby(by, sort=False).shift(window, fill_value=0.0)
    data["_cum"] = (total - before) / data["_i"].clip(upper=window)
    return data


def learning_curve(df: pd.DataFrame, out_stem: Path, *, window: int = 10, title: str = "") -> list[Path]:
    """Success over the task stream per method: the running mean of success over the last `window`
    eval tasks (mean over seeds, band = min..max over seeds), one panel per framework x benchmark."""
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    data = running_success(df, window)
    curves = data.groupby(["framework", "benchmark", "memory", "_i"])["_cum"].agg(["mean", "min", "max"])
    present = set(zip(data["framework"], data["benchmark"], strict=True))
    panels = [
        (f, b)
        for f in _ordered(data["framework"], FRAMEWORKS)
        for b in _ordered(data["benchmark"], BENCHMARKS)
        if (f, b) in present
    ]
    methods = _ordered(data["memory"], MEMORIES)
    ncol = min(4, max(1, len(panels)))
    nrow = int(np.ceil(len(panels) / ncol)) or 1
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.8 * nrow + 0.6), squeeze=False, sharey=True)
    for ax, (fw, bench) in zip(axes.flat, panels, strict=False):
        part = data[(data["framework"] == fw) & (data["benchmark"] == bench)]
        for mem in _ordered(part["memory"], MEMORIES):
            g = curves.loc[(fw, bench, mem)]
            i = methods.index(mem)  # one colour (and, past ten methods, dash) per method in every panel
            style = {"color": f"C{i % 10}", "linestyle": ("-", "--", ":")[i // 10 % 3]}
            marker = "." if len(g) < 20 else None
            ax.plot(g.index, g["mean"], label=MEMORIES.get(mem, mem), marker=marker, **style)
            ax.fill_between(g.index, g["min"], g["max"], alpha=0.15, color=style["color"])
        ax.set_title(f"{FRAMEWORKS.get(fw, fw)} / {BENCHMARKS.get(bench, bench)}")
        ax.set_xlabel("task in stream")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-2, 102)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for row in axes:
        row[0].set_ylabel(f"success, running mean of {window} (%)")
    # one entry per method of any panel (a method absent from the first panel still gets one)
    entries: dict[str, Any] = {}
    for ax in axes.flat[: len(panels)]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    names = [MEMORIES.get(m, m) for m in _ordered(data["memory"], MEMORIES)]
    labels = [n for n in names if n in entries]
    fig.legend(
        [entries[n] for n in labels],
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(4, max(1, len(labels))),
        frameon=False,
    )
    fig.suptitle(_wrap(title or "Learning curve: success over the task stream", 110))
    return _save(fig, out_stem, series=names)


def role_cost_bars(df: pd.DataFrame, out_stem: Path, *, title: str = "") -> list[Path]:
    """Tokens per evaluated sample by role (agent-side roles vs memory-side roles), per method,
    stacked; one bar per memory method, averaged over every cell it ran. The bars are exactly
    `role_tokens(df)`, the table the report prints beside the figure."""
    plt = _pyplot()
    per = role_tokens(df)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(per) + 2.5), 3.6))
    bottom = np.zeros(len(per))
    labels = [f"{role} ({role_side(role)})" for role in per.columns]
    for role, label in zip(per.columns, labels, strict=True):
        vals = per[role].to_numpy(dtype=float)
        ax.bar(range(len(per)), vals, bottom=bottom, label=label, hatch="" if role in AGENT_ROLES else "//")
        bottom += vals
    ax.set_ylabel("tokens per evaluated sample")
    ax.set_xticks(range(len(per)), list(per.index), rotation=30, ha="right")
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(_wrap(title or "Cost by role (tokens per sample)", 60))
    return _save(fig, out_stem, series=labels)


def score_heatmap(
    summary: pd.DataFrame,
    out_stem: Path,
    *,
    highlight: str = "aecg",
    title: str = "Score by framework, benchmark and memory method",
) -> list[Path]:
    """AECG Figure 5: a heatmap of mean score, rows = methods, columns = framework x benchmark,
    the highlighted method's row outlined. Writes PNG and PDF; returns their paths."""
    from matplotlib.patches import Rectangle

    plt = _pyplot()

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
    values = data.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap="viridis", vmin=0, vmax=100, aspect="auto")
    fig.colorbar(image, ax=ax, label="score")
    for (i, j), v in np.ndenumerate(values):
        if v == v:
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if v < 60 else "black", fontsize=8)
    ax.set_xticks(range(len(cols)), data.columns, fontsize=8)
    ax.set_yticks(range(len(memories)), data.index)
    ax.grid(False)
    if highlight in memories:
        row = memories.index(highlight)
        ax.add_patch(Rectangle((-0.5, row - 0.5), len(cols), 1, fill=False, edgecolor="red", linewidth=2.5))
    ax.set_title(_wrap(title, 60))
    ax.set_ylabel("memory method")
    ax.set_xlabel("framework / benchmark")
    return _save(fig, out_stem)


EDV_COLORS = {"edv": "tab:red", "rb": "tab:blue"}


def _tick_label(x: float) -> str:
    return f"{x:g}"


def edv_curve(data: pd.DataFrame, paper: pd.DataFrame, x: str, xlabel: str, title: str, out_stem: Path) -> list[Path]:
    """EDV Figures 4-6: our Pass@1 per x (lines, 95% CI over seeds) for EDV and RB, and the values the
    paper's text states as hollow markers (`paper`: method, x, value). EDV is drawn last and on top,
    so where the two lines meet EDV's stays visible; the x ticks are the settings run (whole numbers
    on an integer axis such as epochs or top-k)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    methods = sorted(set(data["method"]), key=lambda m: (m == "edv", m))  # EDV last
    labels = []
    for rank, method in enumerate(methods):
        g = data[data["method"] == method].sort_values(x)
        err = [g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]]
        label = f"{method.upper()} (ours)"
        ax.errorbar(
            g[x],
            g["mean"],
            yerr=np.nan_to_num(np.clip(np.asarray(err, dtype=float), 0, None)),
            marker="o",
            capsize=3,
            color=EDV_COLORS.get(method),
            label=label,
            zorder=3 + rank,
        )
        labels.append(label)
    for method, g in paper.groupby("method"):
        label = f"{method.upper()} (paper)"
        ax.scatter(
            g["x"], g["value"], facecolors="none", edgecolors=EDV_COLORS.get(method), s=60, label=label, zorder=2
        )
        labels.append(label)
    xs = sorted({float(v) for v in [*data[x].dropna(), *paper.get("x", pd.Series(dtype=float)).dropna()]})
    if 0 < len(xs) <= 12:
        ax.set_xticks(xs, [_tick_label(v) for v in xs])
    elif all(v.is_integer() for v in xs):
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(_wrap(title, 60), fontsize=9)
    ax.legend(fontsize=7)
    return _save(fig, out_stem, series=labels)
