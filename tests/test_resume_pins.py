"""Fast pins of resume correctness (issue 17, campaign `runner_resume`): a run stopped at item k and rerun
equals an uninterrupted one (records, memory and framework state, audit log, snapshots); the newest usable
snapshot is restored and exactly the records after it are replayed; damaged snapshots, a torn last record
and infra errors are handled as aecg_bench/runner/records.py and batch.py document.

Every run here is the toy benchmark with the mock model, AgentNet (cross-task framework state) and the
recording memory, 10 items: well under a second each.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import pytest

import aecg_bench.runner.batch as batch
from aecg_bench.errors import RunStateError
from aecg_bench.run import run_from_config
from aecg_bench.runner.execute import ItemResult
from aecg_bench.runner.identity import derive_seed, results_dir, results_dir_of
from aecg_bench.runner.records import RunDir, done_positions
from aecg_bench.types import Status

N = 10
RUN = (
    "benchmark=toy",
    f"benchmark.params.size={N}",
    "framework=agentnet",
    "memory=recorder",
    "protocol.maintain_every=4",
    "protocol.snapshot_every=3",
)
STABLE = (
    "position",
    "attempt",
    "sample_id",
    "phase",
    "epoch",
    "seed",
    "status",
    "success",
    "value",
    "steps",
    "recalled_memory_ids",
    "memory_stats",
    "decisions",
    "maintain_round",
)


def _stable(records: list[dict]) -> list[dict]:
    return [{k: r[k] for k in STABLE} for r in records]


def _snapshots(rd: RunDir) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(rd.memory_dir.glob("snapshot-*.json"))}


def _audit(rd: RunDir) -> list[dict]:
    return [json.loads(line) for line in rd.audit_file.read_text().splitlines()]


def _header(rd: RunDir) -> dict:
    return json.loads(rd.run_json.read_text())


@pytest.fixture
def clean(make_config) -> RunDir:
    return RunDir(results_dir_of(run_from_config(make_config(*RUN, "experiment_name=clean"))))


llm_seeds: list[tuple[int, int, str]] = []  # (position, seed, scope) of the memory's LLM view at each replay


@pytest.fixture
def replayed(monkeypatch) -> list[int]:
    """Positions whose memory-side effect resume replays (batch.apply_item is only called for replay)."""
    seen: list[int] = []
    real = batch.apply_item
    llm_seeds.clear()

    def spy(memory, framework, item, rollout, protocol):
        seen.append(item.position)
        llm_seeds.append((item.position, memory.services.llm.seed, memory.services.llm.scope))
        return real(memory, framework, item, rollout, protocol)

    monkeypatch.setattr(batch, "apply_item", spy)
    return seen


def _dir(cfg: dict) -> RunDir:
    return RunDir(
        results_dir(
            Path(cfg["runtime"]["results_root"]),
            experiment=cfg["experiment_name"],
            benchmark="toy",
            framework="agentnet",
            memory="recorder",
            model="mock",
            seed=cfg["seed"],
        )
    )


def _crash_at(monkeypatch, cfg: dict, k: int) -> RunDir:
    """Run `cfg`; the item at position k raises (a bug in the harness), so k records are flushed."""
    real = batch.execute_item

    def crashing(services, item, seed, llm):
        if item.position == 0:  # a kill -9 now would leave this header
            headers.append(_dir(cfg).read_header())
        if item.position == k:
            raise RuntimeError("injected crash")
        return real(services, item, seed, llm)

    headers: list[dict | None] = []
    monkeypatch.setattr(batch, "execute_item", crashing)
    with pytest.raises(RuntimeError, match="injected crash"):
        run_from_config(cfg)
    if k > 0:
        (header,) = headers
        assert header is not None and header["identity"] == _dir(cfg).read_header()["identity"]
        assert header["status"] == "running" and header["started_at"] > 0
    monkeypatch.setattr(batch, "execute_item", real)
    rd = _dir(cfg)
    assert len(rd.records()) == k
    return rd


def _assert_equal_runs(rd: RunDir, clean: RunDir) -> None:
    assert _stable(rd.records()) == _stable(clean.records())
    got_snaps, want_snaps = _snapshots(rd), _snapshots(clean)
    assert {"snapshot-000009.json", "snapshot-000010.json"} <= set(got_snaps), "the cadence goes on counting"
    assert got_snaps == {name: want_snaps[name] for name in got_snaps}, "audit sequence, memory, framework"
    assert _audit(rd) == _audit(clean)
    assert [e["seq"] for e in _audit(rd)] == list(range(1, len(_audit(rd)) + 1)), "numbered from 1, no gap"
    got, want = _header(rd), _header(clean)
    assert got["status"] == "complete"
    assert (got["counts"], got["eval"]) == (want["counts"], want["eval"])


@pytest.mark.parametrize(("k", "after_snapshot"), [(7, [6]), (4, [3]), (6, []), (2, [0, 1])])
def test_a_crash_at_item_k_then_a_rerun_equals_an_uninterrupted_run(
    make_config, monkeypatch, clean, replayed, k, after_snapshot
):
    cfg = make_config(*RUN, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, k)
    started = _header(rd)["started_at"]
    assert _header(rd)["status"] == "failed" and _header(rd)["error"] == "RuntimeError: injected crash"

    during: list[dict] = []  # run.json while the first resumed item runs: what a kill -9 then would leave
    real = batch.execute_item

    def peek(services, item, seed, llm):
        during.append(rd.read_header())
        return real(services, item, seed, llm)

    monkeypatch.setattr(batch, "execute_item", peek)
    assert run_from_config(cfg)["status"] == "complete"
    assert during[0]["status"] == "running" and "error" not in during[0]
    assert [r["found"] for r in during[0]["resumes"]] == ["failed"]
    assert started <= during[0]["resumes"][0]["at"] <= _header(rd)["finished_at"]
    # snapshots every 3 records: the newest one at or before k is restored, the records after it replayed
    assert replayed == after_snapshot
    _assert_equal_runs(rd, clean)
    assert _snapshots(rd) == _snapshots(clean)
    header = _header(rd)
    assert "error" not in header and header["started_at"] == started
    (resume,) = header["resumes"]
    assert resume["found"] == "failed" and resume["done"] == k and "git_commit" in resume
    text = (rd.path / "run.log").read_text()
    assert f"aecg_bench.run: run {rd.path}: {N} items, {k} done, {N - k} to run\n" in text
    assert f"aecg_bench.run: resuming {rd.path}: found it failed, {k} of {N} items done\n" in text
    if after_snapshot:
        snap = f"snapshot-{3 * (k // 3):06d}.json" if k >= 3 else "none"
        assert (
            f"aecg_bench.run: replayed the state-changing part of {len(after_snapshot)} records after snapshot {snap}\n"
            in text
        )
    else:
        assert "replayed the state-changing part" not in text
    assert "re-sampled" not in text, "the cache is on"
    seeds = {r["position"]: r["seed"] for r in rd.records()}
    assert llm_seeds == [(p, seeds[p], "memory") for p in after_snapshot], "replayed memory calls hit the cache"


def test_without_snapshots_every_record_is_replayed_from_the_start(make_config, monkeypatch, clean, replayed):
    cfg = make_config(*RUN, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, 7)
    for snap in rd.memory_dir.glob("snapshot-*.json"):
        snap.unlink()
    run_from_config(cfg)
    assert replayed == list(range(7))
    _assert_equal_runs(rd, clean)


def test_a_snapshot_beyond_the_surviving_records_is_not_used(make_config, monkeypatch, clean, replayed):
    """A snapshot is written after its record; one covering more records than exist is ignored."""
    cfg = make_config(*RUN, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, 7)
    ahead = rd.memory_dir / "snapshot-000008.json"
    shutil.copy(clean.memory_dir / "snapshot-000009.json", ahead)  # a later state, claiming 8 records
    json_ahead = ahead.read_bytes()
    run_from_config(cfg)
    assert replayed == [6]
    assert ahead.read_bytes() == json_ahead, "left alone, not set aside"
    ahead.unlink()
    _assert_equal_runs(rd, clean)


@pytest.mark.parametrize("damage", ["truncated", "wrong_shape", "bad_framework"])
def test_a_damaged_newest_snapshot_is_set_aside_and_the_previous_one_used(
    make_config, monkeypatch, clean, replayed, damage
):
    cfg = make_config(*RUN, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, 7)
    newest = rd.memory_dir / "snapshot-000006.json"
    good = json.loads(newest.read_text())
    if damage == "truncated":
        newest.write_bytes(newest.read_bytes()[:40])
    elif damage == "wrong_shape":
        newest.write_text(json.dumps({"records_seq": 6, "audit_seq": 2, "state": {"memory": []}}))
    else:  # the memory half loads, the framework half does not: the memory must be undone
        good["state"]["framework"] = {"abilities": 3}
        newest.write_text(json.dumps(good))
        (rd.memory_dir / "snapshot-000003.json").unlink()  # fall back to the start, not to another snapshot
    damaged = newest.read_bytes()
    run_from_config(cfg)
    assert replayed == (list(range(7)) if damage == "bad_framework" else [3, 4, 5, 6])
    assert (rd.memory_dir / "snapshot-000006.json.damaged").read_bytes() == damaged
    text = (rd.path / "run.log").read_text()
    assert f"WARNING aecg_bench.run: {newest} cannot be loaded (" in text
    assert "); moved to snapshot-000006.json.damaged, falling back\n" in text
    if damage == "wrong_shape":
        assert "(ValueError: state lacks memory/framework)" in text
    detail = text.split(" cannot be loaded (", 1)[1].split("); moved to ", 1)[0]
    if damage != "bad_framework":  # the reader's message, cut to at most 200 characters for the log line
        shutil.copy(rd.memory_dir / "snapshot-000006.json.damaged", newest)
        with pytest.raises(RunStateError) as info:
            rd.read_snapshot(newest)
        full = str(info.value)
        assert detail == (full if len(full) <= 200 else full[:197] + "...")
        newest.unlink()
    _assert_equal_runs(rd, clean)


def test_a_torn_last_record_is_dropped_and_its_sample_run_again(make_config, clean, replayed):
    """A kill while a record was being written leaves half a line: it is not a record (records.py)."""
    cfg = make_config(*RUN, "experiment_name=torn")
    rd = RunDir(results_dir_of(run_from_config(cfg)))
    data = rd.samples_file.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    rd.samples_file.write_bytes(data[: last + 25])
    assert run_from_config(cfg)["status"] == "complete"
    assert replayed == [], "snapshot-000009 (not -000010, which covers the lost record) is restored"
    assert rd.samples_file.read_bytes()[:last] == data[:last]
    _assert_equal_runs(rd, clean)
    assert _header(rd)["resumes"][-1]["done"] == N - 1


def test_a_garbled_middle_record_is_named_not_guessed_around(make_config):
    cfg = make_config(*RUN)
    rd = RunDir(results_dir_of(run_from_config(cfg)))
    lines = rd.samples_file.read_bytes().split(b"\n")
    lines[2] = b'{"position": 2, "attem'
    rd.samples_file.write_bytes(b"\n".join(lines))
    with pytest.raises(RunStateError) as info:
        rd.records()
    assert str(info.value) == (
        f"{rd.samples_file}: line 3 is damaged (not a JSON record); restore the file from a backup, or delete that "
        "line and memory/snapshot-*.json to rerun its sample (memory is rebuilt by replay)"
    )
    lines[2] = json.dumps({"position": 2, "attempt": 1}).encode()
    rd.samples_file.write_bytes(b"\n".join(lines))
    with pytest.raises(RunStateError) as info:
        rd.records()
    assert str(info.value) == (
        f"{rd.samples_file}: record 3 lacks position/attempt/status; restore the file from a backup, or delete "
        "that line and memory/snapshot-*.json to rerun its sample"
    )


def test_an_infra_error_is_redone_not_replayed(make_config, monkeypatch, clean, replayed):
    cfg = make_config(*RUN, "experiment_name=infra")
    real = batch.execute_item
    failed = {"n": 0}

    def flaky(services, item, seed, llm):
        if item.position == 2 and not failed["n"]:
            failed["n"] += 1
            return ItemResult(Status.INFRA_ERROR, [], None, "injected outage", False, 0.0)
        return real(services, item, seed, llm)

    monkeypatch.setattr(batch, "execute_item", flaky)
    first = run_from_config(cfg)
    assert first["status"] == "incomplete" and first["counts"]["infra_error"] == 1
    rd = _dir(cfg)
    for snap in rd.memory_dir.glob("snapshot-*.json"):
        snap.unlink()  # replay everything: the infra-error record must be skipped
    assert done_positions(rd.records()) == set(range(N)) - {2}
    final = run_from_config(cfg)
    assert replayed == [p for p in range(N) if p != 2]
    assert final["status"] == "complete" and final["counts"]["recorded"] == N
    records = rd.records()
    redo = [r for r in records if r["position"] == 2]
    assert [(r["attempt"], r["status"]) for r in redo] == [(1, "infra_error"), (2, "ok")]
    assert redo[0]["seed"] == redo[1]["seed"], "a redo keeps the item's seed"
    assert len(records) == N + 1 and records[-1]["position"] == 2, "only the failed item is run again"
    resume = _header(rd)["resumes"][-1]
    assert (resume["found"], resume["done"]) == ("incomplete", N - 1)
    assert json.loads(sorted(rd.memory_dir.glob("snapshot-*.json"))[-1].read_text())["records_seq"] == N + 1


def test_every_item_seed_is_derived_from_run_seed_benchmark_sample_phase_and_epoch(make_config):
    records = RunDir(results_dir_of(run_from_config(make_config(*RUN, "seed=3")))).records()
    assert [r["seed"] for r in records] == [
        derive_seed(3, "toy", r["sample_id"], r["phase"], r["epoch"]) for r in records
    ]
    assert len({r["seed"] for r in records}) == N


def test_rerunning_a_finished_run_runs_and_replays_nothing(make_config, clean, replayed):
    before = clean.samples_file.read_bytes(), _snapshots(clean), _audit(clean)
    again = run_from_config(make_config(*RUN, "experiment_name=clean"))
    assert replayed == [] and again["status"] == "complete"
    assert (clean.samples_file.read_bytes(), _snapshots(clean), _audit(clean)) == before
    assert again["resumes"][-1]["found"] == "complete" and again["resumes"][-1]["done"] == N


def test_rerunning_a_finished_run_writes_no_snapshot_even_when_its_newest_is_gone(make_config, clean, replayed):
    """Nothing left to run: the state is rebuilt (from the previous snapshot and the records after it) but no
    snapshot is written; the folder keeps what it had."""
    newest = clean.memory_dir / f"snapshot-{N:06d}.json"
    newest.unlink()
    before = _snapshots(clean), clean.samples_file.read_bytes()
    again = run_from_config(make_config(*RUN, "experiment_name=clean"))
    assert again["status"] == "complete" and replayed == [9]
    assert (_snapshots(clean), clean.samples_file.read_bytes()) == before


def test_snapshot_files_read_back_as_written_and_are_listed_newest_first(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.create()
    try:
        for seq in (3, 12, 6):
            rd.write_snapshot(seq, seq * 2, {"memory": {"n": seq}, "framework": {}})
        for bad in ("x", "", "1x", "a-1", "zz"):  # no sequence: not a snapshot, and not the end of the list
            (rd.memory_dir / f"snapshot-{bad}.json").write_text("{}")
        (rd.memory_dir / "snapshot-000009.json.damaged").write_text("{}")
        assert [p.name for p in rd.snapshots(12)] == [
            "snapshot-000012.json",
            "snapshot-000006.json",
            "snapshot-000003.json",
        ]
        assert [p.name for p in rd.snapshots(11)] == ["snapshot-000006.json", "snapshot-000003.json"]
        assert rd.snapshots(2) == []
        snap = rd.read_snapshot(rd.memory_dir / "snapshot-000006.json")
        assert (snap.records_seq, snap.audit_seq, snap.state) == (6, 12, {"memory": {"n": 6}, "framework": {}})
        (rd.memory_dir / "snapshot-000012.json").write_text('{"records_seq": 12, "audit_seq": 1, "state": {}}')
        with pytest.raises(RunStateError, match=r"snapshot-000012\.json is damaged \(ValueError: state lacks memo"):
            rd.read_snapshot(rd.memory_dir / "snapshot-000012.json")
        assert rd.latest_snapshot(12).records_seq == 6, "the newest readable one"
        assert rd.latest_snapshot(5).records_seq == 3
        assert rd.latest_snapshot(2) is None
        dest = rd.set_aside(rd.memory_dir / "snapshot-000012.json")
        assert dest.name == "snapshot-000012.json.damaged" and dest.exists()
        assert not (rd.memory_dir / "snapshot-000012.json").exists()
    finally:
        rd.release()


def test_done_positions_take_the_latest_attempt_and_exclude_infra_errors():
    recs = [
        {"position": 0, "attempt": 1, "status": "ok"},
        {"position": 1, "attempt": 1, "status": "infra_error"},
        {"position": 2, "attempt": 1, "status": "infra_error"},
        {"position": 2, "attempt": 2, "status": "model_error"},
        {"position": 3, "attempt": 1, "status": "limit_exceeded"},
    ]
    assert done_positions(recs) == {0, 2, 3}


def test_create_tidies_what_a_crash_left_and_keeps_whole_records(tmp_path):
    rd = RunDir(Path(tmp_path) / "run")
    rd.path.mkdir()
    rd.memory_dir.mkdir()
    rd.trajectories.mkdir()
    stale = [rd.path / "run.json.tmp", rd.memory_dir / "snapshot-000003.json.tmp", rd.trajectories / "a.gz.tmp"]
    for p in stale:
        p.write_text("x")
    rd.samples_file.write_text('{"position": 0, "attempt": 1, "status": "ok"}\n{"position": 1, "att')
    rd.audit_file.write_text('{"seq": 1}\n{"se')
    rd.create()
    try:
        assert not any(p.exists() for p in stale)
        assert rd.records() == [{"position": 0, "attempt": 1, "status": "ok"}]
        assert rd.audit_file.read_text() == '{"seq": 1}\n'
    finally:
        rd.release()


def test_a_resume_with_the_cache_off_warns_only_when_records_are_replayed_and_items_remain(make_config, monkeypatch):
    def warned(rd: RunDir) -> bool:
        return "re-sampled" in (rd.path / "run.log").read_text()

    cfg = make_config(*RUN, "runtime.cache.mode=off")
    rd = _crash_at(monkeypatch, cfg, 4)
    assert not warned(rd), "a fresh start replays nothing"
    run_from_config(cfg)
    text = (rd.path / "run.log").read_text()
    assert (
        f"WARNING aecg_bench.run: resuming {rd.path} with the LLM cache off: memory-side calls replayed from the "
        "stored records are re-sampled, so the rebuilt memory may differ from the one the earlier items saw "
        "(runtime.cache.mode=read_write keeps resumes exact)\n"
    ) in text
    (rd.path / "run.log").unlink()
    run_from_config(cfg)
    assert not warned(rd), "a finished run runs nothing"


def test_a_run_from_a_start_state_resumes_from_it_when_no_snapshot_exists(make_config, monkeypatch, clean, tmp_path):
    """protocol.start_state (eval-only variants from one warmed-up state) is the base replay starts from."""
    start = tmp_path / "state.json"
    start.write_text(json.dumps(_snapshots(clean)["snapshot-000006.json"]["state"]))
    args = (*RUN, f"protocol.start_state={start}")
    straight = run_from_config(make_config(*args, "experiment_name=straight"))
    first = RunDir(results_dir_of(straight)).records()[0]
    assert first["memory_stats"] != clean.records()[0]["memory_stats"], "the start state was loaded"
    cfg = make_config(*args, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, 2)  # before the first snapshot
    run_from_config(cfg)
    assert _stable(rd.records()) == _stable(RunDir(results_dir_of(straight)).records())
    assert _snapshots(rd) == _snapshots(RunDir(results_dir_of(straight)))


def test_a_changed_configuration_is_refused_untouched_or_continued_with_its_diff(make_config, monkeypatch):
    from aecg_bench.errors import RunRefused

    rd = _crash_at(monkeypatch, make_config(*RUN), 4)
    before = rd.run_json.read_bytes(), rd.samples_file.read_bytes()
    changed = (*RUN[:-1], "protocol.snapshot_every=2")
    with pytest.raises(RunRefused, match=r"holds a run with a different configuration; .*allow_config_change") as info:
        run_from_config(make_config(*changed))
    assert re.search(r'\n-\s*"snapshot_every": 3,?\n\+\s*"snapshot_every": 2', str(info.value)), "old, then new"
    assert (rd.run_json.read_bytes(), rd.samples_file.read_bytes()) == before, "nothing written"
    final = run_from_config(make_config(*changed, "runtime.allow_config_change=true"))
    assert final["status"] == "complete" and len(final["resumes"]) == 1
    (change,) = final["config_changes"]
    assert re.search(r'\n-\s*"snapshot_every": 3,?\n\+\s*"snapshot_every": 2', change["diff"])
    assert change["at"] >= final["started_at"]
    assert final["resumes"][0]["found"] == "failed"
    text = (rd.path / "run.log").read_text()
    assert f"WARNING aecg_bench.run: continuing {rd.path} under a changed configuration:\n{change['diff']}\n" in text


def test_a_resumed_run_counts_progress_and_tracks_only_the_items_it_runs(make_config, monkeypatch):
    """The progress bar starts at the k items done (seeded with their records); the tracker gets the resumed
    header and the run's directory and logs each new record once, then the final summary."""
    cfg = make_config(*RUN)
    rd = _crash_at(monkeypatch, cfg, 4)
    calls: dict[str, list] = {"progress": [], "seed": [], "update": [], "tracker": [], "log": [], "finish": []}

    class FakeProgress:
        def __init__(self, **kw):
            calls["progress"].append(kw)

        def seed_from(self, records):
            calls["seed"].append([r["position"] for r in records])

        def update(self, record):
            calls["update"].append(record["position"])

        def close(self):
            pass

    class FakeTracker:
        def __init__(self, cfg, header, run_dir, redact):
            calls["tracker"].append((header.get("resumes"), run_dir, redact.deep({"k": "v"})))

        def log(self, record):
            calls["log"].append(record["position"])

        def finish(self, final):
            calls["finish"].append(final["status"])

        def abort(self):
            pass

    monkeypatch.setattr(batch, "Progress", FakeProgress)
    monkeypatch.setattr(batch, "Tracker", FakeTracker)
    run_from_config(cfg)
    (progress,) = calls["progress"]
    assert progress == {"total": N, "done": 4, "enabled": False, "desc": "toy/agentnet/recorder s0"}
    assert calls["seed"] == [[0, 1, 2, 3]]
    assert calls["update"] == calls["log"] == list(range(4, N))
    ((resumes, run_dir, redacted),) = calls["tracker"]
    assert resumes[-1]["found"] == "failed" and run_dir == rd.path and redacted == {"k": "v"}
    assert calls["finish"] == ["complete"]


