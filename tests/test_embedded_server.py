"""The shared embedded-model server: lifecycle, routing, identity, failures (fake llama-server binary).

The fake binary is a small Python HTTP server that takes llama-server's flags, answers /health and
/v1/chat/completions, and writes every request body it receives to a file, so the tests see what the
harness sent. The real server is exercised by the slow test at the end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aecg_bench.errors import ConfigError, InfraError
from aecg_bench.llm import embedded_server as es
from aecg_bench.llm.client import LLMClient
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.run import launcher_jobs

FAKE = """\
#!{python}
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = sys.argv[1:]
flag = lambda name: args[args.index(name) + 1]
log = {log!r}
with open(log + ".argv", "w") as f:
    json.dump(args, f)
if os.environ.get("FAKE_EXIT"):
    print("error: cannot load model", flush=True)
    sys.exit(3)

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._send(200, {{"status": "ok"}})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(log, "a") as f:
            f.write(json.dumps({{"path": self.path, "body": body}}) + "\\n")
        text = "served: " + body["messages"][-1]["content"]
        self._send(200, {{"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{{"index": 0, "finish_reason": "stop", "message": {{"role": "assistant", "content": text}}}}],
            "usage": {{"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}}})

ThreadingHTTPServer((flag("--host"), int(flag("--port"))), H).serve_forever()
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake llama-server on $AECG_LLAMA_SERVER; returns the file its requests are written to."""
    log = tmp_path / "requests.jsonl"
    binary = tmp_path / "llama-server"
    binary.write_text(FAKE.format(python=sys.executable, log=str(log)))
    binary.chmod(0o755)
    monkeypatch.setenv(es.ENV_BINARY, str(binary))
    monkeypatch.delenv(es.ENV_URL, raising=False)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setattr("aecg_bench.llm.local.model_path", lambda name: model)
    return log


def _gone(pid: int, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie child of this process counts as gone once reaped by its parent
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def test_free_port_is_on_loopback_and_unused() -> None:
    port = es.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nothing holds it


def test_server_args_share_the_context_among_slots_on_loopback() -> None:
    args = es.server_args(Path("/x/llama-server"), Path("/m.gguf"), 4321, es.ServerSettings("m", 1024, 3, 2, 64))
    flag = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")}
    assert flag["--host"] == "127.0.0.1" and flag["--port"] == "4321"
    assert flag["--ctx-size"] == "3072" and flag["--parallel"] == "3"
    assert flag["--threads"] == flag["--threads-batch"] == "2" and flag["--cache-ram"] == "64"
    assert "--no-kv-unified" in args and "--cache-prompt" in args and "--cont-batching" in args


def test_slots_follow_the_sweeps_jobs_and_bad_values_are_one_line() -> None:
    assert es.settings_for("m", {}, concurrent_calls=2, jobs=3).parallel == 6
    assert es.settings_for("m", {"parallel": 5}, jobs=3).parallel == 5
    assert es.settings_for("m", {"n_threads": 1}).threads == 1
    with pytest.raises(ConfigError, match="parallel=0"):
        es.settings_for("m", {"parallel": 0})
    with pytest.raises(ConfigError, match="valid choices: in_process, server"):
        es.serve_mode({"serve": "remote"})


def test_launcher_jobs_reads_the_sweep_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AECG_JOBS", raising=False)
    assert launcher_jobs(["experiment=aecg_table1_smoke"]) == 2  # the local launcher's default
    assert launcher_jobs(["-m", "hydra.launcher.n_jobs=4"]) == 4
    monkeypatch.setenv("AECG_JOBS", "3")
    assert launcher_jobs(["--multirun", "seed=0,1"]) == 3
    assert launcher_jobs(["-m", "runtime=slurm"]) is None


def test_server_starts_answers_and_stops(fake: Path) -> None:
    server = es.EmbeddedServer(es.ServerSettings("m", 256, 2, 1, 16))
    try:
        argv = json.loads(Path(str(fake) + ".argv").read_text())
        assert argv[argv.index("--port") + 1] == str(server.port) and server.alive()
    finally:
        server.stop()
    assert not server.alive()
    server.stop()  # idempotent


def test_a_server_that_exits_at_start_is_an_infra_error_not_a_hang(fake: Path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_EXIT", "1")
    with pytest.raises(InfraError, match=r"exited with code 3.*cannot load model"):
        es.EmbeddedServer(es.ServerSettings("m"))


def test_missing_binary_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(es.ENV_BINARY, str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match=r"llama-server not found.*make setup-server"):
        es.find_binary()


RAW = {
    "model": {
        "models": {
            "local": {
                "model": "aecg-local/smollm2-135m-instruct",
                "max_concurrency": 2,
                "options": {"n_ctx": 512, "serve": "server", "parallel": "auto"},
            }
        }
    }
}


def test_serving_gives_children_the_address_and_stops_the_server(fake: Path) -> None:
    with es.serving(RAW, jobs=2) as url:
        assert url and os.environ[es.ENV_URL] == url
        argv = json.loads(Path(str(fake) + ".argv").read_text())
        assert argv[argv.index("--parallel") + 1] == "4"  # 2 jobs x 2 calls each
        child = subprocess.run(
            [sys.executable, "-c", f"import os; print(os.environ['{es.ENV_URL}'])"], capture_output=True, text=True
        )
        assert child.stdout.strip() == url
        port = int(url.rsplit(":", 1)[1])
    assert es.ENV_URL not in os.environ
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))  # the server is gone
    in_process = {"model": {"models": {"local": {**RAW["model"]["models"]["local"], "options": {}}}}}
    with es.serving(in_process) as url:
        assert url is None and es.ENV_URL not in os.environ


def test_the_server_dies_with_the_process_that_started_it(fake: Path) -> None:
    code = "from pathlib import Path; from aecg_bench.llm import embedded_server as es; "
    code += f"s = es.EmbeddedServer(es.ServerSettings('m'), model_file=Path({str(fake)!r})); "
    code += "print(s.proc.pid, flush=True); import time; time.sleep(600)"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert not _gone(pid, 0.5)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert _gone(pid), "the server outlived the (killed) process that started it"


def _spec(serve: str) -> ModelSpec:
    options = {"n_ctx": 512} if serve == "in_process" else {"n_ctx": 512, "serve": "server", "parallel": 2}
    return ModelSpec(
        label="local", model="aecg-local/smollm2-135m-instruct", grammar=True, native_tools=False, options=options
    )


def test_calls_go_to_the_server_with_the_same_cache_key(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the context cut is the in-process one (tested in test_local_model); here the tokenizer is not loaded
    monkeypatch.setattr("aecg_bench.llm.local.fit_served", lambda name, n_ctx, msgs, max_tokens: msgs)
    with es.serving(RAW):
        served = LLMClient({"local": _spec("server")}, {"default": "local"}, seed=7)
        out = served.complete([{"role": "user", "content": "hi"}], grammar='root ::= "a"', max_tokens=9)
    assert out.text == "served: hi" and out.usage.input_tokens == 7
    (request,) = [json.loads(line) for line in fake.read_text().splitlines()]
    assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "smollm2-135m-instruct"
    body = request["body"]
    assert body["grammar"] == 'root ::= "a"' and body["seed"] == 7 and body["max_tokens"] == 9
    assert body["temperature"] == 0.0
    in_process = LLMClient({"local": _spec("in_process")}, {"default": "local"}, seed=7)
    request_of = served._build_request(_spec("server"), [{"role": "user", "content": "hi"}], None, 9, None, None,
                                       'root ::= "a"', None, None)[0]  # fmt: skip
    assert out.key == in_process.cache_key_for(_spec("in_process"), request_of, 0, None)


def test_a_server_that_dies_mid_run_is_a_recorded_infra_error(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("aecg_bench.llm.local.fit_served", lambda name, n_ctx, msgs, max_tokens: msgs)
    monkeypatch.setattr(es, "_own", None)
    client = LLMClient({"local": _spec("server")}, {"default": "local"}, sleep=lambda s: None)
    assert client.complete([{"role": "user", "content": "one"}]).text == "served: one"  # starts its own
    own = es._own
    assert own is not None
    try:
        own.proc.kill()
        own.proc.wait()
        with pytest.raises(InfraError, match="exited"):
            client.complete([{"role": "user", "content": "two"}])
    finally:
        own.stop()
        monkeypatch.setattr(es, "_own", None)


@pytest.mark.slow
def test_real_server_serves_the_embedded_model_under_the_same_cache_key() -> None:
    """Needs `make setup-server`'s llama-server. Replies are compared only in the printout: the server README
    does not promise bit-identical logits across batch sizes (docs/infra/speed.md, "Replies")."""
    try:
        es.find_binary()
    except ConfigError:
        pytest.skip("llama-server not built")
    messages = [
        {"role": "system", "content": "You answer with one word."},
        {"role": "user", "content": "What colour is the sky on a clear day?"},
    ]
    spec = _spec("server")
    in_process = LLMClient({"local": _spec("in_process")}, {"default": "local"}).complete(messages, max_tokens=16)
    with es.serving({"model": {"models": {"local": spec.model_dump()}}}, jobs=1) as url:
        assert url is not None
        served = LLMClient({"local": spec}, {"default": "local"}).complete(
            messages, grammar='root ::= [a-z]+ "."', max_tokens=16
        )
        long = [{"role": "user", "content": "word " * 3000}]  # over the 512-token window: cut, not refused
        cut = LLMClient({"local": spec}, {"default": "local"}).complete(long, grammar='root ::= "ok"', max_tokens=8)
    assert served.text.strip().endswith(".") and served.text.strip()[:-1].isalpha()  # the grammar held
    assert cut.text == "ok" and cut.usage.input_tokens <= 512
    print("in-process:", repr(in_process.text), "served:", repr(served.text))
