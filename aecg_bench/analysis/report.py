"""Render a paper table from a results folder: print it, write it, compare it with the paper.

One set of files per configuration (experiment, model assignment, protocol, preset): results of
different configurations are never pooled. With one configuration the files are <stem>.*; with
several, <stem>-<n>.* and the printout names each configuration.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from aecg_bench.analysis.load import load
from aecg_bench.analysis.paper import (
    STRONGEST_BASELINE,
    PaperTable,
    aecg_claims,
    build_tables,
    compact_cost,
    cost_line,
    cost_table,
    load_margins,
    load_reference,
    readable_cells,
    readable_claims,
    task_set_notes,
)
from aecg_bench.analysis.plots import score_heatmap
from aecg_bench.analysis.tables import flat_columns, with_config, write_table


def render_paper_table(
    results_dir: Path,
    *,
    reference: str,
    stem: str,
    caption: str,
    out_dir: Path | None = None,
    figure: bool = False,
    compare_to: str = STRONGEST_BASELINE,
) -> dict[str, Path]:
    """Read `results_dir`, write <stem>.{csv,md,tex}, <stem>_vs_paper.*, <stem>_cost.* (and the
    claims beside the paper's when a <reference>_margins.csv exists, and the heatmap when asked)
    into `out_dir` (default: results_dir/tables); print what a reader needs."""
    out_dir = out_dir or results_dir / "tables"
    df = load(results_dir)
    if df.empty:
        raise SystemExit(f"no results under {results_dir}: run the sweep first")
    tables = build_tables(df, load_reference(reference), compare_to=compare_to)
    margins = load_margins(reference)  # only a table whose paper states claims gets a claims file
    notes = task_set_notes(df)
    paths: dict[str, Path] = {}
    for i, table in enumerate(tables):
        name = stem if len(tables) == 1 else f"{stem}-{i + 1}"
        cap = f"{table.caption_prefix}{caption} [{table.config['experiment']}; {table.config['assignment']}]"
        paths.update(_write(df, table, out_dir, name, cap, margins, figure, notes))
    return paths


def _write(
    df: pd.DataFrame,
    table: PaperTable,
    out_dir: Path,
    stem: str,
    caption: str,
    margins: pd.DataFrame | None,
    figure: bool,
    notes: list[str],
) -> dict[str, Path]:
    full_caption = " ".join([caption + ".", *notes]) if notes else caption
    config = table.config
    paths = write_table(table.display, out_dir, stem, caption=full_caption, data=with_config(table.summary, config))
    cells = readable_cells(table)
    vs = write_table(
        cells,
        out_dir,
        f"{stem}_vs_paper",
        caption=f"{caption}: every cell",
        index=False,
        data=with_config(table.comparison, config),
    )
    paths.update({f"vs_{k}": v for k, v in vs.items()})
    sub = df.merge(pd.DataFrame([config]), on=list(config))
    cost = cost_table(sub)
    shown_cost = compact_cost(cost)
    written = write_table(shown_cost, out_dir, f"{stem}_cost", caption=f"{caption}: usage and cost", data=cost)
    paths.update({f"cost_{k}": v for k, v in written.items()})
    claims = None
    if margins is not None and "aecg" in set(table.summary["memory"]):
        raw = aecg_claims(table.summary, margins, sub)
        claims = readable_claims(raw, smoke=table.smoke)
        written = write_table(
            claims,
            out_dir,
            f"{stem}_claims",
            caption=f"{caption}: claims",
            index=False,
            data=with_config(raw, config),
        )
        paths.update({f"claims_{k}": v for k, v in written.items()})
    if figure:
        for p in score_heatmap(
            table.summary, out_dir / f"{stem}_heatmap", title=f"{table.caption_prefix}Score heatmap"
        ):
            paths[p.suffix.lstrip(".")] = p
    _print(table, cells, claims, cost, caption, notes)
    return paths


def _print(
    table: PaperTable,
    cells: pd.DataFrame,
    claims: pd.DataFrame | None,
    cost: pd.DataFrame,
    caption: str,
    notes: list[str],
) -> None:
    print(f"\n{caption}\n(ours; mean ± std over seeds [bootstrap 95% CI]; † = incomplete cell)\n")
    for k, v in table.config.items():
        print(f"  {k}: {v}")
    print()
    print(flat_columns(table.display).to_markdown(disable_numparse=True))
    if notes:
        print("\nTask sets:\n" + "\n".join(f"- {n}" for n in notes))
    print(
        "\nEvery cell: paired test against its reference method"
        + ("" if table.smoke else ", and ours vs the paper")
        + ":\n"
    )
    print(cells.to_markdown(index=False, disable_numparse=True))
    missing = int(table.comparison["paper"].isna().sum())
    if missing:
        print(f"\n{missing} of our cells have no paper value (see results/reference/README.md).")
    if claims is not None:
        print("\nThe paper's claims recomputed from our cells:\n")
        print(claims.to_markdown(index=False, disable_numparse=True))
    incomplete = table.summary[~table.summary["complete"].astype(bool)]
    if not incomplete.empty:
        print(f"\n{len(incomplete)} flagged cells (missing or extra samples, infra errors):")
        cols = ["framework", "benchmark", "memory", "n_samples", "n_expected", "n_infra_error", "flag"]
        print(incomplete[cols].to_markdown(index=False))
    print(f"\nCost: {cost_line(cost)}")
