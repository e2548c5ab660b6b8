"""A run that cannot reach its model stops in one line (issue 34; llm/breaker.py, docs/infra/reliability.md).

Every transport failure is staged on loopback, never the network: a refused port, a host name that
does not resolve (getaddrinfo patched), a TLS server with a self-signed certificate, a server that
accepts and never answers. Attempts are counted at the server where there is one. Each run first
records two samples against a healthy server, so "records of finished samples unchanged" is checked
on a real resume.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO

import aecg_bench.runner.batch as batch
from aecg_bench.benchmarks.toy import mock_oracle
from aecg_bench.errors import ProviderOutage
from aecg_bench.llm.breaker import EndpointState, EndpointUnreachable, EndpointWatch, SqliteStore, claim, role_of
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import results_dir
from aecg_bench.runner.records import RunDir, latest_by_position
from aecg_bench.testing.fake_server import FakeOpenAIServer, RawServer, self_signed_cert, unused_port

ATTEMPTS = 3
CLI = ["runtime.progress=false", "runtime.log_level=WARNING", "embedder.backend=lexical", "runtime.fsync=false"]
ORACLE = ModelSpec(label="fake", provider="mock", model="mock/x")


def _reply(messages: list[dict]) -> str:
    return str(mock_oracle(Request(messages=messages, params={}), ORACLE))


def _args(base_url: str, *extra: str) -> list[str]:
    return [
        "benchmark=toy",
        "benchmark.params.size=6",
        "memory=recorder",
        "model=server",
        f"model.models.served.api_base={base_url}",
        "model.models.served.model=openai/fake-model",
        "model.models.served.timeout_s=0.5",
        "model.label=fake",
        f"runtime.retry.max_attempts={ATTEMPTS}",
        "runtime.retry.base_delay_s=0.01",
        "runtime.retry.max_delay_s=0.05",
        *extra,
    ]


def _rd(root: Path) -> RunDir:
    return RunDir(
        results_dir(
            root, experiment="default", benchmark="toy", framework="single", memory="recorder", model="fake", seed=0
        )
    )


def _two_samples_then_crash(make_config, monkeypatch) -> RunDir:
    """A healthy server answers two samples, then the process dies (as kill would leave it)."""
    real, done = batch._run_item, {"n": 0}

    def crash_after_two(*a, **kw):
        if done["n"] == 2:
            raise KeyboardInterrupt
        done["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(batch, "_run_item", crash_after_two)
    with FakeOpenAIServer(_reply) as server, pytest.raises(KeyboardInterrupt):
        run_from_config(make_config(*_args(server.base_url)))
    monkeypatch.setattr(batch, "_run_item", real)
    rd = _rd(Path(make_config()["runtime"]["results_root"]))
    assert len(rd.records()) == 2
    return rd


@pytest.fixture
def no_such_host(monkeypatch):
    """`*.invalid` does not resolve, decided here without asking any resolver."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return "http://no-such-host.invalid:8000/v1"


@pytest.mark.parametrize("transport", ["refused", "unresolvable", "tls", "silent"])
def test_an_endpoint_that_never_answers_fails_the_run_after_one_cycle(
    make_config, monkeypatch, tmp_path, transport, request
):
    rd = _two_samples_then_crash(make_config, monkeypatch)
    before = rd.samples_file.read_bytes()
    server = None
    if transport == "refused":
        url, reason = f"http://127.0.0.1:{unused_port()}/v1", "connection refused"
    elif transport == "unresolvable":
        url, reason = request.getfixturevalue("no_such_host"), "the host name does not resolve"
    else:
        cert = self_signed_cert(tmp_path) if transport == "tls" else None
        if transport == "tls" and cert is None:
            pytest.skip("needs the openssl CLI to make a certificate")
        server = RawServer(transport, cert=cert).__enter__()
        url = server.base_url
        reason = "TLS handshake failed" if transport == "tls" else "accepted the connection but sent no answer"
    try:
        started = time.monotonic()
        with pytest.raises(EndpointUnreachable) as info:
            run_from_config(make_config(*_args(url)))
        elapsed = time.monotonic() - started
    finally:
        if server is not None:
            server.__exit__()
    line = str(info.value)
    assert "\n" not in line and "'served'" in line and url.rstrip("/") in line and reason in line
    assert f"{ATTEMPTS} attempts" in line and "AECG_API_BASE" in line and "rerun to resume" in line
    if server is not None:
        assert server.connections == ATTEMPTS, "one retry cycle, then the run stops"
    assert elapsed < 30, "one cycle, not a cycle per sample"
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "failed" and reason in header["error"]
    assert rd.samples_file.read_bytes() == before, "the finished samples' records are unchanged"


