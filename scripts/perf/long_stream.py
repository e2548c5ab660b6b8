"""Per-sample time and bytes written as a memory stream grows (issue 36): 1,000, 3,000 and 10,000 mock samples.

    python scripts/perf/long_stream.py [--sizes 1000 3000 10000] [--methods aecg g_memory conmem edv reasoningbank]
                                       [--out results.jsonl] [--baseline-ref main] [--set key=value ...]

Each (method, size) is one run of `python -m aecg_bench.run` in a process of its own, on a fresh results root,
with the mock model and the lexical embedder (so the figures measure the harness and the memory method, not a
model or MiniLM; recall with MiniLM is scripts/perf/recall_latency.py's):

    aecg           toy, single framework, model=mock_aecg (agents: the toy oracle failing 30%; memory side scripted)
    g_memory       toy, single, the `baselines_memory` mock policy (tests/baseline_mocks.py: each baseline's
    conmem         memory-side prompt answered in its format), error rate 0.25 so memory sees failures too
    reasoningbank  toy, single, model=edv_pool_mock (its extraction prompts scripted)
    edv            toy_tools, model=edv_pool_mock, build_then_freeze: the stream is N/2 build + N/2 eval items

Figures per run: the run's own span (run.json started_at -> finished_at, so interpreter start and imports are
left out) per stream item; the bytes the process passed to write() (/proc/self/io `wchar`, so snapshots
written and later deleted count); the size of the run folder at the end; its memory/ folder. Then, per
method, time per item at the largest size over that at the smallest [target <= 1.5] and the AECG run folder at
10,000 [target < 200 MB]. Printed with the CPU model and the load average, which on a shared machine matter as
much as the figures. `--baseline-ref` runs the same from a git ref (exported with `git archive`), so before and
after are measured under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from aecg_bench.llm.cpu_build import cpu_model

ROOT = Path(__file__).resolve().parents[2]
TIME_RATIO_TARGET = 1.5
AECG_FOLDER_TARGET_MB = 200.0

COMMON = ["framework=single", "embedder.backend=lexical", "runtime.progress=false", "runtime.log_level=WARNING"]
MOCK_BASELINES = ["model.models.mock.options.policy=baselines_memory", "+model.models.mock.options.error_rate=0.25"]


def method_args(method: str, n: int) -> list[str]:
    """The run's overrides for `n` stream items."""
    if method == "aecg":
        return ["benchmark=toy", f"benchmark.params.size={n}", "memory=aecg", "model=mock_aecg"]
    if method in ("g_memory", "conmem"):
        return ["benchmark=toy", f"benchmark.params.size={n}", f"memory={method}", *MOCK_BASELINES]
    if method == "reasoningbank":
        return ["benchmark=toy", f"benchmark.params.size={n}", "memory=reasoningbank", "model=edv_pool_mock"]
    if method == "edv":
        build = n // 2
        return [
            "benchmark=toy_tools",
            f"benchmark.params.size={n - build}",
            f"benchmark.params.train_size={build}",
            "memory=edv",
            "model=edv_pool_mock",
            "protocol.mode=build_then_freeze",
        ]
    raise SystemExit(f"unknown method {method!r}")


