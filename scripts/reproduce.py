"""Run a paper experiment's sweep, then render its table: `make reproduce-table1 [PRESET=...]`.

    python scripts/reproduce.py table1 [--preset smoke|paper] [--model ID] [--memory-model ID] [--limit N]
                                       [--jobs N] [--runtime local|slurm|ray] [--dry-run] [--methods +a,b]
    python scripts/reproduce.py edv [--preset smoke|paper] [--only table1,fig4_epochs] [--pool NAME]
                                    [--limit N] [--jobs N] [--dry-run [--price IN,OUT] [--size BENCH=BUILD,EVAL]]

With no model configured (no --model and no OPENAI_API_KEY) the smoke preset
runs: the same grid with the embedded model, offline; its numbers only show
that the path works. Re-running resumes; a finished sweep re-renders the
table from its results with no model call.

--limit N rehearses the paper preset: its exact configuration on the first N
samples of every split, with --model (default: the embedded `local` model;
EDV: --pool, default edv_pool_local), offline (aecg_bench/rehearsal.py), into
results/<experiment>-rehearsal/, never pooled with a paper run. --dry-run prices
the paper preset from the rehearsal's records (low / expected / high calls,
tokens, dollars and wall time per cell; docs/infra/cost.md).
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
    parser.add_argument("--limit", type=int, default=None, help="rehearse the paper preset on N samples per cell")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument(
        "--methods",
        default=None,
        help="table1/table2 memory columns: '+a,b' adds methods (e.g. an installed plugin's) to the preset's, "
        "'a,b' replaces them",
    )
    parser.add_argument("--only", default=None, help="edv: comma-separated experiments (default: all)")
    parser.add_argument("--pool", default=None, help="edv: model config of the pool (smoke: edv_pool_local)")
    parser.add_argument("--price", default=None, help="--dry-run: IN,OUT $/M tokens for models the table lacks")
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
    if args.limit is not None and (args.limit < 1 or args.preset == "smoke"):
        parser.error("--limit N (N >= 1) rehearses the paper preset: use it with --preset paper or no --preset")
    if args.limit is not None:
        args.preset = "paper"

    if args.table == "edv":
        return reproduce_edv(args)
    experiment, table_script = TABLES.get(args.table, ("aecg_mechanisms", "scripts/make_mechanisms.py"))
    if args.dry_run:
        return dry_run(MECHANISM_EXPERIMENTS if args.table == "mechanisms" else [experiment], args)
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
    if args.limit is not None:
        return rehearse(experiment, table_script, args)
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


def rehearsal_data(args: argparse.Namespace) -> Path:
    """The rehearsal's data root: the real data linked, FEVER's page store, the tests' hub fixtures."""
    from aecg_bench.rehearsal import prepare_data

    sys.path.insert(0, str(ROOT))  # the fixtures live in the tests
    from tests.test_mind2web import make_data
    from tests.test_mmtb import ENTRY_1, ENTRY_2, write_entries

    return prepare_data(
        (Path(args.results_root) / ".rehearsal-data").resolve(),
        mind2web=make_data,
        # the tests' two entries fall in the held-out half; a copy of the first under an id that hashes
        # into the train half gives EDV's build phase a mission
        mmtb=lambda root: write_entries(root, [ENTRY_1, ENTRY_2, {**ENTRY_1, "id": "e1-0"}])[1],
    )


def rehearsal_setup(experiment: str, args: argparse.Namespace, limit: int | None = None) -> list[str]:
    """Overrides of one experiment's rehearsal (its notes printed, one line each) plus its model."""
    from aecg_bench.rehearsal import model_override, rehearsal_overrides

    overrides, notes = rehearsal_overrides(experiment, limit=limit or args.limit, data_dir=rehearsal_data(args))
    for note in notes:
        print(f"offline equivalent: {note}")
    if experiment.startswith("edv_"):
        return [*overrides, f"model={args.pool or 'edv_pool_local'}"]
    return [*overrides, *(model_override(args.model) or overrides_from_args(args))]


