"""Run a paper experiment's sweep, then render its table: `make reproduce-table1 [PRESET=...]`.

    python scripts/reproduce.py table1 [--preset smoke|paper] [--model ID] [--memory-model ID]
                                       [--jobs N] [--runtime local|slurm|ray] [--dry-run] [--methods +a,b]
    python scripts/reproduce.py edv [--preset smoke|paper] [--only table1,fig4_epochs] [--pool NAME]
                                    [--jobs N] [--dry-run [--price IN,OUT] [--size BENCH=BUILD,EVAL]]

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

from aecg_bench.analysis.load import short_model_id
from aecg_bench.runner.identity import safe_label

ROOT = Path(__file__).resolve().parents[1]
TABLES = {
    "table1": ("aecg_table1", "scripts/make_table1.py"),
    "table2": ("aecg_table2", "scripts/make_table2.py"),
    "edv": ("edv", "scripts/make_edv_tables.py"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", choices=sorted([*TABLES, "mechanisms"]))
    parser.add_argument("--preset", choices=["smoke", "paper"], default=None)
    parser.add_argument("--model", default=None, help="litellm model id for the agents (paper: openai/gpt-4.1-mini)")
    parser.add_argument("--memory-model", default=None, help="litellm model id for memory-side processes")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("AECG_JOBS", "2")))
    parser.add_argument("--results-root", default="results")
    parser.add_argument(
        "--runtime", choices=["local", "slurm", "ray"], default="local", help="where runs execute (scale-out.md)"
    )
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument(
        "--methods",
        default=None,
        help="table1/table2 memory columns: '+a,b' adds methods (e.g. an installed plugin's) to the preset's, "
        "'a,b' replaces them",
    )
    parser.add_argument("--only", default=None, help="edv: comma-separated experiments (default: all)")
    parser.add_argument("--pool", default=None, help="edv: model config of the pool (smoke: edv_pool_local)")
    parser.add_argument("--price", default=None, help="edv --dry-run: IN,OUT dollars per million tokens")
    parser.add_argument("--size", action="append", default=[], help="edv --dry-run: BENCH=BUILD,EVAL tasks")
    args = parser.parse_args()
    if args.methods and args.table not in ("table1", "table2"):
        print(
            f"error: --methods applies to table1 and table2; {args.table}'s rows are "
            + (
                "AECG's own variants"
                if args.table == "mechanisms"
                else "arms (conf/arm/: a method, its models and protocol)"
            )
        )
        return 2

    if args.table == "edv":
        return reproduce_edv(args)
    experiment, table_script = TABLES.get(args.table, ("aecg_mechanisms", "scripts/make_mechanisms.py"))
    configured = bool(args.model or os.environ.get("OPENAI_API_KEY"))
    preset = args.preset or ("paper" if configured else "smoke")
    if preset == "smoke" and not args.preset and args.table == "mechanisms":
        print(
            "No model configured: running the mechanism tests' SMOKE preset in the scripted mock world "
            "(conf/preset/mechanisms_smoke.yaml), offline. Its numbers show each mechanism's direction; they are "
            "not comparable to the paper's. Set MODEL=... or OPENAI_API_KEY and PRESET=paper for a reproduction.\n"
        )
    elif preset == "smoke" and not args.preset:
        print(
            "No model configured (no MODEL=..., no OPENAI_API_KEY): running the SMOKE preset with the embedded "
            "SmolLM2-135M model, offline. Its numbers only show the pipeline works; they are not comparable to "
            "the paper's. Set MODEL=... or OPENAI_API_KEY and PRESET=paper for a real reproduction.\n"
        )
    if args.table == "mechanisms":
        return mechanisms(preset, args)
    if args.dry_run:
        return dry_run(experiment, args)
    name = f"{experiment}_smoke" if preset == "smoke" else experiment
    overrides = [*sweep_overrides(name, args), *overrides_from_args(args)]
    if args.methods:
        overrides.append(f"memory={','.join(memory_columns(name, args.methods))}")
    cmd = [sys.executable, "-m", "aecg_bench.run", *overrides]
    print("$", " ".join(cmd), flush=True)
    sweep = subprocess.run(cmd, cwd=ROOT)
    results = Path(args.results_root) / (f"{experiment}-smoke" if preset == "smoke" else experiment)
    if sweep.returncode != 0:
        print(f"the sweep exited with code {sweep.returncode}; rendering what finished (rerun to resume)")
    table = subprocess.run([sys.executable, table_script, str(results)], cwd=ROOT)
    return sweep.returncode or table.returncode


def sweep_overrides(experiment: str, args: argparse.Namespace) -> list[str]:
    """The experiment, results root and runtime of a sweep; local sweeps also get the job count."""
    out = [f"experiment={experiment}", f"runtime.results_root={args.results_root}", f"runtime={args.runtime}"]
    return [*out, f"hydra.launcher.n_jobs={args.jobs}"] if args.runtime == "local" else out


def memory_columns(experiment: str, methods: str) -> list[str]:
    """The memory methods a sweep runs: the experiment's own, plus `+a,b`, or exactly `a,b`."""
    from hydra import compose, initialize_config_dir

    from aecg_bench.run import CONF_DIR

    asked = [m.strip() for m in methods.lstrip("+").split(",") if m.strip()]
    if not methods.startswith("+"):
        return asked
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"experiment={experiment}"], return_hydra_config=True)
    own = [m.strip() for m in str(cfg.hydra.sweeper.params.memory).split(",")]
    return [*own, *(m for m in asked if m not in own)]