# The child: registers the baselines' mock policy (a test helper), runs the CLI, and writes its own I/O
# counters at exit.
CHILD = """
import atexit, sys
from pathlib import Path
io_out = Path(sys.argv[1])
atexit.register(lambda: io_out.write_text(Path("/proc/self/io").read_text()))
sys.path.insert(0, str(Path.cwd() / "tests"))
import baseline_mocks  # noqa: F401  (registers the `baselines_memory` mock policy)
sys.argv = ["aecg_bench.run", *sys.argv[2:]]
from aecg_bench.run import main
main()
"""


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_one(tree: Path, method: str, n: int, root: Path, extra: list[str] | None = None) -> dict[str, Any]:
    io_file = root / "io.txt"
    args = [*COMMON, *method_args(method, n), *(extra or []), f"runtime.results_root={root}"]
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    load_before = os.getloadavg()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(io_file), *args], cwd=tree, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (usage.ru_utime + usage.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{method} n={n} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    (run_json,) = [p for p in root.rglob("run.json") if ".cache" not in p.parts]
    header = json.loads(run_json.read_text())
    items = header["counts"]["items"]
    io = dict(line.split(": ") for line in io_file.read_text().splitlines())
    span = header["finished_at"] - header["started_at"]
    return {
        "method": method,
        "n": n,
        "items": items,
        "status": header["status"],
        "span_s": round(span, 2),
        "ms_per_item": round(1000 * span / items, 3),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),  # the whole process's, imports included
        "cpu_ms_per_item": round(1000 * cpu / items, 3),
        "wchar": int(io["wchar"]),
        "folder_bytes": folder_bytes(run_json.parent),
        "memory_bytes": folder_bytes(run_json.parent / "memory"),
        "snapshots": len(list((run_json.parent / "memory").glob("snapshot-*"))),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def export(ref: str, into: Path) -> Path:
    """The tree of a git ref, without touching any worktree (tests/ included: the mock policy)."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as fh:
        fh.extractall(into / "tree", filter="data")
    return into / "tree"


def mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


def report(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{'tree':<10}{'method':<14}{'items':>7}{'ms/item':>9}{'cpu ms':>8}{'wrote MB':>10}{'folder MB':>11}{'memory MB':>11}"
    )
    for r in rows:
        print(
            f"{r.get('tree', 'this'):<10}{r['method']:<14}{r['items']:>7}{r['ms_per_item']:>9.2f}"
            f"{r['cpu_ms_per_item']:>8.2f}{mb(r['wchar']):>10}"
            f"{mb(r['folder_bytes']):>11}{mb(r['memory_bytes']):>11}   load {r['load_before'][0]:.1f}"
        )
    for tree in dict.fromkeys(r.get("tree", "this") for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows):
            mine = sorted(
                (r for r in rows if r["method"] == method and r.get("tree", "this") == tree), key=lambda r: r["n"]
            )
            if len(mine) >= 2:
                ratio = mine[-1]["ms_per_item"] / mine[0]["ms_per_item"]
                cpu = mine[-1]["cpu_ms_per_item"] / mine[0]["cpu_ms_per_item"]
                verdict = "OK" if ratio <= TIME_RATIO_TARGET else "ABOVE TARGET"
                print(
                    f"{tree}: {method} time per item at {mine[-1]['n']} / at {mine[0]['n']}: {ratio:.2f} "
                    f"(CPU {cpu:.2f}) [target <= {TIME_RATIO_TARGET}] {verdict}"
                )
            big = [r for r in mine if method == "aecg" and r["n"] >= 10000]
            if big:
                size = big[-1]["folder_bytes"] / 1e6
                verdict = "OK" if size < AECG_FOLDER_TARGET_MB else "ABOVE TARGET"
                print(
                    f"{tree}: aecg run folder at {big[-1]['n']}: {size:.1f} MB [target < {AECG_FOLDER_TARGET_MB:.0f}] {verdict}"
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--methods", nargs="+", default=["aecg", "g_memory", "conmem", "edv", "reasoningbank"])
    parser.add_argument("--out", type=Path, default=None, help="append each run's figures here (JSON lines)")
    parser.add_argument("--baseline-ref", default=None, help="also run each from this git ref (e.g. main)")
    parser.add_argument("--report", type=Path, default=None, help="only print the report of an --out file")
    parser.add_argument(
        "--set", nargs="*", default=[], help="overrides for every run (e.g. runtime.fsync_interval_s=1)"
    )
    args = parser.parse_args()
    if args.report:
        report([json.loads(line) for line in args.report.read_text().splitlines() if line.strip()])
        return 0
    print(f"{cpu_model()}, {os.cpu_count()} cores; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aecg-long-") as tmp:
        trees = [("this", ROOT)]
        if args.baseline_ref:
            trees.append((args.baseline_ref, export(args.baseline_ref, Path(tmp))))
        for method in args.methods:
            for n in args.sizes:
                for label, tree in trees:
                    root = Path(tmp) / f"{label}-{method}-{n}"
                    tag = label + "".join(f" {o}" for o in args.set)
                    row = {"tree": tag, **run_one(tree, method, n, root, args.set)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.out:
                        with args.out.open("a") as fh:
                            fh.write(json.dumps(row) + "\n")
                    subprocess.run(["rm", "-rf", str(root)], check=False)
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
