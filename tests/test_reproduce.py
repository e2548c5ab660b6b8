"""The paper-table path: experiment configs compose, a sweep runs through Hydra's multirun with the
joblib launcher, the table script renders every cell from the results files, and a rerun resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
from conftest import REPO

from aecg_bench.llm import cpu_build
from aecg_bench.runner.records import RunDir

GRID = ["framework=single,macnet", "benchmark=toy,toy_tools", "memory=no_memory,aecg", "seed=0,1"]


def _sweep_cmd(root, limit: int = 2) -> list[str]:
    return [
        sys.executable,
        "-m",
        "aecg_bench.run",
        "experiment=aecg_table1",
        "model=mock",
        *GRID,
        f"protocol.limit={limit}",
        "hydra.launcher.n_jobs=2",
        f"runtime.results_root={root}",
        "runtime.progress=false",
        "embedder.backend=lexical",  # sweep mechanics, not embeddings: skip loading MiniLM in 16 jobs
    ]


def _sweep(root, limit: int = 2) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_sweep_cmd(root, limit), cwd=REPO, capture_output=True, text=True, timeout=600)


def test_tiny_sweep_renders_every_cell_and_resumes(tmp_path):
    root = tmp_path / "results"
    out = _sweep(root)
    assert out.returncode == 0, out.stderr[-2000:]
    runs = sorted(p.parent for p in (root / "aecg_table1").rglob("run.json"))
    assert len(runs) == 16  # 2 frameworks x 2 benchmarks x 2 memories x 2 seeds
    env = json.loads((runs[0] / "run.json").read_text())["environment"]
    assert env["concurrent_jobs"] == 2  # the launcher's n_jobs reached the run: model threads share the cores
    assert env["cpu_model"] == cpu_build.cpu_model() != ""  # speed figures are read with the CPU they ran on
    # threads follow the runs in flight (llm/threads.py): a run that starts while its peer runs gets its
    # share of the cores, one that starts alone gets them all, never more (tests/test_threads.py pins the rule)
    cores = len(os.sched_getaffinity(0))
    assert max(cores // 2, 1) <= env["embedded_model_threads"] <= cores

    table = subprocess.run(
        [sys.executable, "scripts/make_table1.py", str(root / "aecg_table1")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert table.returncode == 0, table.stderr[-2000:]
    tables = root / "aecg_table1" / "tables"
    cells = pd.read_csv(tables / "table1.csv")  # one row of numbers per cell
    assert len(cells) == 8  # {No-Memory, AECG} x {Single, MacNet} x {Toy, ToyTools}
    assert cells["mean"].dtype.kind == "f" and cells[["mean", "ci_low", "ci_high"]].notna().all().all()
    for name in (
        "table1.md",
        "table1.tex",
        "table1_vs_paper.csv",
        "table1_cost.csv",
        "table1_heatmap.png",
        "table1_heatmap.pdf",
    ):
        assert (tables / name).stat().st_size > 0, name
    assert "paired test against its reference method" in table.stdout

    # A rerun of a finished sweep makes no new records.
    counts = {r: len(RunDir(r).records()) for r in runs}
    again = _sweep(root)
    assert again.returncode == 0, again.stderr[-2000:]
    assert {r: len(RunDir(r).records()) for r in runs} == counts


def test_killing_a_sweep_midway_and_rerunning_redoes_nothing_finished(tmp_path):
    import os
    import signal
    import time

    root = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = _sweep_cmd(root, limit=3)
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 240
    while time.time() < deadline and len(list(root.rglob("samples.jsonl"))) < 6:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and its workers
    proc.wait()
    before = {p.parent: RunDir(p.parent).records() for p in root.rglob("samples.jsonl")}
    finished = {d for d, recs in before.items() if len(recs) == 3}
    assert 0 < len(before) < 16, "the kill must land midway"

    out = _sweep(root, limit=3)
    assert out.returncode == 0, out.stderr[-2000:]
    runs = sorted(p.parent for p in (root / "aecg_table1").rglob("run.json"))
    assert len(runs) == 16
    for run in runs:
        records = RunDir(run).records()
        assert sorted(r["position"] for r in records) == [0, 1, 2], run
        if run in finished:
            assert records == before[run]  # nothing finished was redone
