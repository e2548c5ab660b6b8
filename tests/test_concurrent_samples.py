"""Concurrent samples where memory is frozen or absent (issue 32, runner/concurrent.py): the same records,
trajectories and audit lines as a sequential run, in stream order; samples overlap only where the
protocol makes them independent; a kill -9 mid-run resumes to the same records."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import REPO, compose

from aecg_bench.contracts import Framework
from aecg_bench.run import run_from_config
from aecg_bench.runner import concurrent
from aecg_bench.runner.execute import Protocol, StreamItem
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.testing.fake_server import FakeOpenAIServer

EDV = [
    "benchmark=toy_tools",
    "model=edv_pool_mock",
    "seed=1",
    "protocol.mode=build_then_freeze",
    "benchmark.params.train_size=4",
    "benchmark.params.size=8",
]
TIMING = ("started_at", "seconds")


def _run(root: Path, *args: str) -> tuple[dict, list[dict], list[str], list[dict]]:
    """(final header, records without timing, audit lines, trajectories) of one run."""
    final = run_from_config(compose(list(args), root))
    run_dir = results_dir_of(final)
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    records = [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]
    audit = (run_dir / "memory" / "audit.jsonl").read_text().splitlines() if (run_dir / "memory" / "audit.jsonl").exists() else []  # fmt: skip
    trajectories = []
    for path in sorted((run_dir / "trajectories").glob("*.json.gz")):
        with gzip.open(path, "rt") as fh:
            trajectories.append(json.load(fh))
    return final, records, audit, trajectories


@pytest.mark.parametrize(
    "memory", [["memory=edv", "memory.params.ability_from=labels"], ["memory=judge"], ["memory=router"]]
)
def test_a_concurrent_frozen_phase_writes_what_a_sequential_run_writes(tmp_path, memory):
    seq = _run(tmp_path / "seq", *EDV, *memory, "runtime.concurrent_samples=1")
    par = _run(tmp_path / "par", *EDV, *memory, "runtime.concurrent_samples=4")
    assert seq[0]["sample_concurrency"]["phases"]["eval"] == 1
    assert par[0]["sample_concurrency"]["phases"]["eval"] == 4  # the frozen test phase ran 4 at once
    assert [r["position"] for r in par[1]] == list(range(len(par[1])))  # committed in stream order
    assert par[1] == seq[1]  # same records (usage, scores, memory stats, recalled ids) in the same order
    assert par[2] == seq[2]  # the same audit lines, numbered alike (the Judge's adjudications among them)
    assert par[3] == seq[3]
    assert par[0]["status"] == "complete" and par[0]["counts"] == seq[0]["counts"]


def test_a_concurrent_frozen_phase_replays_a_sequential_runs_cache(tmp_path):
    """Workers' calls, the memory side's among them (the Judge adjudicates at test time), carry the cache keys
    a sequential run gives them: a 4-wide run on the cache of a 1-wide run of the seed asks the model nothing."""
    seq = _run(tmp_path / "seq", *EDV, "memory=judge", "runtime.concurrent_samples=1")
    cache = next((tmp_path / "seq").rglob("llm.sqlite"))
    before = time.time()
    again = run_from_config(
        compose([*EDV, "memory=judge", "runtime.concurrent_samples=4", f"runtime.cache.path={cache}"], tmp_path / "par")
    )
    assert again["sample_concurrency"]["phases"]["eval"] == 4
    total = again["usage"]["total"]
    assert total["calls"] == seq[0]["usage"]["total"]["calls"] > 0
    assert (total["provider_calls"], total["cache_hits"]) == (0, total["calls"])
    run_dir = results_dir_of(again)
    started = [json.loads(line)["started_at"] for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert all(isinstance(t, float) and before <= t <= time.time() for t in started)  # when its worker began it


def test_a_worker_replica_is_its_own_copy_of_the_configured_components(tmp_path):
    from aecg_bench.runner.batch import _state
    from aecg_bench.runner.build import build
    from aecg_bench.runner.config import parse_run_config

    overrides = [*EDV, "memory=reasoningbank", "memory.params.top_k=2", "framework.params.history_window=3"]
    cfg = parse_run_config(compose(overrides, tmp_path))
    _plan, services, _audit = build(cfg)
    worker = concurrent.replica(cfg, services, json.dumps(_state(services)))
    assert type(worker.framework) is type(services.framework) and worker.framework is not services.framework
    assert worker.framework.params == services.framework.params and worker.framework.params.history_window == 3
    assert type(worker.memory) is type(services.memory) and worker.memory is not services.memory
    assert worker.memory.params == services.memory.params and worker.memory.params.top_k == 2
    assert worker.memory.state_dict() == services.memory.state_dict()
    main, own = services.memory.services, worker.memory.services
    assert (own.llm, own.embedder, own.seed) == (main.llm, main.embedder, main.seed) and own.embedder is not None
    assert own.audit is not main.audit
    assert (worker.llm, worker.benchmark, worker.protocol) == (services.llm, services.benchmark, services.protocol)


def test_online_learning_stays_sequential_and_run_json_says_why(tmp_path):
    final = run_from_config(compose(["model=mock", "benchmark=toy", "memory=recorder", "framework=single"], tmp_path))
    said = final["sample_concurrency"]
    assert said["phases"] == {"eval": 1} and "recorder" in said["why"]
    final = run_from_config(
        compose(["model=mock", "benchmark=toy", "memory=no_memory", "framework=agentnet"], tmp_path)
    )
    assert final["sample_concurrency"]["phases"] == {"eval": 1}  # AgentNet adapts across tasks
    assert "adapts" in final["sample_concurrency"]["why"]
    final = run_from_config(compose(["model=mock", "benchmark=toy", "memory=reasoningbank"], tmp_path))
    assert final["sample_concurrency"]["phases"] == {"eval": 1}  # online: memory learns from each sample
    assert "learn" in final["sample_concurrency"]["why"]


def _max_overlap(arrivals: list[float], latency: float) -> int:
    """Most requests a server with this fixed latency held at once, from their arrival times."""
    arrivals = sorted(arrivals)
    return max((sum(1 for b in arrivals if a <= b < a + latency * 0.9) for a in arrivals), default=0)


SERVED = [
    "model=server",
    "framework=single",
    "benchmark=toy",
    "benchmark.params.size=12",
    "benchmark.params.length=1000",
    "benchmark.params.max_steps=2",
    "protocol.max_invalid_actions=10",
    "runtime.cache.mode=off",
]


@pytest.mark.parametrize(("memory", "overlap"), [("no_memory", 4), ("recorder", 1)])
def test_samples_overlap_at_the_server_only_where_memory_is_absent(tmp_path, monkeypatch, memory, overlap):
    latency = 0.15
    with FakeOpenAIServer(lambda m: "move right", latency_s=latency) as server:
        monkeypatch.setenv("AECG_API_BASE", server.base_url)
        monkeypatch.setenv("AECG_SERVER_MODEL", "fake-model")
        final = run_from_config(
            compose([*SERVED, f"memory={memory}", "model.models.served.max_concurrency=4"], tmp_path)
        )
    assert final["status"] == "complete" and final["usage"]["total"]["calls"] == 24
    assert _max_overlap(server.arrivals, latency) == overlap  # the model's max_concurrency, or one at a time


def test_a_workers_error_is_raised_where_its_item_is_committed():
    items = list(range(8))

    def run(worker: object, item: int) -> concurrent.Executed:
        if item == 3:
            raise RuntimeError("sample 3 broke")
        return concurrent.Executed(result=item, meter=None, started=0.0)  # type: ignore[arg-type]

    seen = []
    with pytest.raises(RuntimeError, match="sample 3 broke"):
        for item, done in concurrent.Ahead(items, 3, object, run):  # type: ignore[arg-type]
            seen.append((item, done.result))
    assert seen == [(0, 0), (1, 1), (2, 2)]  # in order; nothing after the failing one is committed


def kill_when(proc: subprocess.Popen, root: Path, ready: Callable[[list[dict]], bool]) -> Path | None:
    """SIGKILL the run's process group once the complete records in its samples.jsonl satisfy `ready`;
    that file, or None if the run ended (or 300 s passed) first."""
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        found = list(root.rglob("samples.jsonl"))
        if found and ready([json.loads(line) for line in found[0].read_text().split("\n")[:-1]]):
            break
        time.sleep(0.02)
    else:
        found = []
    with contextlib.suppress(ProcessLookupError):  # a run that already ended has no group left
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return found[0] if found else None


@pytest.mark.slow  # a CLI run killed with SIGKILL, then resumed
def test_a_concurrent_run_killed_with_sigkill_resumes_to_the_same_records(tmp_path):
    args = [*SERVED, "memory=no_memory", "benchmark.params.size=16", "model.models.served.max_concurrency=4"]
    cli = [sys.executable, "-m", "aecg_bench.run", "runtime.progress=false", "embedder.backend=lexical", *args]
    with FakeOpenAIServer(lambda m: "move right", latency_s=0.3) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO), "AECG_API_BASE": server.base_url, "AECG_SERVER_MODEL": "m"}
        clean = tmp_path / "clean"
        subprocess.run(
            [*cli, f"runtime.results_root={clean}", "runtime.concurrent_samples=1"], env=env, cwd=REPO, check=True
        )  # fmt: skip
        killed = tmp_path / "killed"
        proc = subprocess.Popen([*cli, f"runtime.results_root={killed}"], env=env, cwd=REPO, start_new_session=True)
        samples = kill_when(proc, killed, lambda records: len(records) >= 5)
        assert samples is not None, "the run never wrote five records"
        cut = len(samples.read_text().splitlines())
        assert cut < 16  # killed mid-run
        subprocess.run([*cli, f"runtime.results_root={killed}"], env=env, cwd=REPO, check=True)

    def records(root: Path) -> list[dict]:
        lines = next(root.rglob("samples.jsonl")).read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]

    assert records(killed) == records(clean)  # every item once, in order, as the sequential run wrote it


@pytest.mark.slow  # two CLI runs, one killed with SIGKILL in its frozen phase and resumed
def test_a_frozen_phase_killed_with_sigkill_resumes_to_the_sequential_records(tmp_path):
    """The issue's acceptance on build_then_freeze itself: EDV builds from 4 training tasks, then its 8 test
    tasks run 4 at once; the run is killed while the test phase is under way, resumed (memory restored from
    the snapshot at the end of the build), and ends with the records a sequential run of the seed wrote. The
    LLM cache is off: with it on, the items in flight at the kill are redone from the calls they had cached,
    and their records count those calls as cache hits (the same with a sequential run killed mid-sample)."""
    delays = [f"+model.models.{m}.options.delay_s=0.05" for m in ("mock-solver", "mock-idle", "mock-skeptic")]
    args = [*EDV, "memory=edv", "memory.params.ability_from=labels", "runtime.cache.mode=off", *delays]
    cli = [sys.executable, "-m", "aecg_bench.run", "runtime.progress=false", "embedder.backend=lexical", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    clean = tmp_path / "clean"
    subprocess.run(
        [*cli, f"runtime.results_root={clean}", "runtime.concurrent_samples=1"], env=env, cwd=REPO, check=True
    )
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [*cli, f"runtime.results_root={killed}", "runtime.concurrent_samples=4"], env=env, cwd=REPO, start_new_session=True
    )  # fmt: skip
    samples = kill_when(proc, killed, lambda records: any(r["phase"] == "eval" for r in records))
    assert samples is not None, "the run never reached its test phase before it ended"
    cut = [json.loads(line) for line in samples.read_text().splitlines()]
    assert 4 < len(cut) < 12  # killed in the frozen phase (4 build items, 8 test items)
    subprocess.run([*cli, f"runtime.results_root={killed}", "runtime.concurrent_samples=4"], env=env, cwd=REPO, check=True)  # fmt: skip

    def records(root: Path) -> list[dict]:
        lines = next(root.rglob("samples.jsonl")).read_text().splitlines()
        return sorted(
            ({k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines),
            key=lambda r: r["position"],
        )

    header = json.loads(next(killed.rglob("run.json")).read_text())
    assert header["status"] == "complete" and header["sample_concurrency"]["phases"] == {"build": 1, "eval": 4}
    assert len(header.get("resumes", [])) == 1
    assert records(killed) == records(clean)  # every item once, as the sequential run wrote it


# -- the rules themselves, on stand-in components (fast; the runs above show them end to end) -------------


class _Still(Framework):
    name, version = "still", "0"

    def run(self, task, env, ctx):  # type: ignore[override]
        raise NotImplementedError


class _Adapting(_Still):
    name = "adapting"

    def observe(self, episode) -> None:  # type: ignore[override]
        pass


def _memory(name: str, pure: bool, nothing: bool) -> object:
    kind = type(name, (), {"name": name, "pure_recall": pure, "learns_nothing": nothing})
    return kind()


def _services(framework: Framework, memory: object, *, learn_in_eval: bool = False, limits=(1,)) -> Any:
    models = {f"m{i}": SimpleNamespace(max_concurrency=c) for i, c in enumerate(limits)}
    return SimpleNamespace(
        framework=framework,
        memory=memory,
        protocol=Protocol(learn_in_eval=learn_in_eval),
        llm=SimpleNamespace(models=models),
    )


def _stream(*phases: str) -> list[StreamItem]:
    return [StreamItem(position=i, phase=p, sample=None) for i, p in enumerate(phases)]  # type: ignore[arg-type]


def test_width_is_the_configured_count_else_the_widest_model():
    services = _services(_Still(), _memory("m", True, False), limits=(2, 8, 1))
    assert concurrent.width(services, None) == 8
    assert concurrent.width(services, 1) == 1 and concurrent.width(services, 3) == 3  # configured wins
    assert concurrent.width(_services(_Still(), _memory("m", True, False), limits=()), None) == 1


def test_which_items_may_run_at_once_and_what_run_json_says():
    build_eval = _stream("build", "build", "eval", "eval", "eval")
    frozen = _services(_Still(), _memory("frozen", True, False))
    assert [concurrent.independent(i, frozen) for i in build_eval] == [False, False, True, True, True]
    assert concurrent.describe(build_eval, frozen, 4) == {
        "width": 4,
        "phases": {"build": 1, "eval": 4},
        "why": "phases that learn (online protocol, build) run one sample after another: memory learns from each",
    }
    assert concurrent.describe(build_eval, frozen, 1) == {
        "width": 1,
        "phases": {"build": 1, "eval": 1},
        "why": "one sample at a time: the models allow one call at a time (or runtime.concurrent_samples=1)",
    }
    online = _services(_Still(), _memory("frozen", True, False), learn_in_eval=True)
    assert not any(concurrent.independent(i, online) for i in build_eval)  # online: every item learns
    absent = _services(_Still(), _memory("absent", True, True), learn_in_eval=True)
    assert all(concurrent.independent(i, absent) for i in build_eval)  # a memory that learns nothing
    assert concurrent.describe(build_eval, absent, 3) == {
        "width": 3,
        "phases": {"build": 3, "eval": 3},
        "why": "every phase's samples are independent (memory frozen or absent)",
    }
    impure = _services(_Still(), _memory("impure", False, True))
    assert not any(concurrent.independent(i, impure) for i in build_eval)  # recall may change its state
    assert concurrent.describe(build_eval, impure, 4)["why"] == (
        "sequential: memory 'impure' does not declare that recall leaves its state unchanged"
    )
    adapting = _services(_Adapting(), _memory("absent", True, True))
    assert not any(concurrent.independent(i, adapting) for i in build_eval)
    assert concurrent.describe(build_eval, adapting, 4)["why"] == (
        "sequential: framework 'adapting' adapts across tasks (observe)"
    )
    assert concurrent.describe(build_eval[2:], frozen, 4) == {
        "width": 4,
        "phases": {"eval": 4},
        "why": "every phase's samples are independent (memory frozen or absent)",
    }


def test_segments_are_the_runs_of_consecutive_items_alike():
    frozen = _services(_Still(), _memory("frozen", True, False))
    stream = _stream("build", "build", "eval", "eval", "build", "eval")
    got = [(flag, [i.position for i in group]) for flag, group in concurrent.segments(stream, frozen)]
    assert got == [(False, [0, 1]), (True, [2, 3]), (False, [4]), (True, [5])]
    assert list(concurrent.segments([], frozen)) == []
    assert [(f, len(g)) for f, g in concurrent.segments(_stream("eval"), frozen)] == [(True, 1)]


def test_results_run_ahead_by_at_most_twice_the_width_on_width_daemon_threads():
    started: list[int] = []
    lock = threading.Lock()

    def run(worker: object, item: int) -> concurrent.Executed:
        with lock:
            started.append(item)
        if item == 0:  # the first item is slow: the others run ahead of it as far as the window lets them
            deadline = time.time() + 10
            while len(started) < 6 and time.time() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)  # room for a wider window to show
        return concurrent.Executed(result=item, meter=None, started=0.0)  # type: ignore[arg-type]

    ahead = concurrent.Ahead(list(range(20)), 3, object, run)  # type: ignore[arg-type]
    assert len(ahead.threads) == 3 and all(t.daemon for t in ahead.threads)
    got = iter(ahead)
    item, first = next(got)
    assert (item, first.result) == (0, 0)
    with lock:
        assert sorted(started) == list(range(6))  # 2 x 3 items taken before the first was committed
    assert [(i, done.result) for i, done in got] == [(i, i) for i in range(1, 20)]  # the rest, in order
    for t in ahead.threads:  # a run has a pool per independent segment: none outlives its segment
        t.join(5)
    assert not any(t.is_alive() for t in ahead.threads)
    single = concurrent.Ahead([7], 4, object, run)  # type: ignore[arg-type]
    assert len(single.threads) == 1  # no more threads than items
    single.stop()
