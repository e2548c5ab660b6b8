"""AECG Table 1 (and Figure 5) from a sweep's results: `python scripts/make_table1.py results/aecg_table1`."""

import sys
from pathlib import Path

from aecg_bench.analysis.report import render_paper_table

if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/aecg_table1")
    render_paper_table(
        root,
        reference="aecg_table1",
        stem="table1",
        figure=True,
        caption="AECG Table 1: score by framework and benchmark",
    )