def test_a_garbled_audit_line_after_a_crash_is_set_aside_and_named(make_config, monkeypatch, clean):
    cfg = make_config(*RUN, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, 7)
    lines = rd.audit_file.read_text().splitlines()
    lines[1] = "{not json"
    rd.audit_file.write_text("\n".join(lines) + "\n")
    run_from_config(cfg)
    assert (rd.memory_dir / "audit.jsonl.damaged").read_text() == "{not json\n"
    text = (rd.path / "run.log").read_text()
    assert (
        f"WARNING aecg_bench.run: set 1 damaged line(s) of {rd.audit_file} aside in {rd.audit_file}.damaged\n" in text
    )
    assert _stable(rd.records()) == _stable(clean.records())


def test_records_of_positions_no_longer_in_the_stream_are_skipped_by_replay(make_config, monkeypatch, replayed):
    """After a configuration change (allow_config_change) a record can name a position the stream lacks."""
    cfg = make_config(*RUN, "experiment_name=crashed")
    rd = _crash_at(monkeypatch, cfg, 7)
    for snap in rd.memory_dir.glob("snapshot-*.json"):
        snap.unlink()
    first = json.loads(rd.samples_file.read_text().splitlines()[0])
    rd.samples_file.write_text(json.dumps({**first, "position": 99}) + "\n" + rd.samples_file.read_text())
    run_from_config(cfg)
    assert replayed == list(range(7)), "the stray record is passed over, the ones after it replayed"


