"""Run a paper experiment's sweep, then render its table: `make reproduce-table1 [PRESET=...]`.

    python scripts/reproduce.py table1 [--preset smoke|paper] [--model ID] [--memory-model ID]
                                       [--jobs N] [--runtime local|slurm|ray] [--dry-run]

With no model configured (no --model and no OPENAI_API_KEY) the smoke preset
runs: the same grid with the embedded model, offline; its numbers only show
that the path works. Re-running resumes; a finished sweep re-renders the
table from its results with no model call. --dry-run estimates the calls,
tokens and dollars of the paper preset from the smoke run's measured usage.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from aecg_bench.runner.identity import safe_label

ROOT = Path(__file__).resolve().parents[1]
TABLES = {
    "table1": ("aecg_table1", "scripts/make_table1.py"),
    "table2": ("aecg_table2", "scripts/make_table2.py"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", choices=sorted(TABLES))
    parser.add_argument("--preset", choices=["smoke", "paper"], default=None)
    parser.add_argument("--model", default=None, help="litellm model id for the agents (paper: openai/gpt-4.1-mini)")
    parser.add_argument("--memory-model", default=None, help="litellm model id for memory-side processes")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("AECG_JOBS", "2")))
    parser.add_argument("--results-root", default="results")
    parser.add_argument(
        "--runtime", choices=["local", "slurm", "ray"], default="local", help="where runs execute (scale-out.md)"
    )
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()

    experiment, table_script = TABLES[args.table]
    configured = bool(args.model or os.environ.get("OPENAI_API_KEY"))
    preset = args.preset or ("paper" if configured else "smoke")
    if preset == "smoke" and not args.preset:
        print(
            "No model configured (no MODEL=..., no OPENAI_API_KEY): running the SMOKE preset with the embedded "
            "SmolLM2-135M model, offline. Its numbers only show the pipeline works; they are not comparable to "
            "the paper's. Set MODEL=... or OPENAI_API_KEY and PRESET=paper for a real reproduction.\n"
        )
    if args.dry_run:
        return dry_run(experiment, args)
    name = f"{experiment}_smoke" if preset == "smoke" else experiment
    overrides = [
        f"experiment={name}",
        f"runtime.results_root={args.results_root}",
        f"runtime={args.runtime}",
    ]
    if args.runtime == "local":
        overrides.append(f"hydra.launcher.n_jobs={args.jobs}")
    if args.model or args.memory_model:
        agent = args.model or "openai/gpt-4.1-mini"
        memory = args.memory_model or agent
        overrides += [
            "model=pair",
            f"model.models.agent.model={agent}",
            f"model.models.memory.model={memory}",
            f"model.label={safe_label(agent)}+{safe_label(memory)}",
        ]
    cmd = [sys.executable, "-m", "aecg_bench.run", *overrides]
    print("$", " ".join(cmd), flush=True)
    sweep = subprocess.run(cmd, cwd=ROOT)
    results = Path(args.results_root) / (f"{experiment}-smoke" if preset == "smoke" else experiment)
    if sweep.returncode != 0:
        print(f"the sweep exited with code {sweep.returncode}; rendering what finished (rerun to resume)")
    table = subprocess.run([sys.executable, table_script, str(results)], cwd=ROOT)
    return sweep.returncode or table.returncode


def dry_run(experiment: str, args: argparse.Namespace) -> int:
    """Price the paper preset from the smoke run's measured tokens per sample."""
    from aecg_bench.analysis.load import load
    from aecg_bench.analysis.paper import estimate_paper_cost
    from aecg_bench.llm.pricing import PRICES

    smoke_dir = Path(args.results_root) / f"{experiment}-smoke"
    if not any(smoke_dir.rglob("samples.jsonl")):
        print(
            f"no smoke results in {smoke_dir}: run `make reproduce-{experiment.split('_')[-1]}` first "
            "(offline, with the embedded model), then the dry run prices the paper preset from it."
        )
        return 2
    agent = PRICES["gpt-4.1-mini"]
    memory = PRICES["gpt-4o-mini"]
    est = estimate_paper_cost(
        load(smoke_dir), agent_price=(agent.input, agent.output), memory_price=(memory.input, memory.output)
    )
    print(
        f"Estimated cost of the paper preset of {experiment} (gpt-4.1-mini agents, gpt-4o-mini memory side, "
        "3 seeds, full benchmark sizes), scaled from the smoke run's tokens per sample. The embedded model writes "
        "short replies and the smoke preset cuts step limits, so treat this as a lower-bound guide.\n"
    )
    shown = est.astype({"calls": int, "tokens": int}).round({"dollars": 2})
    print(shown.to_markdown(index=False, intfmt=","))
    print(f"\nTotal: {est['calls'].sum():,.0f} calls, {est['tokens'].sum():,.0f} tokens, ${est['dollars'].sum():,.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
