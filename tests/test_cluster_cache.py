"""One cache for many processes: first writer wins, per-process shards merged after a sweep, and a
read_only rerun from the merged cache that needs no provider."""

from __future__ import annotations

import multiprocessing as mp
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
    if shards:
        assert merge_shards(cache)[0] == 4
    replay = config("replay", "runtime.cache.mode=read_only")
    from aecg_bench.run import run_from_config

    final = run_from_config(replay)
    assert final is not None and final["status"] == "complete"
    assert final["eval"]["n"] == 4