def overrides_from_args(args: argparse.Namespace) -> list[str]:
    """MODEL / MEMORY_MODEL as Hydra overrides; the memory side defaults to the agents' model (announced)."""
    if not (args.model or args.memory_model):
        return []
    agent = args.model or "openai/gpt-4.1-mini"
    memory = args.memory_model or agent
    if not args.memory_model:
        print(
            f"Memory-side processes run on {memory} too (the paper uses gpt-4o-mini there; "
            "set MEMORY_MODEL=openai/gpt-4o-mini to match). Tables label the assignment by its models.\n"
        )
    return model_overrides(agent, memory)


def model_overrides(agent: str, memory: str) -> list[str]:
    """Hydra overrides for agents on `agent` and memory-side processes on `memory`. The folder label
    names the models, not how they were configured: the same assignment written by
    conf/model/openai.yaml gets the same label (gpt-4.1-mini+gpt-4o-mini)."""
    return [
        "model=pair",
        f"model.models.agent.model={agent}",
        f"model.models.memory.model={memory}",
        f"model.label={safe_label(short_model_id(agent))}+{safe_label(short_model_id(memory))}",
    ]


def mechanisms(preset: str, args: argparse.Namespace) -> int:
    """RQ2-RQ4 (warm-up once per seed, then every variant from the same snapshot), then Table 3 and Figures 3-4.
    The smoke preset runs in the scripted mock world (seconds per run), not with a model."""
    suffix = "_smoke" if preset == "smoke" else ""
    code = 0
    extra = [] if preset == "smoke" else overrides_from_args(args)
    for test in ("rq2_scope", "rq3_drift", "rq4_triage"):
        cmd = [
            sys.executable,
            "-m",
            "aecg_bench.mechanisms",
            f"experiment=aecg_{test}{suffix}",
            f"runtime.results_root={args.results_root}",
            *extra,
        ]
        print("$", " ".join(cmd), flush=True)
        code = code or subprocess.run(cmd, cwd=ROOT).returncode
    smoke = ["--smoke"] if preset == "smoke" else []
    render = [sys.executable, "scripts/make_mechanisms.py", "--results-root", args.results_root, *smoke]
    return code or subprocess.run(render, cwd=ROOT).returncode


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