def test_a_run_stopped_twice_keeps_each_sessions_span_and_counts_their_sum(make_config, monkeypatch):
    """run.json's `sessions`: a span its run closed (an error recorded) keeps its end; a span a kill -9 left open
    ends at its last record's end; the resumed span closes when the run ends; `active_seconds` is their sum."""
    cfg = make_config(*RUN)
    rd = _crash_at(monkeypatch, cfg, 3)  # stopped by an error: the span is closed in run.json
    first = _header(rd)["sessions"]
    real = batch.execute_item
    left: list[dict] = []

    def killed(services, item, seed, llm):
        if item.position == 6:  # what a kill -9 now leaves: run.json 'running', its last span open
            left.append(rd.read_header())
            raise RuntimeError("killed")
        return real(services, item, seed, llm)

    monkeypatch.setattr(batch, "execute_item", killed)
    with pytest.raises(RuntimeError):
        run_from_config(cfg)
    rd.run_json.write_text(json.dumps(left[0]))
    assert left[0]["status"] == "running" and left[0]["sessions"][-1][1] is None
    monkeypatch.setattr(batch, "execute_item", real)
    final = run_from_config(cfg)
    spans = final["sessions"]
    assert len(spans) == 3 and spans[0] == first[0], "the first stop's span as it was recorded"
    second = [r for r in rd.records() if r["position"] in (3, 4, 5)]
    assert spans[1] == [left[0]["sessions"][-1][0], max(r["started_at"] + r["seconds"] for r in second)]
    assert spans[1][1] <= spans[2][0] and spans[2][1] == final["finished_at"]
    assert final["active_seconds"] == round(sum(end - start for start, end in spans), 3)


