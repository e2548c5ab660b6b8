"""Render a paper table from a results folder: print it, write it, compare it with the paper."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from aecg_bench.analysis.load import load
from aecg_bench.analysis.paper import build_table, cost_table, load_reference, task_set_notes
from aecg_bench.analysis.plots import score_heatmap
from aecg_bench.analysis.tables import flat_columns, write_table


def render_paper_table(
    results_dir: Path, *, reference: str, stem: str, caption: str, out_dir: Path | None = None, figure: bool = False
) -> dict[str, Path]:
    """Read `results_dir`, write <stem>.{csv,md,tex}, <stem>_vs_paper.*, <stem>_cost.* (and the
    heatmap when asked) into `out_dir` (default: results_dir/tables); print what a reader needs."""
    out_dir = out_dir or results_dir / "tables"
    df = load(results_dir)
    if df.empty:
        raise SystemExit(f"no results under {results_dir}: run the sweep first")
    table = build_table(df, load_reference(reference))
    notes = task_set_notes(df)
    paths = write_table(table.display, out_dir, stem, caption=" ".join([caption + ".", *notes]) if notes else caption)
    vs = table.comparison.copy()
    for col in ("mean", "std", "paper", "diff"):
        vs[col] = vs[col].round(2)
    paths.update(
        {
            f"vs_{k}": v
            for k, v in write_table(
                vs, out_dir, f"{stem}_vs_paper", caption=f"{caption}: ours vs paper", index=False
            ).items()
        }
    )
    cost = cost_table(df)
    paths.update(
        {
            f"cost_{k}": v
            for k, v in write_table(
                cost, out_dir, f"{stem}_cost", caption=f"{caption}: usage and cost", index=False
            ).items()
        }
    )
    if figure:
        for p in score_heatmap(table.summary, out_dir / f"{stem}_heatmap"):
            paths[p.suffix.lstrip(".")] = p
    _print(table.display, vs, cost, caption, notes)
    return paths


def _print(display: pd.DataFrame, vs: pd.DataFrame, cost: pd.DataFrame, caption: str, notes: list[str]) -> None:
    print(f"\n{caption} (ours; mean ± std over seeds; † = incomplete cell)\n")
    print(flat_columns(display).to_markdown(disable_numparse=True))
    if notes:
        print("\nTask sets:\n" + "\n".join(f"- {n}" for n in notes))
    with_paper = vs.dropna(subset=["paper"])
    print("\nOurs vs the paper (cells the paper text reports):\n")
    print(with_paper.to_markdown(index=False) if not with_paper.empty else "(no overlapping cells)")
    missing = int(vs["paper"].isna().sum())
    if missing:
        print(f"\n{missing} of our cells have no paper value (see results/reference/README.md).")
    incomplete = vs[~vs["complete"].astype(bool)]
    if not incomplete.empty:
        print(f"\n{len(incomplete)} incomplete cells (missing samples or infra errors):")
        print(
            incomplete[["framework", "benchmark", "memory", "n_samples", "n_expected", "n_infra_error"]].to_markdown(
                index=False
            )
        )
    print(
        f"\nTotal cost ${cost['cost'].sum():.4f}; agent tokens {int(cost['agent_tokens'].sum()):,}; "
        f"memory-side tokens {int(cost['memory_side_tokens'].sum()):,}"
    )
