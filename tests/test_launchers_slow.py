"""A 6-run sweep through the cluster launchers gives the same results as through the joblib launcher, and a
sweep killed midway resumes to the same results: submitit's local executor (the code path of
`runtime=slurm` without a cluster) and the Ray launcher on a local Ray with 2 CPUs (`runtime=ray`)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from aecg_bench.llm.cache import shard_dir
from aecg_bench.runner.records import RunDir

pytestmark = pytest.mark.slow

GRID = ["framework=single", "benchmark=toy", "memory=no_memory,recorder", "seed=0,1,2", "benchmark.params.size=4"]
LAUNCHERS = {
    "joblib": ["hydra.launcher.n_jobs=2"],
    "submitit_local": [
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=20",
        "hydra.launcher.cpus_per_task=1",
        "runtime.cache.shards=true",
        "+hydra.callbacks.merge_cache_shards._target_=aecg_bench.runner.sweep_callbacks.MergeCacheShards",
    ],
    "ray": ["runtime=ray", "hydra.launcher.num_cpus=2", "runtime.rate_limit_path=null"],
}


def _cmd(root: Path, launcher: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "aecg_bench.run",
        "-m",
        "model=mock",
        *GRID,
        *LAUNCHERS[launcher],
        f"runtime.results_root={root}",
        "runtime.progress=false",
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "RAY_DISABLE_USAGE_STATS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def _sweep(root: Path, launcher: str) -> None:
    out = subprocess.run(_cmd(root, launcher), cwd=REPO, env=_env(), capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])


def _results(root: Path) -> dict[str, list[tuple]]:
    """Per run (path below the root): what each sample gave, without timings."""
    out = {}
    for header in sorted(root.rglob("run.json")):
        if ".sweeps" in header.parts:
            continue
        records = sorted(RunDir(header.parent).records(), key=lambda r: r["position"])
        out[str(header.parent.relative_to(root))] = [
            (r["position"], r["sample_id"], r["status"], r["success"], r["value"], r["recalled_memory_ids"])
            for r in records
        ]
    return out


@pytest.fixture(scope="module")
def joblib_results(tmp_path_factory) -> dict[str, list[tuple]]:
    root = tmp_path_factory.mktemp("joblib") / "results"
    _sweep(root, "joblib")
    results = _results(root)
    assert len(results) == 6 and all(len(r) == 4 for r in results.values())
    return results


@pytest.mark.parametrize("launcher", ["submitit_local", "ray"])
def test_cluster_launcher_sweep_equals_the_joblib_sweep(tmp_path, launcher, joblib_results):
    if launcher == "ray":
        pytest.importorskip("ray", reason="the Ray launcher needs the optional extra: pip install -e '.[ray]'")
    root = tmp_path / "results"
    _sweep(root, launcher)
    assert _results(root) == joblib_results
    cache = root / ".cache" / "llm.sqlite"
    assert list(shard_dir(cache).glob("*.sqlite")), "jobs wrote per-process shards"
    assert cache.exists(), "the sweep's end merged the shards into one cache"


@pytest.mark.parametrize("launcher", ["submitit_local", "ray"])
def test_cluster_launcher_sweep_killed_midway_resumes_to_the_same_results(tmp_path, launcher, joblib_results):
    if launcher == "ray":
        pytest.importorskip("ray", reason="the Ray launcher needs the optional extra: pip install -e '.[ray]'")
    root = tmp_path / "results"
    proc = subprocess.Popen(
        _cmd(root, launcher),
        cwd=REPO,
        env=_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 600
    while time.time() < deadline and not list(root.rglob("samples.jsonl")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the jobs it started
    proc.wait()
    assert sum(len(r) for r in _results(root).values()) < 24, "the kill must land midway"
    _sweep(root, launcher)
    assert _results(root) == joblib_results


def test_a_timed_out_submitit_job_is_requeued_and_resumes_its_run(tmp_path):
    """submitit signals a job shortly before its time limit (here 1 min, signal 30 s before); the launcher's
    checkpoint requeues it, and the requeued job continues the run directory instead of starting over.

    The run must outlive the signal whatever the machine's load: its samples run one at a time (No-Memory
    samples would otherwise run 4 at once, runner/concurrent.py: the run ended in 15 s, unsignalled) and the
    model's delays alone (27 calls x 2 s = 54 s) exceed the 30 s after which the local executor signals.
    That executor counts the 30 s in 1/24 s sleeps, which a loaded machine stretches, and each requeued job
    spends its first seconds starting Python, so up to 8 requeues are allowed (submitit's local default is 3)."""
    root = tmp_path / "results"
    cmd = [
        sys.executable,
        "-m",
        "aecg_bench.run",
        "-m",
        "model=mock",
        "+model.models.mock.options.delay_s=2",  # a slow model: the run outlives the job's time limit
        "framework=single",
        "benchmark=toy",
        "benchmark.params.size=8",
        "memory=no_memory",
        "seed=0",
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=1",
        "+hydra.launcher.max_num_timeout=8",
        "runtime.concurrent_samples=1",
        f"runtime.results_root={root}",
        "runtime.progress=false",
    ]
    out = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    logs = "".join(p.read_text(errors="replace") for p in root.rglob(".submitit/**/*.err"))
    assert "Caught signal SIGUSR2" in logs, logs[-3000:]  # the time limit struck mid-run
    starts = [int(done) for done in re.findall(r"(\d+) done, \d+ to run", logs)]
    # requeued (more than once on a slow machine), each start resuming after what the previous ones finished
    assert len(starts) >= 2 and starts[0] == 0 and starts == sorted(set(starts)) and starts[-1] < 8, logs[-3000:]
    (run,) = [p.parent for p in root.rglob("run.json") if ".sweeps" not in p.parts]
    records = RunDir(run).records()
    assert sorted(r["position"] for r in records) == list(range(8))  # each sample once: resumed, not redone
    assert all(r["status"] == "ok" for r in records)
    header = RunDir(run).read_header()
    assert header["status"] == "complete" and header["sample_concurrency"]["width"] == 1
    # each requeued job found the run its predecessor left 'interrupted' (submitit exits from inside the run)
    assert [r["found"] for r in header["resumes"]] == ["interrupted"] * (len(starts) - 1), header["resumes"]
