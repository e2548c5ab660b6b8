"""Fault matrix (issue 11, points 2-7; docs/infra/reliability.md): every fault ends in one line
naming the file or cause and what to do, run.json gets the right status, records already written
are unchanged, and no secret reaches the console or a file.

Most cases run in-process on the toy benchmark with the mock model (fast); the CLI cases run
`python -m aecg_bench.run` to check the exit code and that the whole output is one line.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, small_tmpfs

from aecg_bench.errors import ConfigError, RunRefused, RunStateError
from aecg_bench.jsonl import append_jsonl, read_jsonl, repair
from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import Redactor, results_dir
from aecg_bench.runner.records import RunDir
from aecg_bench.testing.fake_server import FakeOpenAIServer

SECRET = "sk-fault-SUITE-must-never-leak-0123456789"
CLI_BASE = ["runtime.progress=false", "runtime.log_level=WARNING", "embedder.backend=lexical"]
RUN = ["benchmark=toy", "benchmark.params.size=8", "memory=recorder", "protocol.snapshot_every=3"]


def _rd(root: Path, experiment: str = "default", model: str = "mock") -> RunDir:
    return RunDir(
        results_dir(
            root, experiment=experiment, benchmark="toy", framework="single", memory="recorder", model=model, seed=0
        )
    )


def _root(final_or_cfg: dict) -> Path:
    return Path(final_or_cfg["runtime"]["results_root"])


def _cli(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    flags = [a for a in args if a.startswith("-")]
    overrides = [a for a in args if not a.startswith("-")]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "aecg_bench.run",
            *flags,
            *CLI_BASE,
            *overrides,
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _one_line(proc: subprocess.CompletedProcess) -> str:
    out = (proc.stdout + proc.stderr).strip()
    assert "Traceback" not in out, out
    assert len(out.splitlines()) == 1, out
    return out


def _files_containing(root: Path, needle: str) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if needle.encode() in data:
            hits.append(str(path))
    return hits


def _server_args(base_url: str) -> list[str]:
    return [
        "benchmark=toy",
        "benchmark.params.size=4",
        "memory=recorder",
        "model=server",
        f"model.models.served.api_base={base_url}",
        "model.models.served.model=openai/fake-model",
        "model.models.served.api_key_env=AECG_FAULT_CREDS",  # a name no secret-looking pattern matches
        "model.models.served.timeout_s=5",
        "model.label=fake",
        "runtime.retry.base_delay_s=0.01",
        "runtime.retry.max_delay_s=0.02",
    ]


# -- point 2 + 3: fatal provider errors, and the key they echo ------------------------------------


@pytest.mark.slow  # a subprocess with litellm and wandb start-up: ~25 s on a loaded machine
def test_a_401_that_echoes_the_key_fails_the_run_in_one_line_and_leaks_nothing(tmp_path):
    def reply(messages: list[dict]) -> str:
        return "stop"

    root = tmp_path / "results"
    with FakeOpenAIServer(reply, fault=lambda messages, attempt: "401") as server:
        proc = _cli(
            f"runtime.results_root={root}",
            *_server_args(server.base_url),
            "runtime.wandb.enabled=true",
            "runtime.wandb.mode=offline",
            env={"AECG_FAULT_CREDS": SECRET, "WANDB_MODE": "offline"},
        )
    line = _one_line(proc)
    assert proc.returncode == 2
    assert "401" in line and SECRET not in line
    assert server.served["401"] == 1, "a fatal status is not retried"
    rd = _rd(root, model="fake")
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "failed" and "401" in header["error"] and "\n" not in header["error"]
    assert rd.records() == []
    assert _files_containing(root, SECRET) == []
    assert list(root.rglob("wandb")), "wandb wrote its offline files"


@pytest.mark.parametrize("status", ["400", "401", "403", "404"])
def test_fatal_statuses_are_recorded_as_the_run_failure_and_leak_no_key(make_config, monkeypatch, status):
    """In-process twin of the CLI test above (which also covers wandb's files): run.json,
    run.log and records."""
    from aecg_bench.llm.providers import FatalProviderError

    monkeypatch.setenv("AECG_FAULT_CREDS", SECRET)
    calls = {"n": 0}

    def fault(messages: list[dict], attempt: int) -> str | None:
        calls["n"] += 1
        return status if calls["n"] > 3 else None  # the first samples succeed

    with FakeOpenAIServer(lambda messages: "stop", fault=fault) as server:
        cfg = make_config(*_server_args(server.base_url))
        with pytest.raises(FatalProviderError, match=f"HTTP {status}") as info:
            run_from_config(cfg)
    assert SECRET in str(info.value), "the server did echo the key (the redaction below is tested)"
    assert server.served[status] == 1, "a fatal status is not retried"
    rd = _rd(_root(cfg), model="fake")
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "failed" and f"HTTP {status}" in header["error"]
    assert _files_containing(_root(cfg), SECRET) == []
    before = rd.samples_file.read_bytes()
    assert 1 <= len(rd.records()) < 4
    with FakeOpenAIServer(lambda messages: "stop") as server:  # the provider is fixed: the rerun resumes
        final = run_from_config(make_config(*_server_args(server.base_url)))
    assert final["status"] == "complete" and "error" not in final
    assert rd.samples_file.read_bytes().startswith(before)


def test_an_api_error_carrying_a_fatal_status_is_fatal():
    import litellm

    from aecg_bench.llm.providers import FatalProviderError, TransientProviderError, classify_litellm_error

    for status, kind in ((401, FatalProviderError), (404, FatalProviderError), (503, TransientProviderError)):
        exc = litellm.APIError(status_code=status, message=f"boom\nline two {status}", llm_provider="openai", model="x")
        out = classify_litellm_error(exc)
        assert isinstance(out, kind), (status, out)
        if kind is FatalProviderError:
            assert "\n" not in str(out) and f"HTTP {status}" in str(out)


@pytest.mark.slow  # a Hydra multirun subprocess
def test_a_sweep_goes_on_past_a_failed_run_and_lists_every_outcome(tmp_path):
    root = tmp_path / "results"
    with FakeOpenAIServer(lambda messages: "stop", fault=lambda messages, attempt: "403") as server:
        proc = _cli(
            "-m",
            f"runtime.results_root={root}",
            "benchmark.params.size=3",
            "model=server,mock",
            "runtime.retry.base_delay_s=0.01",
            env={"AECG_API_BASE": server.base_url, "AECG_SERVER_MODEL": "fake-model"},
        )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    assert "sweep: 2 runs: 1 complete, 1 failed" in out, out
    headers = {h["labels"]["model"]: h for h in (json.loads(p.read_text()) for p in root.rglob("run.json"))}
    assert headers["server-fake-model"]["status"] == "failed" and "HTTP 403" in headers["server-fake-model"]["error"]
    assert headers["mock"]["status"] == "complete"


# -- point 3: redaction --------------------------------------------------------------------------


def test_console_and_log_redaction_knows_every_configured_key_variable(monkeypatch, tmp_path):
    import io
    import logging

    from aecg_bench.runner.logs import RedactingStream, setup_logging

    monkeypatch.setenv("AECG_FAULT_CREDS", SECRET)
    assert SECRET in Redactor()(SECRET), "the name looks harmless: only the configured list knows it"
    redactor = Redactor(["AECG_FAULT_CREDS"])
    sink = io.StringIO()
    stream = RedactingStream(sink, redactor)
    stream.write("echo: " + SECRET[:10])  # a key split across two writes of one line
    stream.write(SECRET[10:] + " end\n")
    stream.write("partial " + SECRET)
    stream.flush()
    assert SECRET not in sink.getvalue() and sink.getvalue().count("***") == 2

    setup_logging(tmp_path, "INFO", quiet_console=True, redact=redactor)
    try:
        raise RuntimeError(f"body: {SECRET}")
    except RuntimeError:
        logging.getLogger("aecg_bench.test").exception("provider said %s", SECRET)
    for h in logging.getLogger("aecg_bench").handlers:
        h.flush()
    text = (tmp_path / "run.log").read_text()
    assert "provider said ***" in text and "body: ***" in text and SECRET not in text


# -- point 4: the run lock and the sweep's workers ----------------------------------------------


def test_a_refused_process_touches_nothing_of_the_run_it_does_not_own(make_config):
    cfg = make_config(*RUN)
    run_from_config(cfg)
    rd = _rd(_root(cfg))
    holder = RunDir(rd.path)
    holder.create()  # another process is running this run
    try:
        before = {p: p.read_bytes() for p in rd.path.rglob("*") if p.is_file()}
        with pytest.raises(RunRefused, match=r"is being run by pid \d+"):
            run_from_config(make_config(*RUN))
        assert run_from_config(make_config(*RUN), in_sweep=True) is None
        after = {p: p.read_bytes() for p in rd.path.rglob("*") if p.is_file()}
    finally:
        holder.release()
    assert after == before, "run.json, run.log, records and the lock file are exactly as the owner left them"


def test_a_config_changed_refusal_leaves_the_run_as_it_is(make_config):
    cfg = make_config(*RUN)
    run_from_config(cfg)
    rd = _rd(_root(cfg))
    header, records = rd.run_json.read_bytes(), rd.samples_file.read_bytes()
    with pytest.raises(RunRefused, match="different configuration"):
        run_from_config(make_config(*RUN, "protocol.maintain_every=3"))
    assert rd.run_json.read_bytes() == header and json.loads(header)["status"] == "complete"
    assert rd.samples_file.read_bytes() == records


@pytest.mark.slow  # two CLI runs
def test_sigterm_marks_the_run_interrupted_and_a_rerun_resumes_it(tmp_path):
    import signal
    import time

    root = tmp_path / "results"
    args = [f"runtime.results_root={root}", *RUN, "benchmark.params.size=30", "+model.models.mock.options.delay_s=0.05"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aecg_bench.run", *CLI_BASE, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    rd = _rd(root)
    deadline = time.time() + 120
    while time.time() < deadline and (not rd.samples_file.exists() or rd.samples_file.read_bytes().count(b"\n") < 2):
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1, out
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "interrupted"
    done = rd.records()
    assert 2 <= len(done) < 30
    again = _cli(*args)
    assert again.returncode == 0, again.stderr
    assert "found it interrupted" in again.stdout
    assert json.loads(rd.run_json.read_text())["status"] == "complete"
    assert sorted(r["position"] for r in rd.records()) == list(range(30))


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow  # a joblib sweep, killed, then resumed
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sweep_workers_die_with_their_parent_and_the_rerun_resumes(tmp_path):
    import signal
    import time

    root = tmp_path / "results"
    args = [
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        f"runtime.results_root={root}",
        *RUN,
        "benchmark.params.size=150",
        "+model.models.mock.options.delay_s=0.02",
        "seed=0,1",
    ]
    parent = subprocess.Popen(
        [sys.executable, "-m", "aecg_bench.run", *args, *CLI_BASE],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    samples = [_rd(root).samples_file, RunDir(_rd(root).path.with_name("seed=1")).samples_file]
    deadline = time.time() + 240
    while time.time() < deadline and not all(p.exists() and p.read_bytes().count(b"\n") >= 2 for p in samples):
        assert parent.poll() is None, "the sweep ended early"
        time.sleep(0.05)
    workers = _children(parent.pid)
    try:
        assert workers, "the sweep started worker processes"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.time() + 120
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "workers die with their parent"
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
    statuses = sorted(json.loads(p.with_name("run.json").read_text())["status"] for p in samples)
    assert statuses == ["interrupted", "interrupted"]
    again = _cli(*[a for a in args if a != "benchmark.params.size=150"], "benchmark.params.size=150")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("found it interrupted") == 2 and "sweep: 2 runs: 2 complete" in again.stdout


def test_a_worker_stops_its_run_when_the_sweep_parent_is_gone(monkeypatch):
    """The watcher acts once the sweep parent is no longer the worker's parent (reparented)."""
    import threading

    from aecg_bench.runner import lifecycle

    gone = threading.Event()
    ppid = {"now": 4242}
    monkeypatch.setenv(lifecycle.PARENT_ENV, "4242")
    thread = lifecycle.watch_parent(poll_s=0.01, getppid=lambda: ppid["now"], on_gone=gone.set)
    assert thread is not None
    assert not gone.wait(0.2), "the parent is alive: nothing happens"
    ppid["now"] = 1  # the parent died; init adopted us
    assert gone.wait(30)
    thread.join(30)
    monkeypatch.setenv(lifecycle.PARENT_ENV, str(os.getpid()))
    assert lifecycle.watch_parent(on_gone=gone.set) is None, "the sweep's own process watches nobody"


def test_outcome_files_of_killed_launchers_are_cleaned_up_and_never_recreated(tmp_path, monkeypatch):
    from aecg_bench.runner import lifecycle

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"aecg-sweep-{int(dead.stdout)}-abc.jsonl"  # a launcher that was kill -9ed
    stale.write_text("")
    monkeypatch.delenv(lifecycle.OUTCOMES_ENV, raising=False)  # start_sweep sets both: undone after the test
    monkeypatch.delenv(lifecycle.PARENT_ENV, raising=False)
    mine = lifecycle.start_sweep(tmp_path)
    assert not stale.exists() and mine.exists()
    lifecycle.record_outcome("r1", "complete")
    assert lifecycle.read_outcomes(mine) == [{"run": "r1", "status": "complete", "detail": ""}]
    mine.unlink()  # the launcher is gone: a late worker must not leave a file behind
    lifecycle.record_outcome("r2", "interrupted")
    assert not mine.exists()


def test_the_sweep_summary_exits_2_when_any_run_did_not_finish():
    from aecg_bench.runner.lifecycle import summarise_sweep

    lines, code = summarise_sweep(
        [
            {"run": "a", "status": "complete", "detail": ""},
            {"run": "b", "status": "refused", "detail": "b is being run by pid 7"},
        ]
    )
    assert code == 2 and lines[0] == "sweep: 2 runs: 1 complete, 1 refused" and "pid 7" in lines[1]
    assert summarise_sweep([{"run": "a", "status": "incomplete", "detail": ""}])[1] == 0


# -- point 5: damaged or unwritable run state ---------------------------------------------------


@pytest.fixture
def finished(make_config):
    """A finished toy run with records, trajectories, snapshots and an audit log."""
    cfg = make_config(*RUN)
    final = run_from_config(cfg)
    return cfg, _rd(_root(cfg)), final


def _rerun_fails(cfg: dict, rd: RunDir, match: str) -> str:
    samples = rd.samples_file.read_bytes()
    with pytest.raises(RunStateError, match=match) as info:
        run_from_config(cfg)
    msg = str(info.value)
    assert "\n" not in msg and len(msg) < 700
    assert rd.samples_file.read_bytes() == samples, "records are unchanged"
    return msg


def test_a_garbled_middle_line_of_samples_is_named_and_recorded(finished):
    cfg, rd, _ = finished
    lines = rd.samples_file.read_bytes().split(b"\n")
    lines[3] = lines[3][:20] + b"#garbage"
    rd.samples_file.write_bytes(b"\n".join(lines))
    msg = _rerun_fails(cfg, rd, r"samples\.jsonl: line 4 is damaged")
    assert "delete that line" in msg
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "failed" and "line 4" in header["error"]


def test_a_truncated_run_json_is_named_and_left_for_the_user(finished):
    cfg, rd, _ = finished
    rd.run_json.write_bytes(rd.run_json.read_bytes()[:100])
    damaged = rd.run_json.read_bytes()
    msg = _rerun_fails(cfg, rd, r"run\.json is damaged")
    assert "mv " in msg and rd.run_json.read_bytes() == damaged
    os.replace(rd.run_json, rd.path / "run.json.damaged")
    assert run_from_config(cfg)["status"] == "complete", "following the advice rebuilds it"


def test_a_damaged_trajectory_that_replay_needs_is_named(make_config, monkeypatch):
    cfg = make_config(*RUN, "protocol.snapshot_every=100")  # only the final snapshot: replay reads trajectories
    _crash_after(monkeypatch, 5, cfg)
    rd = _rd(_root(cfg))
    for snap in rd.memory_dir.glob("snapshot-*.json"):
        snap.unlink()  # no snapshot: every record is replayed
    target = rd.trajectory_path(2, 1)
    target.write_bytes(target.read_bytes()[:30])
    _rerun_fails(cfg, rd, r"000002-a1\.json\.gz is damaged")
    assert json.loads(rd.run_json.read_text())["status"] == "failed"


def _crash_after(monkeypatch, n: int, cfg: dict) -> None:
    """Run `cfg` until `n` records are flushed, then die as a kill would (KeyboardInterrupt)."""
    import aecg_bench.runner.batch as batch

    real = batch._run_item
    calls = {"n": 0}

    def crashing(*a, **kw):
        if calls["n"] == n:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", crashing)
    with pytest.raises(KeyboardInterrupt):
        run_from_config(cfg)
    monkeypatch.setattr(batch, "_run_item", real)


@pytest.mark.parametrize("damage", ["truncated", "wrong_shape"])
def test_a_bad_snapshot_falls_back_and_the_result_equals_a_clean_run(make_config, monkeypatch, damage):
    clean = run_from_config(make_config(*RUN, "experiment_name=clean"))
    cfg = make_config(*RUN, "experiment_name=crashed")
    _crash_after(monkeypatch, 7, cfg)
    rd = _rd(_root(cfg), "crashed")
    assert json.loads(rd.run_json.read_text())["status"] == "interrupted"
    snaps = sorted(rd.memory_dir.glob("snapshot-*.json"))
    assert len(snaps) >= 2
    newest = snaps[-1]
    if damage == "truncated":
        newest.write_bytes(newest.read_bytes()[:40])
    else:
        newest.write_text(json.dumps({"records_seq": 6, "audit_seq": 2, "state": {"memory": []}}))
    records = rd.samples_file.read_bytes()
    resumed = run_from_config(cfg)
    assert resumed["status"] == "complete" and resumed["eval"] == clean["eval"]
    assert rd.samples_file.read_bytes().startswith(records)
    assert (rd.memory_dir / (newest.name + ".damaged")).exists(), "kept aside for inspection"
    clean_state = json.loads(sorted(_rd(_root(cfg), "clean").memory_dir.glob("snapshot-*.json"))[-1].read_text())
    final_state = json.loads(sorted(rd.memory_dir.glob("snapshot-*.json"))[-1].read_text())
    assert final_state["state"] == clean_state["state"]


def test_a_process_exit_from_inside_the_run_is_recorded_interrupted_and_a_rerun_resumes_it(make_config, monkeypatch):
    """submitit requeues a job that reached its time limit by sys.exit from its signal handler, wherever the run
    is (the local executor's code 144): the run is `interrupted`, not left `running`, and the requeued job resumes."""
    import aecg_bench.runner.batch as batch

    cfg = make_config(*RUN)
    real = batch._run_item
    calls = {"n": 0}

    def requeued(*a, **kw):
        if calls["n"] == 5:
            raise SystemExit(144)
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", requeued)
    with pytest.raises(SystemExit):
        run_from_config(cfg)
    rd = _rd(_root(cfg))
    header = json.loads(rd.run_json.read_text())
    assert (
        header["status"] == "interrupted" and header["error"] == "the process exited (exit code 144); rerun to resume"
    )
    assert header["sessions"][-1][1] == header["finished_at"], "the session is closed when the process exits"
    monkeypatch.setattr(batch, "_run_item", real)
    resumed = run_from_config(cfg)  # in this same process: only if the lock was released
    assert resumed["status"] == "complete" and resumed["resumes"][-1]["found"] == "interrupted"
    assert resumed["resumes"][-1]["done"] == 5
    assert sorted(r["position"] for r in rd.records()) == list(range(8))


def test_a_garbled_audit_line_is_set_aside_not_fatal(finished):
    cfg, rd, _ = finished
    lines = rd.audit_file.read_text().splitlines()
    assert len(lines) >= 3
    lines[1] = "{not json"
    rd.audit_file.write_text("\n".join(lines) + "\n")
    samples = rd.samples_file.read_bytes()
    assert run_from_config(cfg)["status"] == "complete"
    assert (rd.memory_dir / "audit.jsonl.damaged").read_text() == "{not json\n"
    assert "{not json" not in rd.audit_file.read_text()
    assert rd.samples_file.read_bytes() == samples


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_a_damaged_response_cache_is_one_line(make_config, damage):
    cfg = make_config(*RUN)
    cache = _root(cfg) / ".cache" / "llm.sqlite"
    run_from_config(cfg)
    con = sqlite3.connect(cache)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    for side in (".sqlite-wal", ".sqlite-shm"):
        cache.with_suffix(side).unlink(missing_ok=True)
    data = cache.read_bytes()
    cache.write_bytes(b"this is not a database at all " * 200 if damage == "garbage" else data[: len(data) // 2])
    cfg2 = make_config(*RUN, "experiment_name=again")
    with pytest.raises(RunStateError, match=r"response cache .*llm\.sqlite is not usable") as info:
        run_from_config(cfg2)
    assert "\n" not in str(info.value) and "mv " in str(info.value)


def test_a_read_only_results_dir_is_one_line(make_config, monkeypatch):
    cfg = make_config(*RUN)
    root = _root(cfg)
    real_mkdir = Path.mkdir

    def read_only(self: Path, *a, **kw):
        if str(self).startswith(str(root)):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(Path, "mkdir", read_only)
    with pytest.raises(RunStateError, match=r"cannot write .*: Read-only file system; make it writable") as info:
        run_from_config(cfg)
    assert "\n" not in str(info.value)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_results_dir_from_the_cli_exits_2_in_one_line(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    root.chmod(0o555)
    try:
        proc = _cli(f"runtime.results_root={root}", *RUN)
    finally:
        root.chmod(0o755)
    assert proc.returncode == 2
    assert "Permission denied" in _one_line(proc)


def test_a_full_disk_mid_run_fails_in_one_line_and_still_records_the_status(make_config, monkeypatch):
    """ENOSPC on the 4th record; the final status write only succeeds once the reserve is freed."""
    import aecg_bench.jsonl as jsonl
    import aecg_bench.runner.records as records

    cfg = make_config(*RUN)
    rd = _rd(_root(cfg))
    state = {"appends": 0}
    real_append, real_atomic = jsonl.append_jsonl, jsonl.write_json_atomic

    def append(path, record, *, fsync=True):
        state["appends"] += 1
        if state["appends"] > 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_append(path, record, fsync=fsync)

    def atomic(path, obj):
        if state["appends"] > 3 and (rd.path / ".reserve").exists():
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_atomic(path, obj)

    monkeypatch.setattr(records, "append_jsonl", append)
    monkeypatch.setattr(records, "write_json_atomic", atomic)
    with pytest.raises(RunStateError, match=r"cannot write .*samples\.jsonl: No space left on device; free disk"):
        run_from_config(cfg)
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "failed" and "No space left" in header["error"]
    assert len(rd.records()) == 3
    monkeypatch.setattr(records, "append_jsonl", real_append)
    monkeypatch.setattr(records, "write_json_atomic", real_atomic)
    assert run_from_config(cfg)["status"] == "complete", "space freed: the rerun resumes"
    assert not (rd.path / ".reserve").exists(), "the reserve lives only while the run does"


def test_a_full_disk_inside_a_sample_stops_the_run_instead_of_failing_every_sample():
    from aecg_bench.runner.execute import is_fatal

    assert is_fatal(OSError(errno.ENOSPC, "No space left on device"))
    assert is_fatal(OSError(errno.EROFS, "Read-only file system"))
    assert not is_fatal(OSError(errno.EACCES, "Permission denied")), "a program's own business"
    assert not is_fatal(ValueError("a sample's own bug"))


def test_a_really_full_disk_still_records_the_final_status(make_config, tmp_path):
    with small_tmpfs(tmp_path / "small", "6m") as mnt:
        cfg = make_config(*RUN, "benchmark.params.size=40", f"runtime.results_root={mnt}", "runtime.cache.mode=off")
        rd = _rd(mnt)
        filled = False

        def fill() -> None:
            nonlocal filled
            fd = os.open(mnt / "ballast", os.O_WRONLY | os.O_CREAT)
            try:
                while True:
                    os.write(fd, b"\0" * 65536)
            except OSError:
                filled = True
            finally:
                os.close(fd)

        import aecg_bench.runner.batch as batch

        real = batch._run_item
        count = {"n": 0}

        def filling(*a, **kw):
            count["n"] += 1
            if count["n"] == 5:
                fill()
            return real(*a, **kw)

        batch._run_item = filling
        try:
            with pytest.raises(RunStateError, match="No space left on device"):
                run_from_config(cfg)
        finally:
            batch._run_item = real
        assert filled
        header = json.loads(rd.run_json.read_text())
        assert header["status"] == "failed" and "No space left" in header["error"]
        assert len(rd.records()) == 4


# -- point 6: config errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("runtime.data_root=${oc.env:AECG_SURELY_NOT_SET_ANYWHERE}", "AECG_SURELY_NOT_SET_ANYWHERE"),
        ("seed=-1", "seed"),
    ],
)
def test_config_errors_are_one_short_line(monkeypatch, capsys, override, expected):
    from aecg_bench import run
    from aecg_bench.runner import lifecycle

    monkeypatch.delenv("AECG_SURELY_NOT_SET_ANYWHERE", raising=False)
    monkeypatch.setattr(lifecycle, "install_sigterm", lambda: None)  # not in the test process
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # main() wraps the console: undo it afterwards
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    monkeypatch.setattr(sys, "argv", ["aecg_bench.run", override])
    with pytest.raises(SystemExit) as info:
        run.main()
    assert info.value.code == 2
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert len(text.splitlines()) == 1 and len(text) < 250, text
    assert text.startswith("error:") and expected in text


# -- point 7: small ones ------------------------------------------------------------------------


def test_repair_keeps_a_complete_last_record_that_only_lacks_its_newline(tmp_path):
    path = tmp_path / "x.jsonl"
    append_jsonl(path, {"a": 1}, fsync=False)
    path.write_bytes(path.read_bytes() + b'{"a": 2}')  # the newline never made it
    repair(path)
    append_jsonl(path, {"a": 3}, fsync=False)
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}, {"a": 3}]
    path.write_bytes(path.read_bytes() + b'{"a": 4')  # a torn record is still cut
    repair(path)
    assert path.read_bytes().endswith(b'{"a": 3}\n')


