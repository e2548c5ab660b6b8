"""`python -m aecg_bench.view RESULTS [--port 8765] [--host 127.0.0.1]`: browse runs, samples,
conversations, recalled memory and memory over the stream in a local page (docs/infra/viewer.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aecg_bench.view.server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aecg_bench.view", description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path, nargs="?", default=Path("results"), help="a results folder")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (loopback by default)")
    parser.add_argument("--port", type=int, default=8765, help="port (0: any free port)")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        print(f"error: {args.results} is not a folder; pass a results folder (e.g. results/aecg_table1-smoke)")
        return 2
    try:
        server = serve(args.results, args.port, args.host)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; pick another --port")
        return 2
    host, port = server.server_address[:2]
    print(f"viewing {args.results.resolve()} at http://{host}:{port}/ (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
