"""AECG Table 3 and Figures 3-4 (PNG + PDF) from the mechanism tests' results.

    python scripts/make_mechanisms.py [--smoke] [--results-root results] [--out DIR]

Reads `<root>/aecg_rq2_scope[-smoke]/mechanisms.csv` (and rq3, rq4); writes
table3.{csv,md,tex}, figure3.{png,pdf}, figure4.{png,pdf} and
mechanisms_summary.csv to `<root>/aecg_mechanisms[-smoke]/`, ours beside the paper's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aecg_bench.analysis.mechanisms import render

TESTS = ("aecg_rq2_scope", "aecg_rq3_drift", "aecg_rq4_triage")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smoke preset's results (scripted world)")
    ap.add_argument("--results-root", default="results")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    suffix = "-smoke" if args.smoke else ""
    root = Path(args.results_root)
    out = Path(args.out) if args.out else root / f"aecg_mechanisms{suffix}"
    note = "SMOKE RUN: scripted mock world, not comparable to the paper." if args.smoke else ""
    preset = "smoke" if args.smoke else "paper"
    summary = render([root / f"{t}{suffix}" for t in TESTS], out, note, preset=preset)
    print(summary.to_markdown(index=False, floatfmt=".2f"))
    print(f"\nwrote {out}/table3.md, figure3.png/.pdf, figure4.png/.pdf")


if __name__ == "__main__":
    main()