def rehearsal_banner(what: str, args: argparse.Namespace, model: str) -> None:
    print(
        f"REHEARSAL of {what}'s paper preset: its exact configuration on the first {args.limit} sample(s) of every "
        f"split, with {model}, offline; results under <experiment>-rehearsal, marked `rehearsal`, never pooled "
        "with a paper run. Then `--dry-run` prices the paper preset from these records (docs/infra/cost.md).\n",
        flush=True,
    )


def rehearse(experiment: str, table_script: str, args: argparse.Namespace) -> int:
    """The paper preset's sweep on LIMIT samples per cell, then its table from the rehearsal folder."""
    from aecg_bench.rehearsal import SUFFIX

    rehearsal_banner(experiment, args, args.model or "the embedded model (local)")
    cmd = [
        sys.executable,
        "-m",
        "aecg_bench.run",
        *sweep_overrides(experiment, args),
        *rehearsal_setup(experiment, args),
        *([f"memory={','.join(memory_columns(experiment, args.methods))}"] if args.methods else []),
    ]
    print("$", " ".join(cmd), flush=True)
    sweep = subprocess.run(cmd, cwd=ROOT)
    if sweep.returncode != 0:
        print(f"the sweep exited with code {sweep.returncode}; rendering what finished (rerun to resume)")
    table = subprocess.run(
        [sys.executable, table_script, str(Path(args.results_root) / f"{experiment}{SUFFIX}")], cwd=ROOT
    )
    return sweep.returncode or table.returncode


def mechanisms(preset: str, args: argparse.Namespace) -> int:
    """RQ2-RQ4 (warm-up once per seed, then every variant from the same snapshot), then Table 3 and Figures 3-4.
    The smoke preset runs in the scripted mock world (seconds per run), not with a model. A rehearsal's
    limit counts the whole warm-up + evaluation stream: at least 2, so both phases have a task."""
    suffix = "_smoke" if preset == "smoke" else ""
    code = 0
    extra = [] if preset == "smoke" else overrides_from_args(args)
    if args.limit is not None:
        rehearsal_banner("the mechanism tests", args, args.model or "the embedded model (local)")
    for test in ("rq2_scope", "rq3_drift", "rq4_triage"):
        if args.limit is not None:
            extra = [
                *rehearsal_setup(f"aecg_{test}", args, limit=max(args.limit, 2)),
                "mechanism.warmup_name=aecg_mechanisms_warmup-rehearsal",
            ]
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
    flag = ["--smoke"] if preset == "smoke" else ["--rehearsal"] if args.limit is not None else []
    render = [sys.executable, "scripts/make_mechanisms.py", "--results-root", args.results_root, *flag]
    return code or subprocess.run(render, cwd=ROOT).returncode


MECHANISM_EXPERIMENTS = ["aecg_mechanisms_warmup", "aecg_rq2_scope", "aecg_rq3_drift", "aecg_rq4_triage"]


