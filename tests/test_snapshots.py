"""Memory snapshots of long streams (issue 36; aecg_bench/runner/snapshots.py): compact JSON, gzipped when
large, read back either way; only the newest few and those at phase ends kept; a large state snapshotted
less often; and resume still exact, after a kill -9 during a snapshot write too."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

import aecg_bench.runner.records as records
from aecg_bench.analysis.edv import latest_memory_state
from aecg_bench.mechanisms.protocol import latest_state
from aecg_bench.results_format import latest_snapshot_state, snapshot_files
from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import Redactor, results_dir_of
from aecg_bench.runner.records import RunDir
from aecg_bench.runner.snapshots import Cadence, boundary_seqs

RUN = ["benchmark=toy", "benchmark.params.size=12", "memory=recorder", "protocol.snapshot_every=3"]
STABLE = ("position", "attempt", "sample_id", "seed", "status", "success", "recalled_memory_ids", "memory_stats")


def _state(n: int) -> dict:
    return {"memory": {"items": [f"item {i}" for i in range(n)]}, "framework": {}}


def _names(rd: RunDir) -> list[str]:
    return [p.name for _, p in snapshot_files(rd.memory_dir)]


def _contents(rd: RunDir) -> dict[str, dict]:
    return {p.name: rd.read_snapshot(p).state | {"seq": seq} for seq, p in snapshot_files(rd.memory_dir)}


def _other(rd: RunDir, experiment: str) -> RunDir:
    """The same run under another experiment name."""
    return RunDir(rd.path.parents[5] / experiment / rd.path.relative_to(rd.path.parents[4]))


def _stable(rd: RunDir) -> list[dict]:
    return [{k: r[k] for k in STABLE} for r in rd.records()]


# -- the format ----------------------------------------------------------------------------------------


def test_a_small_snapshot_is_compact_json_and_a_large_one_gzipped_and_both_read_back(tmp_path, monkeypatch):
    rd = RunDir(tmp_path)
    rd.memory_dir.mkdir()
    small = rd.write_snapshot(3, 5, _state(2))
    text = small.path.read_text()
    assert small.path.name == "snapshot-000003.json" and "\n" not in text and ", " not in text
    assert (small.records_seq, small.audit_seq, small.state) == (3, 5, _state(2))
    assert text.index('"audit_seq"') < text.index('"records_seq"') < text.index('"state"'), "keys sorted"
    assert json.loads(text) == {"records_seq": 3, "audit_seq": 5, "state": _state(2)}
    assert small.nbytes == len(text.encode())
    monkeypatch.setattr(records, "GZIP_OVER", 100)
    big = rd.write_snapshot(6, 9, _state(50))
    assert big.path.name == "snapshot-000006.json.gz"
    raw = gzip.decompress(big.path.read_bytes())
    # level 1 and no time stamp: the same state gives the same bytes
    assert big.path.read_bytes() == gzip.compress(raw, compresslevel=1, mtime=0)
    assert big.nbytes == len(raw) > 100 and json.loads(raw)["state"] == _state(50)
    back = rd.read_snapshot(big.path)
    assert (back.records_seq, back.audit_seq, back.state, back.nbytes) == (6, 9, _state(50), big.nbytes)
    monkeypatch.setattr(records, "GZIP_OVER", big.nbytes)  # not over: plain
    again = rd.write_snapshot(6, 9, _state(50))  # the same point written again, now small: one file for it
    assert _names(rd) == ["snapshot-000003.json", "snapshot-000006.json"] and again.nbytes == big.nbytes
    # every reader of snapshots takes the newest, plain or gzipped
    monkeypatch.setattr(records, "GZIP_OVER", 100)
    rd.write_snapshot(9, 9, _state(60))
    assert latest_snapshot_state(tmp_path) == _state(60) == latest_state(tmp_path)
    assert latest_memory_state(tmp_path) == _state(60)["memory"]
    assert rd.latest_snapshot(9).state == _state(60) and rd.latest_snapshot(8).state == _state(50)


def test_temp_and_set_aside_files_are_no_snapshots_and_a_truncated_gzip_is_damaged(tmp_path, monkeypatch):
    rd = RunDir(tmp_path)
    rd.memory_dir.mkdir()
    monkeypatch.setattr(records, "GZIP_OVER", 10)
    snap = rd.write_snapshot(4, 1, _state(30))
    for name in ("snapshot-000008.json.gz.tmp", "snapshot-000009.json.damaged", "snapshot-x.json", "notes.json"):
        (rd.memory_dir / name).write_text("{}")
    assert _names(rd) == ["snapshot-000004.json.gz"] and latest_snapshot_state(tmp_path) == _state(30)
    snap.path.write_bytes(snap.path.read_bytes()[:-20])
    with pytest.raises(records.RunStateError, match=r"snapshot-000004\.json\.gz is damaged \(EOFError"):
        rd.read_snapshot(snap.path)
    snap.path.write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(records.RunStateError, match="is damaged"):
        rd.read_snapshot(snap.path)
    assert rd.latest_snapshot(10) is None


def test_pruning_keeps_the_newest_and_the_pinned(tmp_path, monkeypatch):
    rd = RunDir(tmp_path)
    rd.memory_dir.mkdir()
    for seq in (2, 4, 5, 6, 8, 10):
        rd.write_snapshot(seq, 0, _state(1))
    gone = rd.prune_snapshots(3, pinned={4, 99})
    assert [p.name for p in gone] == ["snapshot-000002.json", "snapshot-000005.json"]
    assert _names(rd) == [
        "snapshot-000004.json",
        "snapshot-000006.json",
        "snapshot-000008.json",
        "snapshot-000010.json",
    ]
    assert rd.prune_snapshots(1, pinned=set()) and _names(rd) == ["snapshot-000010.json"]
    rd.write_snapshot(12, 0, _state(1))
    assert rd.prune_snapshots(0, pinned={10}) and _names(rd) == ["snapshot-000010.json"], "keep 0: the pinned only"
    listed = records.snapshot_files(rd.memory_dir)
    gone = rd.memory_dir / "snapshot-000011.json"  # listed, then deleted by someone else before the prune
    monkeypatch.setattr(records, "snapshot_files", lambda d: [(11, gone), *listed])
    assert rd.prune_snapshots(1, pinned=set()) == [gone], "a file already gone is no error"


# -- secrets -------------------------------------------------------------------------------------------


def test_no_secret_no_redaction_pass_and_a_secret_is_masked(monkeypatch):
    for name in [k for k in os.environ if "KEY" in k or "TOKEN" in k or "SECRET" in k]:
        monkeypatch.delenv(name)
    state = {"a": ["x" * 10, {"b": "y"}]}
    plain = Redactor()
    assert plain.secrets == [] and plain.deep(state) is state
    assert plain.dumps(state) == json.dumps(state, sort_keys=True, separators=(",", ":"))
    assert plain.dumps({"b": "é", "a": [1, 2]}) == '{"a":[1,2],"b":"é"}', "sorted, compact, not escaped"
    monkeypatch.setenv("MY_API_KEY", 'k"ey\\-é-123')
    masked = Redactor()
    text = masked.dumps({"note": 'the key is k"ey\\-é-1234', "other": "clean é", "list": [1, 2]})
    assert text == '{"list":[1,2],"note":"the key is ***4","other":"clean é"}', "sorted, compact, not escaped"
    assert masked.deep({"a": ['k"ey\\-é-123!']}) == {"a": ["***!"]}
    assert masked.dumps(state) == plain.dumps(state)
    # only the whole secret counts: a part of it is no hit
    secret = 'k"ey\\-é-123'
    assert masked.found_in(json.dumps({"x": "<" + secret + ">"}, ensure_ascii=False))
    for part in (secret[1:], secret[:-1]):
        assert not masked.found_in(json.dumps({"x": part}, ensure_ascii=False)), part


def _strings(obj: object) -> list[str]:
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _strings(v)]
    if isinstance(obj, list):
        return [t for v in obj for t in _strings(v)]
    return [obj] if isinstance(obj, str) else []


@given(
    secret=st.text(min_size=6, max_size=12),
    before=st.text(max_size=5),
    after=st.text(max_size=5),
    nest=st.integers(0, 2),
)
def test_a_secret_anywhere_in_the_text_is_found_and_masked(secret, before, after, nest):
    redactor = Redactor.none()
    redactor.secrets = [secret]
    obj: object = before + secret + after
    for _ in range(nest):
        obj = {"k": [obj, "plain"]}
    assert redactor.found_in(json.dumps(obj, ensure_ascii=False))
    masked = json.loads(redactor.dumps(obj))
    assert masked == redactor._deep(obj) and all(secret not in t.replace("***", "\0") for t in _strings(masked))


# -- the cadence ---------------------------------------------------------------------------------------


@given(every=st.integers(1, 20), budget=st.integers(0, 5000), last=st.integers(0, 200), size=st.integers(0, 10**6))
def test_the_cadence_falls_on_multiples_and_waits_for_size_over_budget(every, budget, last, size):
    cadence = Cadence(every, budget)
    cadence.taken(last, size)
    wait = -(-size // budget) if budget else 0
    first = next(n for n in range(last + 1, last + wait + every + 2) if cadence.due(n))
    assert first % every == 0 and wait <= first - last < max(wait, 1) + every
    if wait <= 1:  # a small state keeps the plain cadence
        assert first == (last // every + 1) * every
    assert all(cadence.due(n) for n in range(first, first + 3 * every, every))


def test_boundary_seqs_follow_the_records_in_file_order():
    # positions 0..5, the phase ends at position 2 and 5; position 1 was an infra error redone at the end
    assert boundary_seqs([0, 1, 2, 3, 4, 5, 1], {2, 5}) == {3, 6}


# -- runs ----------------------------------------------------------------------------------------------


def test_a_long_stream_keeps_few_snapshots_and_resumes_exactly(make_config, monkeypatch):
    args = [*RUN, "benchmark.params.size=30", "protocol.snapshot_every=2", "runtime.snapshot_keep=3"]
    clean = RunDir(results_dir_of(run_from_config(make_config(*args, "experiment_name=clean"))))
    assert _names(clean) == ["snapshot-000026.json", "snapshot-000028.json", "snapshot-000030.json"]
    import aecg_bench.runner.batch as batch

    real, calls = batch._run_item, {"n": 0}

    def crash(*a, **kw):
        if calls["n"] == 17:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", crash)
    with pytest.raises(KeyboardInterrupt):
        run_from_config(make_config(*args, "experiment_name=cut"))
    monkeypatch.setattr(batch, "_run_item", real)
    cut = _other(clean, "cut")
    assert _names(cut) == ["snapshot-000012.json", "snapshot-000014.json", "snapshot-000016.json"]
    run_from_config(make_config(*args, "experiment_name=cut"))
    assert _stable(cut) == _stable(clean) and _contents(cut) == _contents(clean)
    assert cut.audit_file.read_bytes() == clean.audit_file.read_bytes()


def test_a_large_state_is_snapshotted_less_often_and_resume_takes_the_same_snapshots(make_config, monkeypatch):
    """With a budget of 150 bytes a record, the recorder's state (a few hundred bytes per record) spaces
    its snapshots out; a run cut in the middle and resumed writes the same ones."""
    args = [*RUN, "benchmark.params.size=40", "protocol.snapshot_every=2", "runtime.snapshot_bytes_per_record=150"]
    args += ["runtime.snapshot_keep=40"]
    clean = RunDir(results_dir_of(run_from_config(make_config(*args, "experiment_name=clean"))))
    seqs = [seq for seq, _ in snapshot_files(clean.memory_dir)]
    gaps = [b - a for a, b in itertools.pairwise(seqs)]
    assert seqs[0] == 2 and seqs[-1] == 40 and all(seq % 2 == 0 for seq in seqs)
    assert gaps[-2] > gaps[0] >= 2, f"the gaps widen as the state grows: {seqs}"
    for a, b in itertools.pairwise(seqs[:-1]):  # the last one is the stream's end
        size = clean.read_snapshot(snapshot_files(clean.memory_dir)[seqs.index(a)][1]).nbytes
        assert b - a >= size / 150 and b - a < size / 150 + 2
    import aecg_bench.runner.batch as batch

    real, calls = batch._run_item, {"n": 0}

    def crash(*a, **kw):
        if calls["n"] == 25:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", crash)
    with pytest.raises(KeyboardInterrupt):
        run_from_config(make_config(*args, "experiment_name=cut"))
    monkeypatch.setattr(batch, "_run_item", real)
    run_from_config(make_config(*args, "experiment_name=cut"))
    cut = _other(clean, "cut")
    assert _stable(cut) == _stable(clean) and _contents(cut) == _contents(clean)


# -- kill -9 during a snapshot write -------------------------------------------------------------------

# Runs the CLI with every snapshot gzipped and dies by SIGKILL at the k-th snapshot write: "temp" half-way
# through writing its temp file, "renamed" once it is in place but before older snapshots are pruned.
CHILD = """
import os, signal, sys
import aecg_bench.runner.records as records
records.GZIP_OVER = 0
kill_at, where = int(sys.argv[1]), sys.argv[2]
real, n = records.write_bytes_atomic, 0
def write(path, data):
    global n
    n += 1
    if n == kill_at and where == "temp":
        path.with_name(path.name + ".tmp").write_bytes(data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data)
    if n == kill_at and where == "renamed":
        os.kill(os.getpid(), signal.SIGKILL)
