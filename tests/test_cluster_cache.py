"""One cache for many processes: first writer wins, per-run shards merged after a sweep, a read_only
rerun from the merged cache that needs no provider, and replays of sharded runs exactly as each ran."""

from __future__ import annotations

import itertools
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from aecg_bench.llm.cache import ResponseCache, merge_shards, shard_dir

KEYS = [f"k{i}" for i in range(40)]


def test_first_writer_wins_and_later_writers_get_its_answer(tmp_path):
    one = ResponseCache(tmp_path / "c.sqlite")
    two = ResponseCache(tmp_path / "c.sqlite")
    assert one.put("k", "m", {"text": "first"}) == {"text": "first"}
    assert two.put("k", "m", {"text": "second"}) == {"text": "first"}
    assert two.get("k") == {"text": "first"}


def _writer(path: str, shard: str | None, who: int, barrier, out) -> None:  # type: ignore[no-untyped-def]
    cache = ResponseCache(Path(path), "read_write", shard=shard)
    barrier.wait(timeout=60)
    out.put({k: cache.put(k, "m", {"text": f"{k} from {who}"}) for k in KEYS})


def _race(path: Path, shards: bool) -> list[dict]:
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(str(path), f"w{i}" if shards else None, i, barrier, out)) for i in range(4)
    ]
    for p in procs:
        p.start()
    seen = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return seen


def _entries(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    rows = dict(conn.execute("SELECT key, value FROM responses").fetchall())
    conn.close()
    return rows


def test_four_processes_writing_the_same_keys_agree_on_one_answer(tmp_path):
    path = tmp_path / "c.sqlite"
    seen = _race(path, shards=False)
    stored = _entries(path)
    assert sorted(stored) == sorted(KEYS)
    for winners in seen:  # every process continued with the answer that stayed in the cache
        assert {k: v["text"] for k, v in winners.items()} == {k: v.split('"')[3] for k, v in stored.items()}


def test_shards_merge_into_one_cache_with_the_earliest_answer(tmp_path):
    path = tmp_path / "c.sqlite"
    _race(path, shards=True)
    shards = sorted(shard_dir(path).glob("*.sqlite"))
    assert len(shards) == 4 and not path.exists()
    earliest: dict[str, tuple[float, str]] = {}
    for shard in shards:
        for key, value, created in sqlite3.connect(shard).execute("SELECT key, value, created FROM responses"):
            earliest[key] = min(earliest.get(key, (created, value)), (created, value))
    assert merge_shards(path) == (4, len(KEYS))
    assert _entries(path) == {k: v for k, (_, v) in earliest.items()}
    assert merge_shards(path) == (4, 0)  # idempotent


def test_a_sharded_process_reads_the_merged_cache_and_writes_only_its_shard(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put("old", "m", {"text": "merged earlier"})
    cache = ResponseCache(path, shard="job-1")
    assert cache.get("old") == {"text": "merged earlier"}
    cache.put("new", "m", {"text": "fresh"})
    assert cache.get("new") == {"text": "fresh"} and len(cache) == 2
    assert "new" not in _entries(path)
    assert _entries(shard_dir(path) / "job-1.sqlite") == {"new": '{"text": "fresh"}'}
    assert cache.export(tmp_path / "bundle.sqlite") == 2  # the bundle holds both
    from aecg_bench.errors import CacheMissError

    with pytest.raises(CacheMissError, match=r"shards not yet merged\? python -m aecg_bench.llm.cache merge"):
        ResponseCache(path, "read_only").get("new")
    merge_shards(path)
    assert ResponseCache(path, "read_only").get("new") == {"text": "fresh"}


def _run(raw: dict, out) -> None:  # type: ignore[no-untyped-def]
    from aecg_bench.run import run_from_config

    final = run_from_config(raw)
    out.put(final["status"] if final else "failed")


@pytest.mark.parametrize("shards", [False, True])
def test_four_processes_share_a_cache_and_a_read_only_rerun_needs_no_provider(make_config, tmp_path, shards):
    """Four processes run the same configuration (same keys) into their own results against one cache;
    afterwards a read_only rerun into fresh results completes, which it cannot do after a single miss."""
    cache = tmp_path / "shared" / "llm.sqlite"

    def config(root: str, *extra: str) -> dict:
        raw = make_config("benchmark=toy", "benchmark.params.size=4", f"runtime.cache.path={cache}", *extra)
        raw["runtime"]["results_root"] = str(tmp_path / root)
        return raw

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_run, args=(config(f"r{i}", f"runtime.cache.shards={str(shards).lower()}"), out))
        for i in range(4)
    ]
    for p in procs:
        p.start()
    statuses = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert statuses == ["complete"] * 4
    if shards:  # the four runs sit at the same place below their results roots: one run shard
        assert merge_shards(cache)[0] == 1
    replay = config("replay", "runtime.cache.mode=read_only")
    from aecg_bench.run import run_from_config

    final = run_from_config(replay)
    assert final is not None and final["status"] == "complete"
    assert final["eval"]["n"] == 4


