"""Records and resume: kill -9 loses nothing flushed; read_only reruns are exact and free;
a changed config is refused with a diff; secrets never reach a written file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, crash_then_resume

from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import results_dir, results_dir_of
from aecg_bench.runner.records import RunDir, latest_by_position

STABLE = (
    "position",
    "sample_id",
    "phase",
    "seed",
    "status",
    "success",
    "value",
    "metrics",
    "steps",
    "recalled_memory_ids",
    "memory_stats",
    "label",
    "decisions",
    "maintain_round",
)
RUN = [
    "benchmark=toy",
    "benchmark.params.size=24",
    "memory=recorder",
    "protocol.maintain_every=4",
    "protocol.snapshot_every=5",
    "+model.models.mock.options.error_rate=0.25",
]


def _cli(root: Path, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "aecg_bench.run",
        f"runtime.results_root={root}",
        "runtime.progress=false",
        *RUN,
        *overrides,
    ]


def _run_dir(root: Path) -> RunDir:
    return RunDir(
        results_dir(
            root, experiment="default", benchmark="toy", framework="single", memory="recorder", model="mock", seed=0
        )
    )


def _stable(records: list[dict]) -> list[dict]:
    latest = latest_by_position(records)
    return [{k: latest[p][k] for k in STABLE} for p in sorted(latest)]


def _final_memory(rd: RunDir) -> dict:
    snaps = sorted(rd.memory_dir.glob("snapshot-*.json"))
    return json.loads(snaps[-1].read_text())["state"]


def _audit(rd: RunDir) -> list[dict]:
    return [json.loads(line) for line in rd.audit_file.read_text().splitlines()]


@pytest.mark.timeout(300)
def test_kill_9_midway_then_rerun_equals_an_uninterrupted_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    clean_root, killed_root = tmp_path / "clean", tmp_path / "killed"
    subprocess.run(_cli(clean_root), check=True, env=env, capture_output=True, cwd=REPO)

    slow = "+model.models.mock.options.delay_s=0.03"
    for stop_after in (7, 13):  # two kills at different points
        proc = subprocess.Popen(
            _cli(killed_root, slow),
            env=env,
            cwd=REPO,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        samples = _run_dir(killed_root).samples_file
        deadline = time.time() + 120
        while time.time() < deadline:
            if samples.exists() and samples.read_bytes().count(b"\n") >= stop_after:
                break
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    partial = _run_dir(killed_root).records()
    assert 13 <= len(partial) < 24, "the kills must land midway"
    subprocess.run(_cli(killed_root, slow), check=True, env=env, capture_output=True, cwd=REPO)

    clean, killed = _run_dir(clean_root), _run_dir(killed_root)
    killed_records = killed.records()
    assert sorted(r["position"] for r in killed_records) == list(range(24)), "every sample exactly once"
    assert _stable(killed_records) == _stable(clean.records())
    assert _final_memory(killed) == _final_memory(clean)
    assert _audit(killed) == _audit(clean)
    header = json.loads(killed.run_json.read_text())
    assert header["status"] == "complete" and len(header["resumes"]) == 2
    assert header["eval"] == json.loads(clean.run_json.read_text())["eval"]


def test_read_only_rerun_makes_no_provider_call_and_identical_records(make_config, tmp_path):
    cfg = make_config(*RUN)
    first = run_from_config(cfg)
    rd = _run_dir(Path(first["runtime"]["results_root"]))
    before = rd.records()
    # A fresh run dir replayed from the same cache in read_only mode.
    replay_cfg = make_config(*RUN, "experiment_name=replay", "runtime.cache.mode=read_only")
    replay = run_from_config(replay_cfg)
    assert replay["usage"]["total"]["provider_calls"] == 0
    assert replay["usage"]["total"]["cache_hits"] == first["usage"]["total"]["calls"]
    replay_rd = RunDir(rd.path.parents[5] / "replay" / rd.path.relative_to(rd.path.parents[4]))
    assert _stable(replay_rd.records()) == _stable(before)


def test_a_changed_config_is_refused_with_a_diff(make_config):
    run_from_config(make_config(*RUN))
    from aecg_bench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"(?s)different configuration.*error_rate"):
        run_from_config(make_config(*RUN[:-1], "+model.models.mock.options.error_rate=0.5"))
    allowed = run_from_config(
        make_config(*RUN[:-1], "+model.models.mock.options.error_rate=0.5", "runtime.allow_config_change=true")
    )
    assert allowed["config_changes"]


def test_rerunning_a_finished_run_does_nothing(make_config):
    first = run_from_config(make_config(*RUN))
    again = run_from_config(make_config(*RUN))
    assert again["counts"] == first["counts"]
    rd = _run_dir(Path(first["runtime"]["results_root"]))
    assert len(rd.records()) == 24


def test_api_keys_never_reach_written_files(make_config, monkeypatch, tmp_path):
    secret = "sk-test-THIS-MUST-NOT-LEAK-123456"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("AECG_TEST_TOKEN", secret)
    # The secret also reaches a prompt (a user pasting it into a task would do the same).
    cfg = make_config(
        *RUN,
        "benchmark.params.size=3",
        f"+model.models.mock.options.script=[{{match: '.*', reply: 'stop {secret}'}}]",
        "runtime.wandb.enabled=true",
        "runtime.wandb.mode=offline",
    )
    final = run_from_config(cfg)
    root = Path(final["runtime"]["results_root"])
    leaked = []
    for path in root.rglob("*"):
        if path.is_file() and not path.name.endswith((".sqlite", ".sqlite-wal", ".sqlite-shm")):
            data = path.read_bytes()
            if path.suffix == ".gz":
                import gzip

                data = gzip.decompress(data)
            if secret.encode() in data:
                leaked.append(str(path))
    assert leaked == []
    assert any(root.rglob("wandb")), "wandb offline files were written"


def test_crash_then_resume_rebuilds_framework_state(make_config, monkeypatch, tmp_path):
    """AgentNet's abilities and edge weights are snapshotted and replayed like memory."""

    args = [
        "framework=agentnet",
        "benchmark.params.size=10",
        "memory=recorder",
        "protocol.snapshot_every=3",
        "protocol.framework_learning=all",  # evolve on the eval stream (default: build and warm-up items only)
        "+model.models.mock.options.error_rate=0.3",
    ]
    clean, resumed = crash_then_resume(make_config, monkeypatch, args, after=7)
    root = Path(clean["runtime"]["results_root"])

    def final_state(experiment: str) -> dict:
        rd = RunDir(
            results_dir(
                root,
                experiment=experiment,
                benchmark="toy",
                framework="agentnet",
                memory="recorder",
                model="mock",
                seed=0,
            )
        )
        return _final_memory(rd)

    assert final_state("crashed")["framework"]["tasks_seen"] == 10
    assert final_state("crashed") == final_state("clean")
    assert resumed["eval"] == clean["eval"]


def test_a_second_process_on_the_same_run_is_refused(make_config):
    from aecg_bench.errors import ConfigError
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config

    plan, _, _ = build(parse_run_config(make_config(*RUN)))
    holder = RunDir(plan.run_dir)
    holder.create()  # another process is running this run
    try:
        with pytest.raises(ConfigError, match=r"is being run by pid \d+"):
            run_from_config(make_config(*RUN))
    finally:
        holder.release()
    assert run_from_config(make_config(*RUN))["status"] == "complete"


def test_resuming_with_the_cache_off_warns_that_memory_calls_are_resampled(make_config):
    def crash_and_resume(*run: str) -> str:
        rd = RunDir(results_dir_of(run_from_config(make_config(*run))))
        lines = rd.samples_file.read_text().splitlines(keepends=True)
        rd.samples_file.write_text("".join(lines[:-1]))  # the last item was lost in a crash
        run_from_config(make_config(*run))
        return (rd.path / "run.log").read_text()

    run = ("benchmark=toy", "benchmark.params.size=3", "memory=reasoningbank")
    assert "re-sampled" in crash_and_resume(*run, "runtime.cache.mode=off")
    assert "re-sampled" not in crash_and_resume(*run, "experiment_name=cached")