def test_the_cli_says_it_in_one_line_and_exits_2(make_config, monkeypatch, tmp_path):
    import os
    import subprocess
    import sys

    rd = _two_samples_then_crash(make_config, monkeypatch)
    before = rd.samples_file.read_bytes()
    url = f"http://127.0.0.1:{unused_port()}/v1"
    proc = subprocess.run(
        [sys.executable, "-m", "aecg_bench.run", *_args(url), *CLI, f"runtime.results_root={tmp_path / 'results'}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 2, out
    assert "Traceback" not in out and len(out.splitlines()) == 1, out
    assert out.startswith("error: model 'served' cannot reach") and "connection refused" in out
    assert json.loads(rd.run_json.read_text())["status"] == "failed"
    assert rd.samples_file.read_bytes() == before


def test_runs_of_a_sweep_share_the_verdict_and_one_retry_cycle():
    """Four callers (as the processes of a sweep would) fail at once on the same endpoint: one probes,
    three wait for its verdict and stop without spending their own attempts."""
    store = EndpointWatch().store
    watches = [EndpointWatch(store, scope="sweep-1", poll_s=0.01) for _ in range(4)]
    seen: list[str] = []
    probes = {"attempts": 0}

    def caller(watch: EndpointWatch) -> None:
        for attempt in range(ATTEMPTS):
            kind = watch.failed("http://x/v1", connected=False, lease_s=60)
            if kind != "probe":
                seen.append(kind)
                return
            probes["attempts"] += 1
            time.sleep(0.02)
            if attempt + 1 == ATTEMPTS:
                seen.append(f"gave up: {watch.give_up('http://x/v1', 'connection refused')}")

    threads = [threading.Thread(target=caller, args=(w,)) for w in watches]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert probes["attempts"] == ATTEMPTS
    assert sorted(seen) == ["dead", "dead", "dead", "gave up: connection refused"]
    assert all(w.check("http://x/v1") == "connection refused" for w in watches)
    assert EndpointWatch(store, scope="sweep-2").check("http://x/v1") is None, "a new command starts clean"


def test_the_shared_store_is_one_file_for_processes_and_a_gone_prober_is_replaced(tmp_path):
    path = tmp_path / "endpoints.sqlite"
    one, two = SqliteStore(path), SqliteStore(path)
    assert role_of(one.update("k", lambda s: claim(s, "host:1:1", 100.0, 60, lambda o: False)), "host:1:1") == "probe"
    waiting = two.update("k", lambda s: claim(s, "host:2:1", 101.0, 60, lambda o: False))
    assert role_of(waiting, "host:2:1") == "wait"
    stale = two.update("k", lambda s: claim(s, "host:2:1", 200.0, 60, lambda o: False))
    assert role_of(stale, "host:2:1") == "probe", "a prober silent past its lease is replaced"
    gone = two.update("k", lambda s: claim(s, "host:3:1", 201.0, 60, lambda owner: owner == "host:2:1"))
    assert role_of(gone, "host:3:1") == "probe", "a prober whose process ended is replaced"
    assert role_of(EndpointState(answered=True, prober="x"), "x") == "answered"
    assert role_of(EndpointState(dead="refused"), "x") == "dead"
    one.update("k", lambda s: EndpointState(answered=True))
    assert two.read("k").answered


class Outage:
    """A healthy server that goes away after `after` requests and (optionally) comes back later."""

    def __init__(self, after: int, back_after_s: float | None) -> None:
        self.after, self.back_after_s = after, back_after_s
        self.requests = 0
        self.server = FakeOpenAIServer(_reply, fault=self._count).__enter__()
        self.port = self.server.port
        self.restarted: FakeOpenAIServer | None = None

    def _count(self, messages: list[dict], attempt: int) -> None:
        self.requests += 1
        if self.requests == self.after:
            threading.Thread(target=self._go_down, daemon=True).start()

    def _go_down(self) -> None:
        self.server.__exit__()
        if self.back_after_s is not None:
            time.sleep(self.back_after_s)
            self.restarted = FakeOpenAIServer(_reply, port=self.port).__enter__()

    def close(self) -> None:
        for server in (self.server, self.restarted):
            if server is not None:
                server.__exit__()


def test_an_outage_after_answers_interrupts_the_run_and_a_rerun_completes_it(make_config):
    outage = Outage(after=3, back_after_s=None)
    args = _args(outage.server.base_url, "runtime.retry.outage_window_s=1")
    try:
        with pytest.raises(ProviderOutage, match=r"stopped answering .* outage window .*rerun the same command"):
            run_from_config(make_config(*args))
    finally:
        outage.close()
    rd = _rd(Path(make_config()["runtime"]["results_root"]))
    header = json.loads(rd.run_json.read_text())
    assert header["status"] == "interrupted" and "outage window" in header["error"]
    first = rd.records()
    assert 1 <= len(first) < 6 and all(r["status"] == "ok" for r in first), "no sample became an infra_error"
    with FakeOpenAIServer(_reply, port=outage.port):
        final = run_from_config(make_config(*args))
    assert final["status"] == "complete" and final["failures"]["infra_error"] == 0
    records = rd.records()
    assert records[: len(first)] == first
    assert sorted(r["position"] for r in records) == list(range(6)), "nothing lost or duplicated"


def test_an_outage_shorter_than_the_window_costs_nothing_but_retries(make_config):
    outage = Outage(after=3, back_after_s=1.0)
    try:
        final = run_from_config(make_config(*_args(outage.server.base_url, "runtime.retry.outage_window_s=60")))
    finally:
        outage.close()
    assert outage.restarted is not None
    assert final["status"] == "complete" and final["failures"]["infra_error"] == 0
    assert final["failures"]["retries"] >= 1
    assert len(latest_by_position(_rd(Path(final["runtime"]["results_root"])).records())) == 6


def test_doctor_says_which_key_variable_it_sends_and_never_the_key(monkeypatch, capsys):
    from aecg_bench import doctor

    secret = "sk-doctor-must-not-print-0123456789"
    monkeypatch.setenv("DOCTOR_CREDS", secret)
    with FakeOpenAIServer(lambda messages: "OK") as server:
        code = doctor.main(
            [
                "model=server",
                f"model.models.served.api_base={server.base_url}",
                "model.models.served.api_key_env=DOCTOR_CREDS",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("ok    model served") and "key from $DOCTOR_CREDS" in out
    assert "answered 'OK'" in out and secret not in out
    url = f"http://127.0.0.1:{unused_port()}/v1"
    assert doctor.main(["model=server", f"model.models.served.api_base={url}"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL  model served") and "connection refused" in out and "AECG_API_BASE" in out
    assert len(out.strip().splitlines()) == 1
    assert doctor.main(["model=serverr"]) == 2
    assert "did you mean 'server'" in capsys.readouterr().err


SWEEP = ["benchmark=toy", "benchmark.params.size=3", "memory=recorder", "model=server,mock", "seed=0,1"]
SWEEP += ["hydra.launcher.n_jobs=2", f"runtime.retry.max_attempts={ATTEMPTS}", "runtime.retry.base_delay_s=0.3"]


@pytest.mark.slow  # a Hydra multirun of four runs in two joblib workers: ~1 min on a loaded machine
def test_a_sweep_spends_one_retry_cycle_on_a_dead_endpoint_and_runs_on_other_models_go_on(tmp_path):
    import os
    import subprocess
    import sys

    cert = self_signed_cert(tmp_path)
    if cert is None:
        pytest.skip("needs the openssl CLI to make a certificate")
    root = tmp_path / "results"
    with RawServer("tls", cert=cert) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "aecg_bench.run", "-m", *CLI, f"runtime.results_root={root}", *SWEEP],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "AECG_API_BASE": server.base_url},
            capture_output=True,
            text=True,
            timeout=600,
        )
        time.sleep(0.2)
        connections, url = server.connections, server.base_url
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out and "sweep: 4 runs: 2 complete, 2 failed" in out, out
    # one retry cycle for the sweep; the other server run, started at the same moment, spends at most its first
    # attempt before it waits for the verdict (a run that starts later spends none)
    assert ATTEMPTS <= connections <= ATTEMPTS + 1, connections
    headers = [json.loads(p.read_text()) for p in root.rglob("run.json")]
    failed = [h for h in headers if h["status"] == "failed"]
    assert len(failed) == 2 and {h["labels"]["model"] for h in failed} == {"server-model"}
    assert all("TLS handshake failed" in h["error"] and url in h["error"] for h in failed)
    assert sorted(h["status"] for h in headers if h["labels"]["model"] == "mock") == ["complete", "complete"]
