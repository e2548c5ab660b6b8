"""EDV Figures 4-6 (App. A.1-A.3) beside the paper's stated points: `python scripts/make_edv_figures.py results`.

    python scripts/make_edv_figures.py RESULTS_ROOT [--suffix -smoke] [--out DIR]

Reads RESULTS_ROOT/edv_fig4_epochs<suffix>, edv_fig5_topk<suffix>, edv_fig6_threshold<suffix> and
writes fig4_epochs / fig5_topk / fig6_threshold .png/.pdf/.csv: our Pass@1 per x with 95% CIs over
seeds (lines), the values the paper's text states (hollow markers; the figures themselves are
images, see results/reference/edv_figures.csv).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from aecg_bench.analysis import edv
from aecg_bench.analysis.load import load

FIGURES = {
    "fig4_epochs": ("build_epochs", "construction epochs", "EDV Fig. 4: Pass@1 over construction epochs"),
    "fig5_topk": ("top_k", "retrieved memories ({units})", "EDV Fig. 5: Pass@1 vs retrieved memories"),
    "fig6_threshold": ("threshold", "recall threshold tau (shared bank)", "EDV Fig. 6: Pass@1 vs recall threshold"),
}
COLORS = {"edv": "tab:red", "rb": "tab:blue"}


def plot(data: pd.DataFrame, paper: pd.DataFrame, x: str, xlabel: str, title: str, stem: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for method, g in data.groupby("method"):
        g = g.sort_values(x)
        err = [g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]]
        ax.errorbar(
            g[x], g["mean"], yerr=err, marker="o", capsize=3, color=COLORS.get(method), label=f"{method.upper()} (ours)"
        )
    for method, g in paper.groupby("method"):
        ax.scatter(
            g["x"],
            g["value"],
            facecolors="none",
            edgecolors=COLORS.get(method),
            s=60,
            label=f"{method.upper()} (paper)",
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, nargs="?", default=Path("results"))
    parser.add_argument("--suffix", default="")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or args.root / f"edv_tables{args.suffix}"
    reference = edv.reference("figures")
    written: list[Path] = []
    for name, (x, xlabel, title) in FIGURES.items():
        df = edv.annotate(load(args.root / f"edv_{name}{args.suffix}"))
        if df.empty:
            continue
        data = edv.curve(df, x)
        out.mkdir(parents=True, exist_ok=True)
        data.round(2).to_csv(out / f"{name}.csv", index=False)
        paper = reference[(reference["figure"] == name) & reference["x"].notna()].astype({"x": float})
        written += plot(data, paper, x, xlabel.format(units=edv.recall_units(df)), title, out / name)
        print(f"\n{title} (ours, mean and 95% CI over seeds)\n")
        print(data.round(2).to_markdown(index=False))
    if not written:
        print(f"no figure results under {args.root} (edv_fig*{args.suffix}): run the sweeps first")
        return 2
    print("\nwrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
