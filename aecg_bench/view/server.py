"""The viewer's local HTTP server: one page (static/index.html) and a JSON API over aecg_bench.view.data.

It binds to loopback by default and reads the results folder on each request (memoised by file
stamps), so a run still in progress shows its latest records on reload. A request that names what
does not exist gets a 404 with one line; anything else that fails gets a 500 with one line; the
page shows either, never a stack trace.
"""

from __future__ import annotations

import json
import mimetypes
import sys
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from aecg_bench.errors import one_line
from aecg_bench.view import data

STATIC = Path(__file__).resolve().parent / "static"


def api(root: Path) -> dict[str, Callable[[dict[str, str]], Any]]:
    """Route -> handler of the query parameters."""
    return {
        "/api/runs": lambda q: {"root": str(root), "runs": data.runs(root)},
        "/api/run": lambda q: data.run_detail(root, q["id"]),
        "/api/sample": lambda q: data.sample(root, q["run"], int(q["pos"])),
        "/api/item": lambda q: data.memory_item(root, q["run"], q["id"]),
        "/api/skills": lambda q: data.skills(root, q["run"]),
        "/api/audit": lambda q: data.audit(root, q["run"], q.get("event", ""), int(q.get("limit", data.AUDIT_LIMIT))),
        "/api/compare": lambda q: data.compare(root, q["a"], q["b"]),
    }


def make_handler(root: Path) -> type[BaseHTTPRequestHandler]:
    routes = api(root)

    class Handler(BaseHTTPRequestHandler):
        server_version = "aecg-bench-viewer"

        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = _Query((k, v[0]) for k, v in parse_qs(url.query).items())
            if url.path in routes:
                self._api(routes[url.path], query)
            elif url.path in ("/", "/index.html"):
                self._file(STATIC / "index.html")
            elif url.path.startswith("/static/"):
                self._file(_inside(STATIC, url.path[len("/static/") :]))
            elif url.path.startswith("/report/"):  # the report's links to runs work when it is opened here
                self._file(_inside(root / "report", url.path[len("/report/") :] or "index.html"))
            else:
                self._send(HTTPStatus.NOT_FOUND, {"error": f"no page {url.path}"})

        def _api(self, handler: Callable[[dict[str, str]], Any], query: dict[str, str]) -> None:
            try:
                self._send(HTTPStatus.OK, handler(query))
            except KeyError as exc:
                self._send(HTTPStatus.NOT_FOUND, {"error": f"not found: {one_line(exc.args[0] if exc.args else exc)}"})
            except ValueError as exc:
                self._send(HTTPStatus.BAD_REQUEST, {"error": one_line(exc)})
            except Exception as exc:  # the page shows one line; the console too
                print(f"viewer: {self.path}: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
                self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {one_line(exc)}"})

        def _file(self, path: Path | None) -> None:
            if path is None or not path.is_file():
                self._send(HTTPStatus.NOT_FOUND, {"error": "no such file"})
                return
            body = path.read_bytes()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", mimetypes.guess_type(path.name)[0] or "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _send(self, status: HTTPStatus, payload: Any) -> None:
            body = json.dumps(payload).encode()  # the readers return what JSON files held
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")  # a run in progress changes
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: one line per request would drown the console

    return Handler


class _Query(dict[str, str]):
    """A request's parameters: one that is missing is a bad request (400), not an unknown run (404)."""

    def __missing__(self, key: str) -> str:
        raise ValueError(f"the request lacks its {key!r} parameter")


def _inside(base: Path, rel: str) -> Path | None:
    """`base/rel`, or None when rel escapes base."""
    path = (base / unquote(rel)).resolve()
    return path if base.resolve() in path.parents else None


def serve(root: Path, port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server for `root` on loopback unless told (not yet serving: call serve_forever). Port 0 picks a
    free port."""
    server = ThreadingHTTPServer((host, port), make_handler(Path(root)))
    server.daemon_threads = True
    return server