class Varying:
    """Answers the same prompt differently each time (a sampled model at temperature > 0), and differently
    in each process: as a server that answers at random, or (as a mock policy) without one."""

    def __init__(self) -> None:
        self.counters: dict[int, itertools.count] = {}

    def __call__(self, messages: list[dict]) -> str:
        n = next(self.counters.setdefault(os.getpid(), itertools.count(os.getpid())))
        return ("move left", "move right", "stop")[n % 3]

    def policy(self, request, spec) -> str:  # type: ignore[no-untyped-def]
        return self(request.messages)


def _replayable(root: Path) -> tuple[list[tuple], dict]:
    """What a replay must reproduce: every record's outcome, and the memory the run ended with."""
    from aecg_bench.runner.records import RunDir

    (run,) = {p.parent for p in root.rglob("run.json")}
    rd = RunDir(run)
    keys = ("position", "attempt", "status", "success", "value", "steps", "invalid_actions", "recalled_memory_ids")
    records = [tuple(json.dumps(r[k]) for k in keys) for r in rd.records()]
    return records, rd.latest_snapshot(len(records)).state


@pytest.mark.parametrize(
    "model",
    ["mock", pytest.param("server", marks=pytest.mark.slow)],  # server: litellm in 4 processes, ~1 min
)
def test_sharded_runs_replay_exactly_as_each_ran_or_refuse_in_one_line(make_config, tmp_path, model):
    """Four concurrent runs whose model answers vary (a mock policy, or a loopback server through litellm),
    each writing shards, then merged: a read_only replay of each run reproduces its records and memory
    exactly, and without its shard a replay refuses in one line instead of replaying another run's answers."""
    from contextlib import nullcontext

    from aecg_bench.errors import CacheMissError
    from aecg_bench.llm.litellm_setup import import_litellm
    from aecg_bench.llm.mock import register_mock_policy
    from aecg_bench.run import run_from_config
    from aecg_bench.testing.fake_server import FakeOpenAIServer

    cache = tmp_path / "shared" / "llm.sqlite"
    varying = Varying()
    register_mock_policy("cluster_cache_varying", varying.policy)

    def config(root: str, name: str, url: str, *extra: str) -> dict:
        served = ["model=server", f"model.models.served.api_base={url}", "model.label=fake"]
        raw = make_config(
            "benchmark=toy",
            "benchmark.params.size=4",
            "protocol.max_steps=3",
            "memory=recorder",
            *(served if model == "server" else ["model.models.mock.options.policy=cluster_cache_varying"]),
            f"runtime.cache.path={cache}",
            f"experiment_name={name}",
            *extra,
        )
        raw["runtime"]["results_root"] = str(tmp_path / root / name)
        return raw

    if model == "server":
        import_litellm()  # once, before the fork, not once per process
    names = ["a", "b", "c", "d"]
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    with FakeOpenAIServer(varying) if model == "server" else nullcontext() as server:
        url = server.base_url if server else ""
        procs = [
            ctx.Process(target=_run, args=(config("runs", n, url, "runtime.cache.shards=true"), out)) for n in names
        ]
        for p in procs:
            p.start()
        statuses = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    assert "failed" not in statuses
    ran = {n: _replayable(tmp_path / "runs" / n) for n in names}
    assert len({json.dumps(r) for r in ran.values()}) > 1, "the runs saw different answers (the case under test)"
    merge_shards(cache)
    for n in names:  # no server: every answer comes from the cache
        final = run_from_config(config("replay", n, url, "runtime.cache.mode=read_only"))
        assert final is not None and final["status"] == "complete"
        assert _replayable(tmp_path / "replay" / n) == ran[n], f"run {n} replayed differently"
    shutil.rmtree(shard_dir(cache))
    refused = 0
    for n in names:
        try:
            run_from_config(config("replay-without-shards", n, url, "runtime.cache.mode=read_only"))
        except CacheMissError as exc:
            refused += 1
            assert "\n" not in str(exc) and "replay refused" in str(exc) and "restore the shard" in str(exc)
            continue
        assert _replayable(tmp_path / "replay-without-shards" / n) == ran[n]
    assert refused >= 1, "runs whose answers were not kept by the merge cannot replay from it alone"


def test_a_merge_never_replaces_an_answer_already_in_the_main_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path).put("k", "m", {"text": "read by a run before"})
    late = ResponseCache(path, shard="run-2")
    late._conn().execute("INSERT INTO responses VALUES ('k', 'm', '{\"text\": \"older shard\"}', 0)")
    assert merge_shards(path) == (1, 0)
    assert ResponseCache(path, "read_only").get("k") == {"text": "read by a run before"}
    assert ResponseCache(path, "read_only", shard="run-2").get("k") == {"text": "older shard"}, "its run's own"
