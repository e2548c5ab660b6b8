"""The paper-table path: experiment configs compose, a sweep runs through Hydra's multirun with the
joblib launcher, the table script renders every cell from the results files, and a rerun resumes."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
from conftest import REPO

from aecg_bench.runner.records import RunDir

GRID = ["framework=single,macnet", "benchmark=toy,toy_tools", "memory=no_memory,aecg", "seed=0,1"]


def _sweep(root, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "aecg_bench.run",
        "experiment=aecg_table1",
        "model=mock",
        *GRID,
        "protocol.limit=2",
        "hydra.launcher.n_jobs=2",
        f"runtime.results_root={root}",
        "runtime.progress=false",
        *extra,
    ]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_tiny_sweep_renders_every_cell_and_resumes(tmp_path):
    root = tmp_path / "results"
    out = _sweep(root)
    assert out.returncode == 0, out.stderr[-2000:]
    runs = sorted(p.parent for p in (root / "aecg_table1").rglob("run.json"))
    assert len(runs) == 16  # 2 frameworks x 2 benchmarks x 2 memories x 2 seeds

    table = subprocess.run(
        [sys.executable, "scripts/make_table1.py", str(root / "aecg_table1")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert table.returncode == 0, table.stderr[-2000:]
    tables = root / "aecg_table1" / "tables"
    cells = pd.read_csv(tables / "table1.csv", header=[0, 1], index_col=0)
    assert cells.shape == (2, 6)  # {No-Memory, AECG} x {Single, MacNet} x {Toy, ToyTools, Avg}
    assert not cells.isin(["–"]).any().any() and cells.notna().all().all()
    for name in (
        "table1.md",
        "table1.tex",
        "table1_vs_paper.csv",
        "table1_cost.csv",
        "table1_heatmap.png",
        "table1_heatmap.pdf",
    ):
        assert (tables / name).stat().st_size > 0, name
    assert "Ours vs the paper" in table.stdout

    # A rerun of a finished sweep makes no new records.
    counts = {r: len(RunDir(r).records()) for r in runs}
    again = _sweep(root)
    assert again.returncode == 0, again.stderr[-2000:]
    assert {r: len(RunDir(r).records()) for r in runs} == counts