def reproduce_edv(args: argparse.Namespace) -> int:
    """EDV's Tables 1-5, sec. 5.4 and Figures 4-6: every sweep (resumable), then tables and figures.

    smoke (default without EDV_*_API_BASE): toy_tools, one seed, the embedded-model pool
    (edv_pool_local: ONE model under three temperatures) or --pool; paper: the experiment configs
    as they are (edv_pool_paper, seeds 0-2). See docs/memory/edv.md "Reproducing the paper"."""
    from aecg_bench.analysis.edv_plan import EXPERIMENTS, smoke_overrides

    configured = any(os.environ.get(f"EDV_{m}_API_BASE") for m in ("MINIMAX", "MIMO", "GLM"))
    preset = args.preset or ("paper" if configured else "smoke")
    only = args.only.split(",") if args.only else list(EXPERIMENTS)
    unknown = sorted(set(only) - set(EXPERIMENTS))
    if unknown:
        print(f"error: unknown EDV experiment {unknown[0]!r}; valid choices: {', '.join(EXPERIMENTS)}")
        return 2
    if args.dry_run:
        return dry_run_edv(args, only)
    if preset == "smoke" and not args.preset:
        print(
            "No EDV pool configured (no EDV_MINIMAX/MIMO/GLM_API_BASE): running the SMOKE preset on toy_tools with "
            "ONE embedded model under three temperatures, offline. It only shows the pipeline works; no EDV claim. "
            "Point conf/model/edv_pool_paper.yaml at the three models and use PRESET=paper for a reproduction.\n"
        )
    suffix = "-smoke" if preset == "smoke" else ""
    code = 0
    for name in only:
        overrides = sweep_overrides(f"edv_{name}", args)
        if preset == "smoke":
            overrides += smoke_overrides(name)
        if args.pool:
            overrides.append(f"model={args.pool}")
        cmd = [sys.executable, "-m", "aecg_bench.run", *overrides]
        print("$", " ".join(cmd), flush=True)
        rc = subprocess.run(cmd, cwd=ROOT).returncode
        if rc:
            print(f"the edv_{name} sweep exited with code {rc}; rendering what finished (rerun to resume)")
            code = code or rc
    renderers = {"scripts/make_edv_tables.py": False, "scripts/make_edv_figures.py": True}
    for script, figures in renderers.items():
        if any(name.startswith("fig") == figures for name in only):
            cmd = [sys.executable, script, args.results_root, f"--suffix={suffix}"]
            code = code or subprocess.run(cmd, cwd=ROOT).returncode
    return code


def dry_run_edv(args: argparse.Namespace, only: list[str]) -> int:
    """Calls, tokens and dollars of the paper preset, scaled from the smoke runs' measured usage."""
    from aecg_bench.analysis.edv_plan import DEFAULT_PRICE, estimate, parse_sizes

    price = tuple(float(p) for p in args.price.split(",")) if args.price else DEFAULT_PRICE
    try:
        sizes = parse_sizes(args.size)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    est = estimate(Path(args.results_root), only, price=(price[0], price[1]), sizes=sizes)
    if est.empty:
        print(
            f"no EDV smoke results under {args.results_root}: run `make reproduce-edv` first (offline, "
            "toy_tools), then the dry run prices the paper preset from it."
        )
        return 2
    print(
        "Estimated usage of the EDV paper preset (3 seeds, the paper's benchmarks at the sizes below), scaled from "
        "the smoke runs' tokens per build and per test task on toy_tools. A rough lower-bound guide: tau2 and "
        f"Mind2Web tasks are longer than toy_tools'. Dollars at ${price[0]}/M input, ${price[1]}/M output tokens "
        "for every pool model (default: MiniMax-M2.1's list price as documented for litellm's MiniMax provider; "
        "pass --price IN,OUT for yours; self-hosted vLLM costs GPU hours instead).\n"
    )
    shown = est.astype({"calls": int, "tokens": int}).round({"dollars": 2})
    print(shown.to_markdown(index=False, intfmt=","))
    known = est[est["dollars"].notna()]
    print(
        f"\nTotal: {known['calls'].sum():,.0f} calls, {known['tokens'].sum():,.0f} tokens, ${known['dollars'].sum():,.2f}"
    )
    if len(known) < len(est):
        print("Rows without a size (nan) are not in the total: pass --size BENCH=BUILD,EVAL.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