def test_run_json_says_how_many_samples_ran_at_once_and_why(make_config):
    header = _header(RunDir(results_dir_of(run_from_config(make_config(*RUN)))))
    assert header["sample_concurrency"]["width"] == 4, "the mock model allows 4 calls at once"
    assert header["sample_concurrency"]["why"] == "sequential: framework 'agentnet' adapts across tasks (observe)"
    assert set(header["sample_concurrency"]["phases"].values()) == {1}
    wide = make_config(*RUN, "runtime.concurrent_samples=2", "experiment_name=two")
    assert _header(RunDir(results_dir_of(run_from_config(wide))))["sample_concurrency"]["width"] == 2


def test_a_memory_free_run_resumed_with_two_items_left_runs_them_at_once_and_equals_an_uninterrupted_run(
    make_config, monkeypatch
):
    """No-Memory samples are independent (runner/concurrent.py): the two items left after a crash run at once on
    2 workers (their model calls overlap in time), and the records are those of an uninterrupted run."""
    n = 4
    args = (
        "benchmark=toy",
        f"benchmark.params.size={n}",
        "framework=single",
        "memory=no_memory",
        "runtime.concurrent_samples=2",
        "+model.models.mock.options.delay_s=0.1",
        "runtime.cache.mode=off",  # the resumed items call the model (and wait) instead of reading the clean run's
    )
    clean = RunDir(results_dir_of(run_from_config(make_config(*args, "experiment_name=clean"))))
    cfg = make_config(*args, "experiment_name=crashed")
    real = batch.execute_item
    calls = {"n": 0}

    def crashing(*a, **kw):  # the first run one item at a time; it stops at its third item
        calls["n"] += 1
        if calls["n"] == n - 1:
            raise RuntimeError("injected crash")
        return real(*a, **kw)

    monkeypatch.setattr(batch, "_run_together", lambda plan, services, group, width: ((it, None) for it in group))
    monkeypatch.setattr(batch, "execute_item", crashing)
    with pytest.raises(RuntimeError, match="injected crash"):
        run_from_config(cfg)
    monkeypatch.undo()
    root = Path(cfg["runtime"]["results_root"])
    rd = RunDir(
        results_dir(
            root, experiment="crashed", benchmark="toy", framework="single", memory="no_memory", model="mock", seed=0
        )
    )
    assert len(rd.records()) == n - 2
    assert run_from_config(cfg)["status"] == "complete"
    keep = ("position", "attempt", "sample_id", "phase", "epoch", "seed", "status", "success", "value", "steps")
    assert [{k: r[k] for k in keep} for r in rd.records()] == [{k: r[k] for k in keep} for r in clean.records()]
    a, b = rd.records()[-2:]
    assert a["started_at"] < b["started_at"] + b["seconds"] and b["started_at"] < a["started_at"] + a["seconds"]


