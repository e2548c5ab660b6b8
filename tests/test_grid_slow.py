"""Slow tier: every framework x every AECG benchmark x every Table 1 memory method, one sample each,
with the embedded model, through the real multirun path (the smoke grid at its smallest)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from aecg_bench.analysis.load import load
from aecg_bench.runner.records import RunDir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

FRAMEWORKS = ("autogen", "macnet", "agentnet")
BENCHMARKS = ("pddl", "fever", "scienceworld", "mbpp_plus", "procedures")  # procedures: issue 27, in every smoke
MEMORIES = ("no_memory", "macnet_m", "memorybank", "conmem", "g_memory", "aecg")
VALID = {"ok", "model_error", "limit_exceeded"}


def test_every_framework_benchmark_and_memory_runs_with_the_embedded_model(tmp_path, shared_data):
    root = tmp_path / "results"
    cmd = [
        sys.executable,
        "-m",
        "aecg_bench.run",
        "experiment=aecg_table1_smoke",
        "protocol.limit=1",
        "protocol.max_steps=2",
        f"runtime.results_root={root}",
        f"runtime.data_root={shared_data}",
        "runtime.progress=false",
        "hydra.launcher.n_jobs=2",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3500)
    assert out.returncode == 0, out.stderr[-3000:]
    runs = sorted(p.parent for p in (root / "aecg_table1-smoke").rglob("run.json"))
    assert len(runs) == len(FRAMEWORKS) * len(BENCHMARKS) * len(MEMORIES)
    for run in runs:
        records = RunDir(run).records()
        assert len(records) == 1 and records[0]["status"] in VALID, (run, records[0]["status"], records[0]["error"])
        assert records[0]["usage"]["total"]["calls"] >= 1
    df = load(root / "aecg_table1-smoke")
    assert set(df["framework"]) == set(FRAMEWORKS) and set(df["benchmark"]) == set(BENCHMARKS)
    assert set(df["memory"]) == set(MEMORIES)
    memory_side = df[df["memory"].isin(["conmem", "g_memory", "memorybank", "aecg"])]
    assert (memory_side.filter(like="tokens_").sum().sum()) > 0
