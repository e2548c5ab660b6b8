"""EDV's Tables 1-5, sec. 5.4, 5.5.2 and 5.6 beside the paper's: `python scripts/make_edv_tables.py results`.

    python scripts/make_edv_tables.py RESULTS_ROOT [--suffix -smoke] [--out DIR]
    python scripts/make_edv_tables.py RESULTS_ROOT --audit [--audit-benchmark tau2_retail]
    python scripts/make_edv_tables.py RESULTS_ROOT --score-audit SHEET.csv KEY.csv

Reads RESULTS_ROOT/edv_<experiment><suffix>/ for every EDV experiment present and writes, per
table, <name>.md (ours: mean ± std over seeds [95% CI]; the paper's table; paired tests of EDV
against the strongest baseline, or of each ablation against full EDV; ours vs paper per cell) and
CSVs, into --out (default RESULTS_ROOT/edv_tables<suffix>). --audit writes the blind rating sheet
and its key for the human audit of sec. 5.3 from Table 1's EDV and RB runs; --score-audit
averages a filled sheet beside the paper's audit numbers. Only reads results; no model call.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from aecg_bench.analysis import edv
from aecg_bench.analysis.load import load
from aecg_bench.analysis.paper import banner, preset_of
from aecg_bench.analysis.tables import flat_columns

EXPERIMENTS = ("table1", "table2", "table3", "table4", "table5", "contamination")


def _md(frame: pd.DataFrame, index: bool = True) -> str:
    if frame is None or frame.empty:
        return "(none)"
    return flat_columns(frame).to_markdown(index=index, disable_numparse=True)


def write(
    out: Path,
    name: str,
    title: str,
    table: edv.EdvTable,
    extra: dict[str, pd.DataFrame] | None = None,
    *,
    preset: str = "paper",
    suffix: str = "",
) -> Path:
    """One table's markdown and CSVs (numbers, each row marked with its experiment folder and
    preset); outside the paper preset the title says so and the ours − paper column is dropped."""
    out.mkdir(parents=True, exist_ok=True)
    title = banner(preset) + title
    if preset != "paper":
        table = replace(table, comparison=table.comparison.drop(columns=["diff"], errors="ignore"))
    parts = [
        f"# {title}\n",
        "## Ours (Pass@1 or metric in %, mean ± std over seeds [95% hierarchical-bootstrap CI]; † = incomplete)\n",
        _md(table.ours),
        "\n## The paper\n",
        _md(table.paper),
        "\n## Paired tests (difference in points, bootstrap 95% CI, sign-flip permutation p)\n",
        _md(table.tests.round(3) if not table.tests.empty else table.tests, index=False),
        "\n## Ours vs the paper, per cell (empty paper = the paper has no such cell, e.g. a stand-in benchmark)\n",
        _md(table.comparison, index=False),
    ]

    def csv(frame: pd.DataFrame, path: Path) -> None:
        frame.assign(experiment=f"edv_{name}{suffix}", preset_label=preset).to_csv(path, index=False)

    for heading, frame in (extra or {}).items():
        parts += [f"\n## {heading}\n", _md(frame, index=False)]
        csv(frame, out / f"{name}_{heading.split(' ')[0].lower()}.csv")
    path = out / f"{name}.md"
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    csv(table.comparison.drop(columns=["paper", "diff"], errors="ignore"), out / f"{name}.csv")
    csv(table.comparison, out / f"{name}_vs_paper.csv")
    csv(table.tests, out / f"{name}_tests.csv")
    print("\n".join(parts[:2]) + "\n" + _md(table.ours) + "\n")
    return path


def render(root: Path, suffix: str, out: Path, *, n_boot: int = 1000) -> list[Path]:
    written = []
    # the smoke (or rehearsal) preset's folders: captions say so, no ours − paper
    preset = preset_of({"experiment": suffix})
    frames = {e: edv.annotate(load(root / f"edv_{e}{suffix}")) for e in EXPERIMENTS}
    if not frames["table1"].empty:
        df = frames["table1"]
        extra = {"Inference tokens vs RB (sec. 5.6)": edv.inference_tokens(df)}
        written.append(
            write(
                out,
                "table1",
                "EDV Table 1: Pass@1 per domain",
                edv.main_table(df, edv.reference("table1"), n_boot=n_boot),
                extra,
                preset=preset,
                suffix=suffix,
            )
        )
    if not frames["table2"].empty:
        t = edv.mind2web_table(frames["table2"], edv.reference("table2"), n_boot=n_boot)
        written.append(
            write(out, "table2", "EDV Table 2: Mind2Web EA / AF1 / SSR / SR", t, preset=preset, suffix=suffix)
        )
    if not frames["table3"].empty:
        t = edv.mmtb_table(frames["table3"], edv.reference("table3"), n_boot=n_boot)
        written.append(write(out, "table3", "EDV Table 3: MMTB", t, preset=preset, suffix=suffix))
    if not frames["table4"].empty:
        t = edv.ablation_table(frames["table4"], edv.reference("table4"), edv.TABLE4_ROWS, n_boot=n_boot)
        written.append(
            write(out, "table4", "EDV Table 4: progressive paradigm ablation", t, preset=preset, suffix=suffix)
        )
    if not frames["table5"].empty:
        df = frames["table5"]
        extra = {
            "Retrieval per bank (sec. 5.5.2; paper: shared 72.3% x 3.2 = 2.3, private 31.8% x 1.8 = 0.6)": edv.bank_retrieval(
                df
            ),
            "Paper sec. 5.5.2": edv.text_reference("5.5.2"),
        }
        t = edv.ablation_table(df, edv.reference("table5"), edv.TABLE5_ROWS, n_boot=n_boot)
        written.append(write(out, "table5", "EDV Table 5: component ablation", t, extra, preset=preset, suffix=suffix))
    if not frames["contamination"].empty:
        df = frames["contamination"]
        ref = edv.contamination_reference()
        extra = {"Injected share of stored and recalled items": edv.contamination_recall(df)}
        t = edv.ablation_table(df, ref, edv.CONTAMINATION_ROWS, full="rb_b3", n_boot=n_boot)
        written.append(
            write(out, "contamination", "EDV sec. 5.4: memory contamination", t, extra, preset=preset, suffix=suffix)
        )
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, nargs="?", default=Path("results"))
    parser.add_argument("--suffix", default="", help="experiment folder suffix, e.g. -smoke")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--audit", action="store_true", help="write the sec. 5.3 rating sheet and its key")
    parser.add_argument("--audit-benchmark", default=None, help="only items built on this benchmark (paper: RETAIL)")
    parser.add_argument("--score-audit", nargs=2, type=Path, metavar=("SHEET", "KEY"))
    args = parser.parse_args()
    out = args.out or args.root / f"edv_tables{args.suffix}"
    if args.score_audit:
        sheet, key = (pd.read_csv(p, dtype=str).fillna("") for p in args.score_audit)
        scores = edv.audit_scores(sheet, key)
        print(scores.to_markdown(index=False))
        return 0
    if args.audit:
        df = edv.annotate(load(args.root / f"edv_table1{args.suffix}"))
        items = edv.audit_items(df, benchmark=args.audit_benchmark) if not df.empty else pd.DataFrame()
        if items.empty:
            print(f"no stored EDV or RB items under {args.root / f'edv_table1{args.suffix}'}: run Table 1 first")
            return 2
        sheet, key = edv.audit_sheets(items)
        out.mkdir(parents=True, exist_ok=True)
        sheet.to_csv(out / "audit_sheet.csv", index=False)
        key.to_csv(out / "audit_key.csv", index=False)
        print(f"{len(sheet)} items -> {out / 'audit_sheet.csv'} (rate 0-5 per column; key: {out / 'audit_key.csv'})")
        return 0
    written = render(args.root, args.suffix, out)
    if not written:
        print(f"no EDV results under {args.root} (experiments edv_<name>{args.suffix}): run the sweeps first")
        return 2
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