def dry_run(experiments: list[str], args: argparse.Namespace, *, edv: bool = False) -> int:
    """Price the paper preset of `experiments` from their rehearsal's records (aecg_bench/analysis/cost_model.py)."""
    from omegaconf import OmegaConf

    from aecg_bench.analysis import cost_model as cm
    from aecg_bench.analysis.edv_plan import DEFAULT_PRICE, SEEDS, parse_sizes
    from aecg_bench.llm.pricing import PRICE_TABLE_VERSION
    from aecg_bench.rehearsal import SUFFIX, paper_grid
    from aecg_bench.results_format import read_runs

    roots = [Path(args.results_root) / f"{e}{SUFFIX}" for e in experiments]
    runs = [run for root in roots for run in read_runs(root)]
    if not runs:
        target = "edv" if edv else experiments[-1].split("_")[-1] if "rq" not in experiments[-1] else "mechanisms"
        print(
            f"no rehearsal results under {args.results_root} ({roots[-1].name}, ...): run "
            f"`make reproduce-{target} PRESET=paper LIMIT=1` first (offline, the embedded model; docs/infra/cost.md), "
            "then the dry run prices the paper preset from its records."
        )
        return 2
    try:
        sizes = parse_sizes(args.size)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    fallback = tuple(float(p) for p in args.price.split(",")) if args.price else DEFAULT_PRICE
    models, roles = paper_models(args, edv=edv)
    price, table = cm.role_prices(models, roles, (fallback[0], fallback[1]))
    throughput = cm.Throughput()
    samples = cm.sample_rows(runs, price, throughput, SUFFIX)
    every = int(OmegaConf.load(ROOT / "conf" / "config.yaml").protocol.maintain_every)
    grid = {e: paper_grid(e) for e in experiments}
    try:
        est = cm.estimate(
            samples,
            lambda e, b, p: cm.paper_samples(e, b, p, sizes),
            seeds=SEEDS,
            maintain_every=every,
            grid=grid,
            task_steps=cm.FIXTURE_TASK_STEPS,
        )
    except KeyError as exc:
        print(f"error: {exc.args[0]}")
        return 2
    est["memory_side_dollars"] = est["expected_memory_dollars"] + est["expected_maintenance_dollars"]
    shown = ", ".join(
        f"{label} ${p_in:g}/M in, ${p_out:g}/M out" + (" (assumed: --price)" if assumed else "")
        for label, (p_in, p_out, assumed) in table.items()
    )
    print(
        f"Cost of the paper preset of {', '.join(experiments)} ({SEEDS} seeds, the paper's sample counts), "
        f"calibrated from the rehearsal's {len(samples)} sample records ({len(runs)} runs). Prices (table "
        f"{PRICE_TABLE_VERSION}): {shown}. Range: low = agents stop at half the rehearsal's steps, expected = as "
        "measured, high = every sample runs its full step budget. The rehearsal's model writes replies of its own "
        "length: see docs/infra/cost.md for how its figures translate to the paper's models.\n"
    )
    cols = {
        "experiment": "experiment",
        "benchmark": "benchmark",
        "framework": "framework",
        "memory": "memory",
        "phase": "phase",
        "epoch": "epoch",
        "measured": "rehearsed",
        "samples": "samples",
        "expected_calls": "calls",
        "expected_input_tokens": "in tokens",
        "expected_output_tokens": "out tokens",
        "low_dollars": "$ low",
        "expected_dollars": "$ expected",
        "high_dollars": "$ high",
        "memory_side_dollars": "$ memory side",
        "expected_user_dollars": "$ user sim",
        "shared_with": "counted in",
    }
    view = est.sort_values(cm.CELL, kind="stable")[list(cols)]
    counts = ["samples", "expected_calls", "expected_input_tokens", "expected_output_tokens"]
    view = view.astype({c: int for c in counts}).rename(columns=cols)
    view["rehearsed"] = view["rehearsed"].map({True: "yes", False: "no"})
    print(view.to_markdown(index=False, intfmt=",", floatfmt=",.2f"))
    limits = cm.Limits(jobs=args.jobs, **rate_limits(models))
    print()
    for level in cm.LEVELS:
        tokens = est[f"{level}_input_tokens"].sum() + est[f"{level}_output_tokens"].sum()
        hours = cm.wall_seconds(est, level, limits) / 3600
        print(
            f"Total {level}: {est[f'{level}_calls'].sum():,.0f} calls, {tokens:,.0f} tokens "
            f"({est[f'{level}_input_tokens'].sum():,.0f} in, {est[f'{level}_output_tokens'].sum():,.0f} out), "
            f"${est[f'{level}_dollars'].sum():,.2f}, {hours:,.1f} h wall at {limits.jobs} parallel runs"
        )
    parts = {g: est[f"expected_{g}_dollars"].sum() for g in cm.GROUPS}
    print(
        f"Expected dollars by side: agents ${parts['agent']:,.2f}, user simulator ${parts['user']:,.2f}, "
        f"memory side ${parts['memory'] + parts['maintenance']:,.2f} (of which maintenance rounds, one per {every} "
        f"samples: ${parts['maintenance']:,.2f})"
    )
    wanted = sum(len(cells) for cells in grid.values())
    if wanted:
        unpriced = wanted - len(est[est["experiment"].isin(list(grid))])
        print(
            f"{int((~est['measured']).sum())} of the grid's {wanted} cells were not rehearsed: priced from the same "
            "benchmark x framework (else benchmark) and the method's rehearsed cells"
            + (f"; {unpriced} cells have no rehearsed benchmark and are NOT in the total" if unpriced else "")
        )
    cut = est[est["at_window"]]
    if len(cut):
        names = ", ".join(sorted({f"{r.benchmark}/{r.framework}" for r in cut.itertuples()}))
        print(
            f"prompts reached the rehearsal model's context window (cut, so the paper's are longer: tokens "
            f"here are a floor) in: {names}"
        )
    for source, note in (
        ("other cells of the method", "memory side priced from the same method's other cells (none measured here)"),
        ("none measured", "NO memory-side call measured anywhere: priced $0, rehearse more samples or a paid model"),
    ):
        cells = est[est["memory_side"] == source]
        if len(cells):
            names = ", ".join(sorted({f"{r.memory} ({r.benchmark}/{r.framework})" for r in cells.itertuples()}))
            print(f"{note}: {names}")
    return 0