records.write_bytes_atomic = write
sys.argv = ["aecg_bench.run", *sys.argv[3:]]
from aecg_bench.run import main
main()
"""


@pytest.mark.slow  # four CLI processes
@pytest.mark.timeout(300)
@pytest.mark.parametrize("where", ["temp", "renamed"])
def test_kill_9_during_a_snapshot_write_then_rerun_equals_an_uninterrupted_run(make_config, monkeypatch, where):
    monkeypatch.setattr(records, "GZIP_OVER", 0)
    args = [*RUN, "runtime.snapshot_keep=2", "+model.models.mock.options.error_rate=0.25"]
    clean = RunDir(results_dir_of(run_from_config(make_config(*args, "experiment_name=clean"))))
    root = clean.path.parents[5]
    cli = [*args, f"runtime.results_root={root}", "experiment_name=killed", "runtime.progress=false"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = subprocess.run([sys.executable, "-c", CHILD, "3", where, *cli], cwd=REPO, env=env, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    rd = _other(clean, "killed")
    assert len(rd.records()) == 9, "the 9th record is flushed before its snapshot"
    if where == "temp":
        assert [p.name for p in rd.memory_dir.glob("*.tmp")] == ["snapshot-000009.json.gz.tmp"]
        assert _names(rd) == ["snapshot-000003.json.gz", "snapshot-000006.json.gz"]
    else:
        assert _names(rd) == ["snapshot-000003.json.gz", "snapshot-000006.json.gz", "snapshot-000009.json.gz"]
    resumed = subprocess.run([sys.executable, "-c", CHILD, "0", "-", *cli], cwd=REPO, env=env, capture_output=True)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert json.loads(rd.run_json.read_text())["status"] == "complete"
    assert sorted(r["position"] for r in rd.records()) == list(range(12)), "every sample exactly once"
    assert _stable(rd) == _stable(clean)
    assert rd.audit_file.read_bytes() == clean.audit_file.read_bytes()
    assert not list(rd.memory_dir.glob("*.tmp"))
    # the newest two; after a kill in the temp file the resumed run never wrote 9, so 6 is still among them
    want = ["snapshot-000006.json.gz", "snapshot-000012.json.gz"] if where == "temp" else _names(clean)
    assert _names(rd) == want and _names(clean) == ["snapshot-000009.json.gz", "snapshot-000012.json.gz"]
    common = sorted(set(_names(rd)) & set(_names(clean)))
    assert [_contents(rd)[n] for n in common] == [_contents(clean)[n] for n in common] and common
    assert rd.latest_snapshot(12).state == clean.latest_snapshot(12).state


# -- group commit of records (runtime.fsync_interval_s) -------------------------------------------------


@pytest.mark.parametrize(("interval", "fsyncs"), [(0.0, 5), (3600.0, 1)])
def test_records_are_fsynced_each_or_once_per_interval_and_at_the_end(tmp_path, monkeypatch, interval, fsyncs):
    import aecg_bench.jsonl as jsonl

    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(jsonl.os, "fsync", lambda fd: calls.append(fd) or real(fd))
    monkeypatch.setattr(records.time, "monotonic", lambda: 1000.0)  # a coarse clock: interval 0 still syncs each
    rd = RunDir(tmp_path, fsync_interval_s=interval)
    for i in range(5):
        rd.append_record({"position": i, "attempt": 1, "status": "ok"})
    assert len(calls) == fsyncs and [r["position"] for r in rd.records()] == list(range(5))
    rd.sync_records()  # the end of the run: what the group commit left is pushed too
    assert len(calls) == (fsyncs if interval == 0 else 2)
    rd.sync_records()
    assert len(calls) == (fsyncs if interval == 0 else 2), "nothing left to push"
    assert RunDir(tmp_path, fsync=False).records() == rd.records()


def test_a_group_committed_run_syncs_its_records_before_its_final_status(make_config, monkeypatch):
    order: list[str] = []
    real_sync, real_final = RunDir.sync_records, RunDir.write_final_header
    monkeypatch.setattr(RunDir, "sync_records", lambda self: order.append(f"sync {self._unsynced}") or real_sync(self))
    monkeypatch.setattr(RunDir, "write_final_header", lambda self, h: order.append("final") or real_final(self, h))
    final = run_from_config(make_config(*RUN, "runtime.fsync=true", "runtime.fsync_interval_s=3600"))
    assert final["status"] == "complete" and len(RunDir(results_dir_of(final)).records()) == 12
    assert order[:2] == ["final", "sync True"], "11 records were waiting for their fsync"


def test_phase_and_epoch_ends_are_kept_whatever_the_newest(make_config):
    args = ["benchmark=toy", "benchmark.params.train_size=6", "benchmark.params.size=4", "memory=recorder"]
    args += ["protocol.mode=build_then_freeze", "protocol.build_epochs=2", "protocol.snapshot_every=5"]
    rd = RunDir(results_dir_of(run_from_config(make_config(*args, "runtime.snapshot_keep=1"))))
    assert [r["phase"] for r in rd.records()] == ["build"] * 12 + ["eval"] * 4
    # build epochs end at 6 and 12 records; the stream at 16; 5, 10 and 15 were the cadence's, pruned
    assert [seq for seq, _ in snapshot_files(rd.memory_dir)] == [6, 12, 16]
    assert rd.read_snapshot(snapshot_files(rd.memory_dir)[0][1]).state["memory"]["items"]
