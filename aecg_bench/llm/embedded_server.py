"""The embedded model served by one llama.cpp `llama-server` process that concurrent runs share.

In-process (aecg_bench/llm/local.py) every sweep job loads its own model copy
and decodes one request at a time. Served, one model instance has `parallel`
slots: llama.cpp decodes the slots' requests in one batch (continuous
batching) and keeps each slot's KV cache, so a request whose prompt starts like
an earlier one (system prompt, policy, task) re-evaluates only the new tail
(`cache_prompt`, on by default; `--cache-ram` keeps evicted slot prompts in
RAM). Sources: llama.cpp tools/server/README.md (flags `-np`, `-cb`,
`--cache-prompt`, `-cram`, `-kvu`).

How a model is reached is not what is measured: the model spec keeps its name
(`aecg-local/...`), and `serve`/`parallel` are transport options, outside the
run's identity and the response cache key. Lifetime: `serving(raw)` around a
whole command (a sweep's launcher process: every joblib worker inherits the
server's address through `AECG_EMBEDDED_SERVER`); a process that finds no
address starts its own on first use (single runs from other entry points,
SLURM/Ray jobs). The server is bound to 127.0.0.1 on a free port, dies with
the process that started it (PR_SET_PDEATHSIG, atexit, the `serving` block's
`finally`), and a server that exits or never answers is an `InfraError`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aecg_bench.errors import ConfigError, InfraError

ENV_URL = "AECG_EMBEDDED_SERVER"  # http://127.0.0.1:<port>: the server this process and its children use
ENV_BINARY = "AECG_LLAMA_SERVER"  # path of the llama-server binary (default: the venv's, from `make setup-server`)
SERVE_MODES = ("in_process", "server")
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ServerSettings:
    """What one server is started with; `parallel` slots share `n_ctx x parallel` context tokens."""

    model: str  # packaged model name (aecg_bench.llm.local.KNOWN_MODELS)
    n_ctx: int = 2048  # per slot, as the in-process model's window
    parallel: int = 2
    threads: int = 1
    ram_cache_mb: int = 512


def serve_mode(options: dict[str, Any]) -> str:
    """`in_process` (default) or `server`; anything else is one line naming the choices."""
    mode = str(options.get("serve", "in_process"))
    if mode not in SERVE_MODES:
        raise ConfigError(f"model option serve={mode!r}; valid choices: {', '.join(SERVE_MODES)}")
    return mode


def find_binary() -> Path:
    """`$AECG_LLAMA_SERVER`, else `llama-server` beside this interpreter (installed by `make setup-server`)."""
    given = os.environ.get(ENV_BINARY)
    path = Path(given) if given else Path(sys.executable).parent / "llama-server"
    if not (path.is_file() and os.access(path, os.X_OK)):
        found = None if given else shutil.which("llama-server")
        if found is None:
            raise ConfigError(
                f"llama-server not found at {path}: run `make setup-server` (scripts/setup/build_llama_server.sh) "
                f"or set ${ENV_BINARY}; or use the in-process model (model=local)"
            )
        path = Path(found)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_args(binary: Path, model_file: Path, port: int, s: ServerSettings) -> list[str]:
    """The command line (flags: llama.cpp tools/server/README.md)."""
    return [
        str(binary),
        "--model", str(model_file),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--ctx-size", str(s.n_ctx * s.parallel),
        "--parallel", str(s.parallel),
        "--no-kv-unified",  # each slot its own n_ctx window, as the in-process model has
        "--cont-batching",
        "--cache-prompt",
        "--cache-ram", str(s.ram_cache_mb),
        "--threads", str(s.threads),
        "--threads-batch", str(s.threads),
        "--seed", "0",
        "--no-webui",
        "--no-warmup",
    ]  # fmt: skip


def _die_with_parent() -> None:
    """In the child: SIGTERM when the process that started it dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class EmbeddedServer:
    """One running llama-server; `stop()` is idempotent."""

    def __init__(self, settings: ServerSettings, binary: Path | None = None, model_file: Path | None = None) -> None:
        from aecg_bench.llm.local import model_path

        self.settings = settings
        self.binary = binary or find_binary()
        self.model_file = model_file or model_path(settings.model)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
        self._stopped = threading.Event()
        self.proc = self._spawn(server_args(self.binary, self.model_file, self.port, settings))
        atexit.register(self.stop)
        try:
            self._wait_ready(STARTUP_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, args: list[str]) -> subprocess.Popen[bytes]:
        """Start the server from a thread that lives until `stop()`: the kernel's parent-death signal
        follows the spawning *thread*, and calls may come from short-lived worker threads."""
        box: dict[str, Any] = {}
        started = threading.Event()

        def keeper() -> None:
            try:
                box["proc"] = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=self._log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                    env={**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")},
                )
            except BaseException as exc:  # reported in the caller's thread
                box["error"] = exc
            started.set()
            self._stopped.wait()

        threading.Thread(target=keeper, name="llama-server-keeper", daemon=True).start()
        started.wait()
        if "error" in box:
            raise InfraError(f"cannot start llama-server {args[0]}: {box['error']}")
        return box["proc"]

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise InfraError(f"llama-server exited with code {self.proc.returncode} at start: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200 and json.loads(r.read() or b"{}").get("status", "ok") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass  # not listening yet, or 503 while loading the model
            time.sleep(0.1)
        raise InfraError(f"llama-server did not answer /health within {timeout_s:.0f} s: {self.log_tail()}")

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = Path(self._log.name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty log)"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stopped.set()
        self._log.close()
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)