def test_stale_temp_files_are_removed_once_the_lock_is_held(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.memory_dir.mkdir(parents=True)
    rd.trajectories.mkdir()
    stale = [rd.memory_dir / "snapshot-000010.json.tmp", rd.path / "run.json.tmp", rd.trajectories / "x.json.gz.tmp"]
    for p in stale:
        p.write_text("{")
    rd.create()
    rd.release()
    assert not any(p.exists() for p in stale)


def test_a_cache_locked_by_another_writer_costs_one_short_wait(make_config, tmp_path):
    from aecg_bench.llm.cache import ResponseCache

    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, "read_write", lock_timeout_s=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        cache.put("k1", "m", {"text": "a"})  # waits once, then stops storing
        cache.put("k2", "m", {"text": "b"})  # no second wait
        assert cache.skipped_writes == 2 and cache._writes_off
    finally:
        other.execute("ROLLBACK")
        other.close()

    cfg = make_config(*RUN, "runtime.cache.lock_timeout_s=0.05")
    cache_file = _root(cfg) / ".cache" / "llm.sqlite"
    ResponseCache(cache_file, "read_write")  # create it, then lock it for the whole run
    blocker = sqlite3.connect(cache_file, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        final = run_from_config(cfg)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert final["status"] == "complete" and final["failures"]["infra_error"] == 0
    assert "locked by another writer" in (_rd(_root(cfg)).path / "run.log").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_clean_results_keeps_the_papers_numbers(tmp_path):
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    results = tmp_path / "results"
    for p in ("reference/aecg_table1.csv", "README.md", "default/toy/run.json", ".cache/llm.sqlite", ".sweeps/0/x"):
        (results / p).parent.mkdir(parents=True, exist_ok=True)
        (results / p).write_text("x")
    subprocess.run(["make", "-s", "clean-results"], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    assert sorted(p.name for p in results.iterdir()) == ["README.md", "reference"]
    assert (results / "reference" / "aecg_table1.csv").exists()


def test_config_error_class_hierarchy_keeps_refusals_catchable_as_config_errors():
    assert issubclass(RunRefused, ConfigError)
