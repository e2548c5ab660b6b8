"""How fast the run viewer answers on a paper-sized results folder (issue 33: 216 runs, ~20k samples;
first page under 2 s, a sample under 1 s, on 2 cores).

    python scripts/perf/viewer_latency.py [--runs 216] [--samples 93] [--keep DIR]

It makes one real run (AECG under AutoGen on `toy`, the scripted mock model: real records,
trajectories, audit log and snapshots), copies it into --runs run folders with distinct labels, then
times the viewer's API over HTTP, cold (nothing memoised) and warm, beside a bare baseline on the same
machine: reading and parsing every run.json once. Prints the CPU, the load average and each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from aecg_bench.llm.cpu_build import cpu_model  # noqa: E402  (the checkout above, not an installed copy)

FRAMEWORKS = ("autogen", "macnet", "agentnet")
BENCHMARKS = ("pddl", "fever", "scienceworld", "mbpp_plus")
MEMORIES = ("no_memory", "macnet_m", "memorybank", "conmem", "g_memory", "aecg")


def template_run(work: Path, samples: int) -> Path:
    from conftest import compose

    from aecg_bench.run import run_from_config

    raw = compose(
        [
            "experiment_name=t",
            "memory=aecg",
            "framework=autogen",
            "model=mock_aecg",
            f"benchmark.params.size={samples}",
        ],
        work / "template",
    )
    final = run_from_config(raw)
    return next((work / "template").rglob("run.json")).parent if final else Path()


def paper_sized(template: Path, root: Path, n_runs: int) -> int:
    """Copies of the template under distinct (framework, benchmark, memory, seed) labels."""
    n = 0
    for seed in range(3):
        for fw in FRAMEWORKS:
            for bench in BENCHMARKS:
                for mem in MEMORIES:
                    if n >= n_runs:
                        return n
                    dest = root / "aecg_table1" / bench / fw / mem / "gpt-4.1-mini" / f"seed={seed}"
                    shutil.copytree(template, dest)
                    header = json.loads((dest / "run.json").read_text())
                    header["labels"].update(
                        experiment="aecg_table1",
                        benchmark=bench,
                        framework=fw,
                        memory=mem,
                        model="gpt-4.1-mini",
                        seed=seed,
                    )
                    (dest / "run.json").write_text(json.dumps(header))
                    n += 1
    return n


def timed_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as res:
        res.read()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=216)
    parser.add_argument("--samples", type=int, default=93, help="samples per run (216 x 93 = 20,088)")
    parser.add_argument("--keep", type=Path, default=None, help="build the folder here and keep it")
    args = parser.parse_args()
    from aecg_bench.view.server import serve

    work = args.keep or Path(tempfile.mkdtemp(prefix="viewer-perf-"))
    root = work / "results"
    template = template_run(work, args.samples)
    n = paper_sized(template, root, args.runs)
    srv = serve(root, port=0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    some = str(next(root.rglob("run.json")).parent.relative_to(root))
    try:
        start = time.perf_counter()
        for path in root.rglob("run.json"):
            json.loads(path.read_text())
        bare = time.perf_counter() - start
        first_page = timed_get(f"{base}/") + timed_get(f"{base}/api/runs")
        warm_page = statistics.median(timed_get(f"{base}/api/runs") for _ in range(3))
        run_cold = timed_get(f"{base}/api/run?{urlencode({'id': some})}")
        positions = [args.samples // 2, args.samples - 1, 1]
        sample_cold = [timed_get(f"{base}/api/sample?{urlencode({'run': some, 'pos': p})}") for p in positions]
        item_cold = timed_get(f"{base}/api/item?{urlencode({'run': some, 'id': 's1.v1'})}")
    finally:
        srv.shutdown()
        srv.server_close()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores); load average {os.getloadavg()[0]:.2f}")
    print(f"folder: {n} runs x {args.samples} samples = {n * args.samples:,} samples")
    print(f"bare baseline (read and parse every run.json): {bare:.3f} s")
    print(
        f"first page, cold (page + runs list): {first_page:.3f} s  ({first_page / bare:.1f}x the bare baseline; target < 2 s)"
    )
    print(f"runs list, warm (median of 3): {warm_page:.3f} s")
    print(f"one run's page, cold: {run_cold:.3f} s")
    print(f"a sample, cold: max {max(sample_cold):.3f} s over {len(sample_cold)} samples (target < 1 s)")
    print(f"a memory item, cold: {item_cold:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