def paper_models(args: argparse.Namespace, *, edv: bool) -> tuple[dict[str, dict], dict[str, str]]:
    """The paper preset's model assignment (the model config its experiments name, or MODEL/MEMORY_MODEL)."""
    from omegaconf import OmegaConf

    if not edv and (args.model or args.memory_model) and args.model not in ("local", "embedded_server", "server"):
        agent = args.model or "openai/gpt-4.1-mini"
        memory = args.memory_model or agent
        return {"agent": {"model": agent}, "memory": {"model": memory}}, {
            "agent": "agent",
            "replay": "agent",
            "default": "memory",
        }
    name = args.pool if edv and args.pool and args.pool != "edv_pool_local" else "edv_pool_paper" if edv else "openai"
    raw = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "model" / f"{name}.yaml"), resolve=False)
    return dict(raw["models"]), dict(raw["roles"])


def rate_limits(models: dict[str, dict]) -> dict[str, float | None]:
    """The tightest per-minute limits any model of the assignment is configured with (none: unbounded)."""
    rpm = [m["rate_limit"].get("requests_per_minute") for m in models.values() if m.get("rate_limit")]
    tpm = [m["rate_limit"].get("tokens_per_minute") for m in models.values() if m.get("rate_limit")]
    return {
        "requests_per_minute": min([r for r in rpm if r], default=None),
        "tokens_per_minute": min([t for t in tpm if t], default=None),
    }


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
        return dry_run([f"edv_{name}" for name in only], args, edv=True)
    if args.limit is not None:
        rehearsal_banner("EDV", args, f"the pool {args.pool or 'edv_pool_local'}")
    elif preset == "smoke" and not args.preset:
        print(
            "No EDV pool configured (no EDV_MINIMAX/MIMO/GLM_API_BASE): running the SMOKE preset on toy_tools with "
            "ONE embedded model under three temperatures, offline. It only shows the pipeline works; no EDV claim. "
            "Point conf/model/edv_pool_paper.yaml at the three models and use PRESET=paper for a reproduction.\n"
        )
    suffix = "-smoke" if preset == "smoke" else "-rehearsal" if args.limit is not None else ""
    code = 0
    for name in only:
        overrides = sweep_overrides(f"edv_{name}", args)
        if args.limit is not None:
            overrides += rehearsal_setup(f"edv_{name}", args)
        elif preset == "smoke":
            overrides += smoke_overrides(name)
        if args.pool and args.limit is None:
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


if __name__ == "__main__":
    sys.exit(main())
