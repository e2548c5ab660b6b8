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

from aecg_bench.analysis import edv
from aecg_bench.analysis.load import load
from aecg_bench.analysis.paper import banner, preset_of
from aecg_bench.analysis.plots import edv_curve

FIGURES = {
    "fig4_epochs": ("build_epochs", "construction epochs", "EDV Fig. 4: Pass@1 over construction epochs"),
    "fig5_topk": ("top_k", "retrieved memories ({units})", "EDV Fig. 5: Pass@1 vs retrieved memories"),
    "fig6_threshold": ("threshold", "recall threshold tau (shared bank)", "EDV Fig. 6: Pass@1 vs recall threshold"),
}


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
        preset = preset_of({"experiment": args.suffix})
        title = banner(preset) + title
        out.mkdir(parents=True, exist_ok=True)
        data.round(2).assign(preset_label=preset).to_csv(out / f"{name}.csv", index=False)
        paper = reference[(reference["figure"] == name) & reference["x"].notna()].astype({"x": float})
        written += edv_curve(data, paper, x, xlabel.format(units=edv.recall_units(df)), title, out / name)
        print(f"\n{title} (ours, mean and 95% CI over seeds)\n")
        print(data.round(2).to_markdown(index=False))
    if not written:
        print(f"no figure results under {args.root} (edv_fig*{args.suffix}): run the sweeps first")
        return 2
    print("\nwrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