_own: EmbeddedServer | None = None
_own_lock = threading.Lock()


def settings_for(
    model: str, options: dict[str, Any], concurrent_calls: int = 1, jobs: int | None = None
) -> ServerSettings:
    """A served model's settings from its spec options. Slots: `parallel` (an integer) or `auto`
    = the sweep's concurrent jobs (`jobs`, joblib's meaning; default: this process's record) x the
    model's concurrent calls per job; threads: every usable core (one process does all the model's
    work, so the cores are not shared out among jobs)."""
    from aecg_bench.llm.threads import concurrent_jobs, effective_jobs, model_threads, usable_cores

    requested = options.get("parallel", "auto")
    if requested in (None, "auto"):
        sharing = concurrent_jobs() if jobs is None else effective_jobs(jobs, usable_cores())
        parallel = max(sharing * max(concurrent_calls, 1), 1)
    else:
        try:
            parallel = int(str(requested))
        except ValueError:
            parallel = 0
        if parallel < 1:
            raise ConfigError(f"model option parallel={requested!r}; valid: 'auto' or a positive integer")
    n_threads = options.get("n_threads", "auto")
    threads = usable_cores() if n_threads in (None, "auto") else model_threads(n_threads)
    return ServerSettings(
        model=model,
        n_ctx=int(options.get("n_ctx", 2048)),
        parallel=parallel,
        threads=threads,
        ram_cache_mb=int(options.get("ram_cache_mb", 512)),
    )


def server_url(model: str, options: dict[str, Any], concurrent_calls: int = 1) -> str:
    """The address of the server for this process: the inherited one, else one started here (once)."""
    global _own
    url = os.environ.get(ENV_URL)
    if url:
        return url
    with _own_lock:
        if _own is None or not _own.alive():
            if _own is not None:
                detail = _own.log_tail()
                _own.stop()
                _own = None
                raise InfraError(f"the embedded llama-server exited: {detail}")
            _own = EmbeddedServer(settings_for(model, options, concurrent_calls))
        return _own.url


def served_models(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
    """(packaged model name, options, max_concurrency) of every embedded model the config serves."""
    from aecg_bench.llm.litellm_setup import LOCAL_PROVIDER

    out = []
    for spec in ((raw.get("model") or {}).get("models") or {}).values():
        if not isinstance(spec, dict) or not str(spec.get("model", "")).startswith(LOCAL_PROVIDER + "/"):
            continue
        options = dict(spec.get("options") or {})
        if serve_mode(options) == "server":
            out.append((str(spec["model"]).partition("/")[2], options, int(spec.get("max_concurrency", 1))))
    return out


@contextlib.contextmanager
def serving(raw: dict[str, Any] | None, jobs: int = 1) -> Iterator[str | None]:
    """Around a command: if its config serves the embedded model and no server is inherited,
    start one, give its address to this process and its children, and stop it after."""
    served = served_models(raw or {})
    if not served or os.environ.get(ENV_URL):
        yield os.environ.get(ENV_URL)
        return
    if len({(name, json.dumps(opts, sort_keys=True, default=str)) for name, opts, _ in served}) > 1:
        raise ConfigError("models served by llama-server must share one model and options (one server per command)")
    name, options, calls = served[0]
    server = EmbeddedServer(settings_for(name, options, calls, jobs))
    os.environ[ENV_URL] = server.url
    try:
        yield server.url
    finally:
        os.environ.pop(ENV_URL, None)
        server.stop()
