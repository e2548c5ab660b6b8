"""A fake OpenAI-compatible chat server on 127.0.0.1, for failure-injection tests and latency measurements.

It answers `/v1/chat/completions` through a reply function (messages -> text)
and, per request, may misbehave in one of the ways real providers do: 429 with
Retry-After, 500, too slow (past the client's timeout), an empty completion,
or a body that is not JSON; or fail for good: 400, 401, 403 or 404, with an
error body that echoes the request's bearer key, as careless servers do (a test
that the key never reaches a file). Which requests misbehave is decided by a
`fault(messages, attempt) -> mode | None` function, so tests are deterministic.
With `max_per_second` it also enforces a provider's rate limit: a request
beyond that many in the last second gets 429 with `Retry-After`. Arrival times
are recorded, so tests measure the rate the server saw. It also answers
`/v1/embeddings` (vectors of `embed_dim`, through the same faults), and can be
started again on the port it had (`port=`), to stage an outage.

Transport failures, for the tests of llm/breaker.py: `unused_port()` (nothing
listens: connection refused), `RawServer("silent")` (accepts connections and
never answers) and `RawServer("tls", cert=...)` (a TLS handshake with a
self-signed certificate, `self_signed_cert`, that no client trusts); both count
the connections they accept.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

FAULTS = ("429", "500", "slow", "empty", "not_json")
FATAL_FAULTS = ("400", "401", "403", "404")

Reply = Callable[[list[dict[str, Any]]], str]
Fault = Callable[[list[dict[str, Any]], int], str | None]


class FakeOpenAIServer:
    def __init__(
        self,
        reply: Reply,
        *,
        fault: Fault | None = None,
        latency_s: float = 0.0,
        slow_s: float = 3.0,
        max_per_second: float | None = None,
        retry_after: str = "0",
        port: int = 0,
        embed_dim: int = 8,
    ) -> None:
        self.reply = reply
        self.fault = fault or (lambda messages, attempt: None)
        self.latency_s = latency_s
        self.slow_s = slow_s
        self.attempts: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.max_per_second = max_per_second
        self.retry_after = retry_after
        self.arrivals: list[float] = []  # time.monotonic() of every request
        self.admitted: list[float] = []  # of the requests within max_per_second
        self.log: list[tuple[float, str]] = []  # (arrival, how it was answered: "ok" or a fault mode)
        self.embed_dim = embed_dim
        self.lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                messages = body.get("messages") or [{"role": "user", "content": str(body.get("input", ""))}]
                key = json.dumps(messages, sort_keys=True)
                with server.lock:
                    now = time.monotonic()
                    server.arrivals.append(now)
                    server.attempts[key] += 1
                    attempt = server.attempts[key]
                    recent = sum(1 for t in server.admitted if t > now - 1.0)
                    over = server.max_per_second is not None and recent >= server.max_per_second
                    if not over:
                        server.admitted.append(now)
                mode = "429" if over else server.fault(messages, attempt)
                with server.lock:
                    server.served[mode or "ok"] += 1
                    server.log.append((now, mode or "ok"))
                if server.latency_s:
                    time.sleep(server.latency_s)
                if mode == "429":
                    return self._send(
                        429,
                        {"error": {"message": "rate limited", "type": "rate_limit"}},
                        {"Retry-After": server.retry_after},
                    )
                if mode in FATAL_FAULTS:
                    key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    message = f"request rejected; the key you sent was {key}"
                    return self._send(int(mode), {"error": {"message": message, "type": "invalid_request_error"}})
                if mode == "500":
                    return self._send(500, {"error": {"message": "internal error", "type": "server_error"}})
                if mode == "slow":
                    time.sleep(server.slow_s)
                if mode == "not_json":
                    return self._send_raw(200, b"<html>gateway hiccup</html>", "text/html")
                if self.path.rstrip("/").endswith("/embeddings"):
                    texts = body.get("input") or []
                    vectors = [[float(len(str(t)) % 7 + i + 1) for i in range(server.embed_dim)] for t in texts]
                    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
                    return self._send(200, {"object": "list", "data": data, "model": "fake", "usage": usage})
                text = "" if mode == "empty" else server.reply(messages)
                prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
                return self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": len(text.split()),
                            "total_tokens": prompt_tokens + len(text.split()),
                        },
                    },
                )

            def _send(self, status: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(obj).encode(), "application/json", headers)

            def _send_raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout)
                    pass

        return Handler


def unused_port() -> int:
    """A loopback port nothing listens on (connecting to it is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def self_signed_cert(directory: Path) -> tuple[Path, Path] | None:
    """(certificate, key) for 127.0.0.1, made by the openssl CLI; None when it is not installed."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    cert, key = directory / "cert.pem", directory / "key.pem"
    args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
    subprocess.run(
        [openssl, *args, "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


class RawServer:
    """A loopback TCP server that never speaks HTTP: `silent` accepts and holds every connection without
    a byte in reply; `tls` completes (or fails) a TLS handshake with an untrusted certificate, then
    closes. `connections` counts what it accepted: the attempts a client spent on it."""

    def __init__(self, mode: Literal["silent", "tls"], *, cert: tuple[Path, Path] | None = None) -> None:
        self.mode = mode
        self.connections = 0
        self._held: list[socket.socket] = []
        self._context: ssl.SSLContext | None = None
        if mode == "tls":
            if cert is None:
                raise ValueError("a tls server needs a certificate (self_signed_cert)")
            self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._context.load_cert_chain(str(cert[0]), str(cert[1]))
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        scheme = "https" if self.mode == "tls" else "http"
        return f"{scheme}://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        self._sock.close()
        for conn in self._held:
            conn.close()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            if self._context is None:
                self._held.append(conn)  # never answered, closed at exit
                continue
            threading.Thread(target=self._handshake, args=(conn,), daemon=True).start()

    def _handshake(self, conn: socket.socket) -> None:
        assert self._context is not None
        conn.settimeout(10)
        try:
            with self._context.wrap_socket(conn, server_side=True):
                pass
        except (OSError, ssl.SSLError):  # the client rejects the certificate: the expected end
            pass
        finally:
            conn.close()
