"""The whole path on the toy benchmarks with the mock model: config -> run dir -> records."""

from __future__ import annotations

import json

from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.runner.records import RunDir


def _run_dir(final: dict) -> RunDir:
    return RunDir(results_dir_of(final))


def test_toy_run_writes_one_record_per_sample(make_config):
    final = run_from_config(make_config("benchmark=toy", "benchmark.params.size=5"))
    assert final["status"] == "complete"
    rd = _run_dir(final)
    records = rd.records()
    assert [r["position"] for r in records] == list(range(5))
    assert all(r["status"] == "ok" and r["success"] for r in records)
    assert final["eval"]["success_rate"] == 1.0
    header = json.loads(rd.run_json.read_text())
    assert header["identity"]["components"]["benchmark"]["name"] == "toy"
    assert header["counts"]["recorded"] == 5


def test_tool_use_benchmark_runs_missions_with_a_scripted_user(make_config):
    final = run_from_config(make_config("benchmark=toy_tools", "benchmark.params.size=3", "memory=recorder"))
    rd = _run_dir(final)
    records = rd.records()
    assert all(r["success"] and r["metrics"]["missions_done"] == 2.0 for r in records)
    episode = rd.read_trajectory(0, 1)["rollouts"][0]["episode"]
    kinds = [s["action"]["kind"] for s in episode["trajectory"]["steps"]]
    assert "tool" in kinds and "message" in kinds
    assert episode["trajectory"]["steps"][-1]["observation"]["done"] is True