def test_pruning_keeps_the_newest_snapshots_and_each_phase_end_also_across_a_resume(make_config, monkeypatch):
    """runtime.snapshot_keep newest snapshots plus the one at each phase end (warm-up ends at record 5)."""
    args = (*RUN[:-1], "protocol.warmup_fraction=0.5", "protocol.snapshot_every=1", "runtime.snapshot_keep=2")
    clean = RunDir(results_dir_of(run_from_config(make_config(*args, "experiment_name=clean"))))
    assert {r["phase"] for r in clean.records()[:5]} == {"warmup"} and clean.records()[5]["phase"] == "eval"
    want = ["snapshot-000005.json", "snapshot-000009.json", "snapshot-000010.json"]
    assert sorted(_snapshots(clean)) == want
    rd = _crash_at(monkeypatch, make_config(*args, "experiment_name=crashed"), 7)
    assert sorted(_snapshots(rd)) == ["snapshot-000005.json", "snapshot-000006.json", "snapshot-000007.json"]
    run_from_config(make_config(*args, "experiment_name=crashed"))
    assert _snapshots(rd) == _snapshots(clean)


def test_a_snapshot_cadence_scaled_by_the_state_size_carries_over_a_resume(make_config, monkeypatch, replayed):
    """runtime.snapshot_bytes_per_record: after a snapshot of s bytes the next waits ceil(s / budget) records; a
    resumed run counts that wait from the snapshot it restored, so it takes the uninterrupted run's snapshots."""
    args = (
        *RUN[:-1],
        "protocol.snapshot_every=1",
        "runtime.snapshot_bytes_per_record=1000",
        "runtime.snapshot_keep=100",
    )
    clean = RunDir(results_dir_of(run_from_config(make_config(*args, "experiment_name=clean"))))
    snaps = [clean.read_snapshot(clean.memory_dir / name) for name in sorted(_snapshots(clean))]
    assert len(snaps) < N, "spaced out: the state is larger than one record's budget"
    for a, b in itertools.pairwise(snaps):
        assert b.records_seq - a.records_seq >= -(-a.nbytes // 1000) or b.records_seq == N, (a, b)
    # just after a restorable snapshot that the next one follows 3 or more records later: not yet due again
    cut = next(a.records_seq for a, b in itertools.pairwise(snaps) if b.records_seq - a.records_seq >= 3) + 1
    rd = _crash_at(monkeypatch, make_config(*args, "experiment_name=crashed"), cut)
    run_from_config(make_config(*args, "experiment_name=crashed"))
    assert replayed == [cut - 1]
    assert _snapshots(rd) == _snapshots(clean)
