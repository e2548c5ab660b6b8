"""The harness against inspect_ai on the same calls: project wall / inspect_ai wall at 1, 8 and 32 concurrent.

    python scripts/perf/vs_inspect_ai.py --setup               # once: inspect_ai (pinned) in .perf/inspect-venv
    python scripts/perf/vs_inspect_ai.py [--samples 200] [--calls 4] [--levels 1,8,32] [--baseline-ref main]

The workload (issue 32): `--samples` No-Memory samples of `--calls` model calls each, against the
loopback fake OpenAI server (aecg_bench/testing/fake_server.py) answering every call after 200 ms.
Project: `python -m aecg_bench.run model=server framework=single benchmark=toy memory=no_memory` with
the toy benchmark's step limit at `--calls` (a reply that never ends the task, so every sample makes
exactly that many calls), the response cache off and the model's `max_concurrency` at each level.
inspect_ai: scripts/perf/inspect_ai_task.py in its own environment (the project's venv does not get
it), `max_connections` and `max_samples` at each level. `--baseline-ref` also runs the project command
from that git ref (exported with `git archive` to a temporary folder), so today's harness and this one
are measured in the same run, on the same machine, under the same load.

Each figure is the evaluation's own span (run.json started_at -> finished_at; the inspect log's
started_at -> completed_at), which leaves out interpreter start and imports; the whole command's wall
time is printed beside it. Ratios below 1.0 mean the project was faster. Printed with the CPU model
and the load average, which on a shared machine matter as much as the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from aecg_bench.llm.cpu_build import cpu_model

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".perf" / "inspect-venv"
PINS = ["inspect-ai==0.3.285", "openai==3.57.0"]  # what was measured (docs/infra/speed.md)
LATENCY_S = 0.2


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def setup() -> int:
    """inspect_ai in an environment of its own: the project's venv and constraints stay as they are."""
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", *PINS], check=True)
    print(f"inspect_ai installed in {VENV}")
    return 0


def _serve(urls: mp.Queue, stop: Any) -> None:  # type: ignore[type-arg]
    from aecg_bench.testing.fake_server import FakeOpenAIServer

    with FakeOpenAIServer(lambda messages: "move right", latency_s=LATENCY_S) as server:
        urls.put(server.base_url)
        stop.wait()


def project(tree: Path, url: str, samples: int, calls: int, level: int, results: Path) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "aecg_bench.run",
        "model=server",
        "framework=single",
        "benchmark=toy",
        "memory=no_memory",
        f"benchmark.params.size={samples}",
        "benchmark.params.length=1000",  # 'move right' stays a valid, non-final action
        f"benchmark.params.max_steps={calls}",
        f"protocol.max_invalid_actions={calls}",
        "runtime.cache.mode=off",
        "runtime.progress=false",
        "runtime.log_level=WARNING",
        "embedder.backend=lexical",
        f"model.models.served.max_concurrency={level}",
        f"runtime.results_root={results}",
    ]
    env = {**os.environ, "PYTHONPATH": str(tree), "AECG_API_BASE": url, "AECG_SERVER_MODEL": "fake-model"}
    start = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    header = json.loads(next(results.rglob("run.json")).read_text())
    return {
        "seconds": header["finished_at"] - header["started_at"],
        "wall": wall,
        "calls": header["usage"]["total"]["calls"],
        "status": header["status"],
    }


def inspect_ai(url: str, samples: int, calls: int, level: int) -> dict[str, Any]:
    cmd = [str(VENV / "bin" / "python"), str(ROOT / "scripts" / "perf" / "inspect_ai_task.py"), "--base-url", url]
    cmd += ["--samples", str(samples), "--calls", str(calls), "--concurrency", str(level)]
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall": wall}


def export(ref: str, into: Path) -> Path:
    """The tree of a git ref, without touching any worktree."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as fh:
        fh.extractall(into / "tree", filter="data")
    return into / "tree"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", action="store_true")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--baseline-ref", default=None, help="also run the project from this git ref (e.g. main)")
    args = parser.parse_args()
    if args.setup:
        return setup()
    if not (VENV / "bin" / "python").exists():
        print(f"error: no inspect_ai environment at {VENV}; run with --setup first")
        return 2
    levels = [int(x) for x in args.levels.split(",")]
    print(f"{cpu_model()}, {os.cpu_count()} cores; {args.samples} samples x {args.calls} calls, 200 ms a call")
    urls: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    stop = mp.Event()
    server = mp.Process(target=_serve, args=(urls, stop), daemon=True)  # its own process: no share of our GIL
    server.start()
    try:
        url = urls.get(timeout=60)
        with tempfile.TemporaryDirectory(prefix="aecg-vs-inspect-") as tmp:
            baseline = export(args.baseline_ref, Path(tmp)) if args.baseline_ref else None
            for level in levels:
                ideal = args.samples * args.calls * LATENCY_S / level
                print(f"\nconcurrency {level} (ideal {ideal:.1f} s)  [{load()}]", flush=True)
                ours = project(ROOT, url, args.samples, args.calls, level, Path(tmp) / f"now-{level}")
                theirs = inspect_ai(url, args.samples, args.calls, level)
                rows = [("project (this tree)", ours), ("inspect_ai", theirs)]
                if baseline is not None:
                    before = project(baseline, url, args.samples, args.calls, level, Path(tmp) / f"base-{level}")
                    rows.append((f"project ({args.baseline_ref})", before))
                for name, r in rows:
                    print(
                        f"  {name:<22} {r['seconds']:7.1f} s in the run, {r['wall']:6.1f} s command, {r['calls']} calls"
                    )
                print(f"  project / inspect_ai: {ours['seconds'] / theirs['seconds']:.2f} [target <= 1.0]", end="")
                if baseline is not None:
                    print(f"; {args.baseline_ref} / inspect_ai: {before['seconds'] / theirs['seconds']:.2f}", end="")
                print(f"  [{load()}]", flush=True)
    finally:
        stop.set()
        server.join(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
