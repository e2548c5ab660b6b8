"""AECG Table 2 (component ablations) from a sweep's results: `python scripts/make_table2.py results/aecg_table2`."""

import sys
from pathlib import Path

from aecg_bench.analysis.report import render_paper_table

if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/aecg_table2")
    render_paper_table(
        root, reference="aecg_table2", stem="table2", caption="AECG Table 2: component ablations", compare_to="aecg"
    )
