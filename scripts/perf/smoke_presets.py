"""Each paper experiment's smoke preset: wall time, calls, tokens and tokens/s against its target.

    python scripts/perf/smoke_presets.py [--only table1,table2] [--jobs 2] [--results-root DIR]
    python scripts/perf/smoke_presets.py --from-results results      # read finished runs, run nothing
    python scripts/perf/smoke_presets.py --list                      # what would run
    python scripts/perf/smoke_presets.py --only table1 -- memory=aecg  # a slice: overrides after --

Experiments (issue 20's targets, 2 cores, offline, fresh cache): Table 1 (`aecg_table1_smoke`,
what `make reproduce-table1` runs with no model configured) < 10 min, Table 2 < 10 min, the
mechanism tests (`aecg_rq*_smoke`, run by `aecg_bench.mechanisms`) < 15 min, EDV's tables and figures
(every `edv_<name>` of `aecg_bench.analysis.edv_plan.EXPERIMENTS`, with the plan's own smoke overrides, as
`make reproduce-edv` runs them) < 20 min. An experiment whose configs are not on this branch is
listed as absent. Each experiment starts in a fresh results root of its own
(so a fresh LLM cache) unless --results-root names one, which they then share as `make reproduce-*` run
one after another would. Wall time is measured around the sweep
process; with --from-results it is the span from the earliest run start to the latest run finish.
Every figure is printed with the load average, because on a shared machine it means little without.

Coverage, from the records: how many runs did memory maintenance, which model roles were called,
and the memory methods' audit events by kind (e.g. AECG's `review_round`), so a preset that is
fast because it skips a code path shows it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "experiment"


def edv_smoke(config: str) -> list[str] | None:
    """EDV's smoke overrides for a config of its plan (`make reproduce-edv`'s own), None for any other."""
    from aecg_bench.analysis.edv_plan import EXPERIMENTS as PLAN
    from aecg_bench.analysis.edv_plan import smoke_overrides

    name = config.removeprefix("edv_")
    return smoke_overrides(name) if name in PLAN else None


@dataclass(frozen=True)
class Experiment:
    name: str
    pattern: str  # experiment config names (glob in conf/experiment)
    target_min: float
    entry: str = "aecg_bench.run"  # module run with `python -m`
    # overrides that make a paper config its smoke run (None: not part of this experiment);
    # without it the configs matched are smoke configs already
    smoke: Callable[[str], list[str] | None] | None = None


EXPERIMENTS = (
    Experiment("table1", "aecg_table1_smoke", 10),
    Experiment("table2", "aecg_table2_smoke", 10),
    Experiment("mechanisms", "aecg_rq*_smoke", 15, entry="aecg_bench.mechanisms"),
    Experiment("edv", "edv_*", 20, smoke=edv_smoke),
)


def discover(conf_dir: Path = CONF) -> list[tuple[Experiment, list[str]]]:
    """Each experiment with the smoke configs this branch has (maybe none)."""
    out = []
    for e in EXPERIMENTS:
        configs = sorted(p.stem for p in conf_dir.glob(f"{e.pattern}.yaml"))
        if e.smoke:
            configs = [c for c in configs if e.smoke(c) is not None]
        out.append((e, configs))
    return out


def smoke_args(exp: Experiment, config: str) -> list[str]:
    return (exp.smoke(config) or []) if exp.smoke else []


def result_names(config: str, conf_dir: Path = CONF, args: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The results directories a config writes to: its `experiment_name` (an `experiment_name=`
    override in `args` first, else the config's, else its own name) and, for the mechanism tests,
    the warm-up runs they share (`mechanism.warmup_name`)."""
    data = yaml.safe_load((conf_dir / f"{config}.yaml").read_text(encoding="utf-8")) or {}
    override = [a.partition("=")[2] for a in args if a.startswith("experiment_name=")]
    names = [override[-1] if override else str(data.get("experiment_name") or config)]
    warmup = (data.get("mechanism") or {}).get("warmup_name")
    return names + ([str(warmup)] if warmup else [])


@dataclass
class Stats:
    runs: int = 0
    complete: int = 0
    samples: int = 0
    calls: int = 0
    provider_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    sample_seconds: float = 0.0
    first_start: float | None = None
    last_end: float | None = None
    maintained_runs: int = 0
    roles: Counter[str] = field(default_factory=Counter)
    events: dict[str, Counter[str]] = field(default_factory=dict)  # memory method -> audit event kinds

    @property
    def span_s(self) -> float | None:
        if self.first_start is None or self.last_end is None:
            return None
        return max(self.last_end - self.first_start, 0.0)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line of a killed run
            continue
    return out


def collect(results_dirs: list[Path]) -> Stats:
    """Sum what the runs under these directories recorded (every attempt: all of it took time)."""
    st = Stats()
    for base in results_dirs:
        for run_json in sorted(base.rglob("run.json")) if base.exists() else []:
            run_dir = run_json.parent
            header = json.loads(run_json.read_text(encoding="utf-8"))
            records = _jsonl(run_dir / "samples.jsonl")
            st.runs += 1
            st.complete += header.get("status") == "complete"
            st.samples += len(records)
            starts = [header.get("started_at")] + [r.get("started_at") for r in records]
            ends = [header.get("finished_at")] + [
                r["started_at"] + r.get("seconds", 0.0) for r in records if r.get("started_at") is not None
            ]
            starts = [s for s in starts if s is not None]
            ends = [e for e in ends if e is not None]
            if starts:
                st.first_start = min(starts) if st.first_start is None else min(st.first_start, *starts)
            if ends:
                st.last_end = max(ends) if st.last_end is None else max(st.last_end, *ends)
            st.maintained_runs += any(r.get("maintain_round") is not None for r in records)
            for r in records:
                total = r.get("usage", {}).get("total", {})
                st.calls += int(total.get("calls", 0))
                st.provider_calls += int(total.get("provider_calls", 0))
                st.input_tokens += int(total.get("input_tokens", 0))
                st.output_tokens += int(total.get("output_tokens", 0))
                st.sample_seconds += float(r.get("seconds", 0.0))
                st.roles.update(r.get("usage", {}).get("by_role", {}).keys())
            memory = str(header.get("labels", {}).get("memory", "?"))
            kinds = st.events.setdefault(memory, Counter())
            kinds.update(e.get("event", "?") for e in _jsonl(run_dir / "memory" / "audit.jsonl"))
    return st


