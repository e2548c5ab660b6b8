"""Sweep efficiency of the smoke presets: how much of the cores x wall time the embedded model computed.

    python scripts/perf/sweep_efficiency.py [--only table1,edv] [--configs edv_fig4_epochs] [--jobs 2]
                                            [--baseline-ref main]

Runs each experiment's smoke sweep as `make reproduce-*` does (scripts/perf/smoke_presets.py: each in a fresh
results root), with every llama.cpp call of every sweep process logged: a `sitecustomize` put first on the
sweep's PYTHONPATH wraps `llama_cpp.Llama.create_chat_completion` once the module is imported, resets
llama.cpp's context counters before each call and reads them after (`llama_perf_context`: prompt
evaluation and decoding milliseconds), with the threads the call ran on. Nothing in the project is changed
to measure it, so `--baseline-ref` runs the same sweeps from another git ref (exported with `git archive`)
in the same run, on the same machine, under the same load. Figures (issue 32):

- efficiency = sum of llama.cpp compute seconds / (wall x cores), the issue's definition;
- core efficiency = sum of (compute seconds x the call's threads) / (wall x cores): the share of the
  cores' time the model's threads were given work. A run left alone on 2 cores with 1 thread scores
  0.5 here, with 2 threads 1.0; the first figure cannot tell them apart.

On a shared machine both fall with the other sessions' load (llama.cpp's seconds stretch, its threads
wait for cores), so compare a tree with its baseline from the same run, never across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "perf"))

import smoke_presets  # noqa: E402

LOG_ENV = "AECG_LLAMA_CALL_LOG"
SITECUSTOMIZE = """
import importlib.abc, importlib.util, json, os, sys, time

class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "llama_cpp.llama":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            _wrap(module.Llama)
        spec.loader.exec_module = exec_module
        return spec

def _wrap(cls):
    import llama_cpp
    real = cls.create_chat_completion
    def create_chat_completion(self, *args, **kwargs):
        llama_cpp.llama_perf_context_reset(self._ctx.ctx)
        t0 = time.time()
        out = real(self, *args, **kwargs)
        t1 = time.time()
        perf = llama_cpp.llama_perf_context(self._ctx.ctx)
        row = {"pid": os.getpid(), "t0": t0, "t1": t1, "threads": int(self.n_threads),
               "batch_threads": int(self.n_threads_batch), "p_eval_ms": perf.t_p_eval_ms, "eval_ms": perf.t_eval_ms}
        fd = os.open(os.environ["AECG_LLAMA_CALL_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(row) + "\\n").encode())
        finally:
            os.close(fd)
        return out
    cls.create_chat_completion = create_chat_completion

if os.environ.get("AECG_LLAMA_CALL_LOG"):
    sys.meta_path.insert(0, _Hook())
"""


def cores() -> int:
    return len(os.sched_getaffinity(0))


def figures(calls: list[dict], wall: float, n_cores: int) -> dict[str, float]:
    compute = sum((c["p_eval_ms"] + c["eval_ms"]) / 1000 for c in calls)
    threaded = sum(c["p_eval_ms"] / 1000 * c["batch_threads"] + c["eval_ms"] / 1000 * c["threads"] for c in calls)
    return {
        "calls": len(calls),
        "compute_s": compute,
        "efficiency": compute / (wall * n_cores),
        "core_efficiency": threaded / (wall * n_cores),
        "alone_calls": sum(c["threads"] == n_cores for c in calls),
    }


def run(tree: Path, exp: smoke_presets.Experiment, configs: list[str], root: Path, jobs: int, hook: Path) -> dict:
    log = root / "llama-calls.jsonl"
    env = {
        **os.environ,
        **smoke_presets.data_root_env(),
        "PYTHONPATH": f"{hook}{os.pathsep}{tree}",
        "AECG_JOBS": str(jobs),
        LOG_ENV: str(log),
    }
    start = time.perf_counter()
    for config in configs:
        cmd = [sys.executable, "-m", exp.entry, f"experiment={config}", f"runtime.results_root={root}"]
        cmd += [*smoke_presets.smoke_args(exp, config), f"hydra.launcher.n_jobs={jobs}", "runtime.progress=false"]
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"  {config} exited {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    wall = time.perf_counter() - start
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return {"wall": wall, **figures(calls, wall, cores())}


def export(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    (into / "tree.tar").write_bytes(archive)
    with tarfile.open(into / "tree.tar") as fh:
        fh.extractall(into / "tree", filter="data")
    return into / "tree"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="table1,edv")
    parser.add_argument("--configs", default="", help="comma list: only these configs of the experiments")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("AECG_JOBS", "2")))
    parser.add_argument("--baseline-ref", default=None)
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    picked = {s for s in args.configs.split(",") if s}
    import vs_inspect_ai

    print(f"{vs_inspect_ai.cpu_model()}, {cores()} usable cores, jobs {args.jobs}  [{vs_inspect_ai.load()}]")
    with tempfile.TemporaryDirectory(prefix="aecg-sweep-eff-") as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
        trees = [("this tree", ROOT)]
        if args.baseline_ref:
            trees.append((args.baseline_ref, export(args.baseline_ref, Path(tmp))))
        for exp, configs in smoke_presets.discover():
            if exp.name not in only or exp.entry != "aecg_bench.run":
                continue
            configs = [c for c in configs if not picked or c in picked]
            if not configs:
                continue
            print(f"\n{exp.name}: {', '.join(configs)}")
            for name, tree in trees:
                root = Path(tmp) / f"{exp.name}-{name.replace(' ', '_')}"
                root.mkdir()
                before = vs_inspect_ai.load()
                f = run(tree, exp, configs, root, args.jobs, hook)
                print(
                    f"  {name:<10} wall {f['wall'] / 60:5.1f} min, {f['calls']} model calls, llama.cpp "
                    f"{f['compute_s']:.0f} s; efficiency {f['efficiency']:.2f}, core efficiency "
                    f"{f['core_efficiency']:.2f} [target >= 0.9]; calls on every core {f['alone_calls']}  "
                    f"[{before} -> {vs_inspect_ai.load()}]",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