def verdict(wall_s: float | None, target_min: float, runs: int = 1) -> str:
    if wall_s is None or runs == 0:  # a sweep that failed at once is not "within target"
        return "no runs"
    return "OK" if wall_s <= target_min * 60 else "OVER TARGET"


def load_average() -> str:
    try:
        return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "load n/a"


def report(exp: Experiment, configs: list[str], st: Stats, wall_s: float | None) -> list[str]:
    wall = wall_s if wall_s is not None else st.span_s
    tokens = st.input_tokens + st.output_tokens
    rate = f"{tokens / wall:,.0f} tok/s ({st.output_tokens / wall:,.1f} generated/s)" if wall else "-"
    head = (
        f"{exp.name}: {', '.join(configs)}\n"
        f"  wall {'-' if wall is None else f'{wall / 60:.1f} min'} [target < {exp.target_min:g} min] "
        f"{verdict(wall, exp.target_min, st.runs)}; {st.runs} runs ({st.complete} complete), {st.samples} samples, "
        f"{st.sample_seconds / max(st.samples, 1):.1f} s/sample\n"
        f"  calls {st.calls:,} ({st.provider_calls:,} to the model), tokens {st.input_tokens:,} in + "
        f"{st.output_tokens:,} out; {rate}\n"
        f"  coverage: maintenance in {st.maintained_runs}/{st.runs} runs; roles {sorted(st.roles)}"
    )
    lines = [head]
    for memory, kinds in sorted(st.events.items()):
        shown = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "no audit events"
        lines.append(f"    {memory}: {shown}")
    return lines


def data_root_env(shared: Path = ROOT.parent / "shared" / "data") -> dict[str, str]:
    """The Makefile's data default (`../shared/data` when present), so the script run directly stays
    offline as `make` does; an `AECG_DATA_ROOT` already set wins."""
    if os.environ.get("AECG_DATA_ROOT") or not shared.is_dir():
        return {}
    return {"AECG_DATA_ROOT": str(shared.resolve())}


def run_sweep(exp: Experiment, config: str, results_root: Path, jobs: int, extra: list[str]) -> float:
    """Run one smoke config to completion in its own process; returns its wall seconds."""
    cmd = [sys.executable, "-m", exp.entry, f"experiment={config}", f"runtime.results_root={results_root}"]
    cmd += [*smoke_args(exp, config), *extra]
    if exp.entry == "aecg_bench.run":
        cmd += [f"hydra.launcher.n_jobs={jobs}", "runtime.progress=false"]
    print("$", " ".join(cmd), f"  [{load_average()}]", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "AECG_JOBS": str(jobs), **data_root_env()})
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"  {config} exited with code {proc.returncode}; figures below count what it recorded")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help=f"comma list of {', '.join(e.name for e in EXPERIMENTS)}")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("AECG_JOBS", "2")))
    parser.add_argument("--results-root", type=Path, default=None, help="default: a fresh temporary directory")
    parser.add_argument("--from-results", type=Path, default=None, help="read this results root; run nothing")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("overrides", nargs="*", help="after --: config overrides for every sweep (a slice)")
    args = parser.parse_args()

    names = {e.name for e in EXPERIMENTS}
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    if only - names:
        print(f"error: unknown experiment(s) {sorted(only - names)}; valid: {', '.join(sorted(names))}")
        return 2
    chosen = [(e, c) for e, c in discover() if not only or e.name in only]
    print(f"{os.cpu_count()} cores visible, {len(os.sched_getaffinity(0))} usable; jobs {args.jobs}; {load_average()}")
    if args.list:
        for exp, configs in chosen:
            print(f"{exp.name} [< {exp.target_min:g} min]: {', '.join(configs) or 'no smoke config on this branch'}")
        return 0
    tmp = None
    if args.from_results is None and args.results_root is None:
        tmp = tempfile.TemporaryDirectory(prefix="aecg-smoke-")
    root = args.from_results or args.results_root or Path(tmp.name)  # type: ignore[union-attr]
    try:
        for exp, configs in chosen:
            if not configs:
                print(f"{exp.name}: no smoke config on this branch ({exp.pattern}.yaml)")
                continue
            wall = None
            # each experiment its own fresh root (and so its own response cache) unless one was named:
            # Table 2's runs share calls with Table 1's and would otherwise be timed on Table 1's cache
            exp_root = root / exp.name if tmp is not None else root
            if args.from_results is None:
                wall = sum(run_sweep(exp, c, exp_root, args.jobs, args.overrides) for c in configs)
            names = (n for c in configs for n in result_names(c, args=smoke_args(exp, c)))
            st = collect([exp_root / n for n in dict.fromkeys(names)])
            shown = configs + ([f"SLICE {' '.join(args.overrides)}"] if args.overrides else [])
            print("\n".join(report(exp, shown, st, wall)), f"\n  [{load_average()}]", flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
