"""Results folders written in the record format (aecg_bench.results_format) without running anything:
fast, deterministic fixtures for the tables and the report."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aecg_bench.results_format import RUN_JSON, SAMPLES, SCHEMA_VERSION

OPENAI_MODELS = {
    "gpt-4.1-mini": {"model": "openai/gpt-4.1-mini", "temperature": 0.0},
    "gpt-4o-mini": {"model": "openai/gpt-4o-mini", "temperature": 0.0},
}
OPENAI_ROLES = {"agent": "gpt-4.1-mini", "default": "gpt-4o-mini"}
MOCK_MODELS = {"mock": {"model": "mock/oracle", "temperature": 0.0}}
MOCK_ROLES = {"default": "mock"}


def write_run(
    root: Path,
    *,
    experiment: str,
    framework: str,
    benchmark: str,
    memory: str,
    seed: int,
    successes: Iterable[bool],
    model_label: str = "mock",
    models: dict[str, Any] | None = None,
    roles: dict[str, str] | None = None,
    protocol: dict[str, Any] | None = None,
    n_eval: int | None = None,
    folder: str | None = None,
    identity: dict[str, Any] | None = None,
    metrics: dict[str, float] | None = None,
    n_build: int = 0,
) -> Path:
    """One run folder with one eval record per success flag (tokens: agent 100+10, memory 50+5);
    `identity` (the run's config, as EDV's tables read it) and per-record `metrics` when given;
    `n_build` memory-construction records first (phase build: 400+40 tokens on the distiller, $0.004)."""
    successes = list(successes)
    run_dir = root / experiment / benchmark / framework / memory / (folder or model_label) / f"seed={seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    header = {
        "schema": SCHEMA_VERSION,
        "status": "complete",
        "labels": {
            "experiment": experiment,
            "benchmark": benchmark,
            "framework": framework,
            "memory": memory,
            "model": model_label,
            "seed": seed,
        },
        "protocol": protocol or {"mode": "online", "label_source": "environment", "limit": None, "max_steps": None},
        "n_eval": len(successes) if n_eval is None else n_eval,
        "models": models or MOCK_MODELS,
        "roles": roles or MOCK_ROLES,
        **({"identity": identity} if identity is not None else {}),
    }
    (run_dir / RUN_JSON).write_text(json.dumps(header), encoding="utf-8")
    lines = []
    for i in range(n_build):
        build = {"input_tokens": 400, "output_tokens": 40, "calls": 2, "cost": 0.004}
        lines.append(
            json.dumps(
                {
                    "position": i,
                    "attempt": 0,
                    "sample_id": f"b{i}",
                    "phase": "build",
                    "status": "ok",
                    "success": True,
                    "value": 1.0,
                    "steps": 3,
                    "invalid_actions": 0,
                    "decisions": 2,
                    "usage": {"total": build, "by_role": {"distiller": build}},
                }
            )
        )
    for i, ok in enumerate(successes):
        by_role = {
            "agent": {"input_tokens": 100, "output_tokens": 10, "calls": 1, "cost": 0.001},
            "memory": {"input_tokens": 50, "output_tokens": 5, "calls": 1, "cost": 0.0005},
        }
        lines.append(
            json.dumps(
                {
                    "position": n_build + i,
                    "attempt": 0,
                    "sample_id": f"s{i}",
                    "phase": "eval",
                    "status": "ok",
                    "success": bool(ok),
                    "value": float(ok),
                    "steps": 3,
                    "invalid_actions": 0,
                    "decisions": 2,
                    **({"metrics": metrics} if metrics is not None else {}),
                    "usage": {
                        "total": {"input_tokens": 150, "output_tokens": 15, "calls": 2, "cost": 0.0015},
                        "by_role": by_role,
                    },
                }
            )
        )
    (run_dir / SAMPLES).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run_dir


def write_grid(
    root: Path,
    *,
    experiment: str,
    frameworks: Iterable[str],
    benchmarks: Iterable[str],
    memories: Iterable[str],
    seeds: Iterable[int],
    n: int,
    rate: Callable[[str, str, str], float],
    **kwargs: Any,
) -> None:
    """A full grid; each cell succeeds on the first round(rate * n) samples of every seed
    (a deterministic pattern, so paired differences are exact)."""
    for fw in frameworks:
        for bench in benchmarks:
            for mem in memories:
                k = round(rate(fw, bench, mem) * n)
                for seed in seeds:
                    write_run(
                        root,
                        experiment=experiment,
                        framework=fw,
                        benchmark=bench,
                        memory=mem,
                        seed=seed,
                        successes=[i < k for i in range(n)],
                        **kwargs,
                    )


# -- a mock sweep of every experiment the report reads ---------------------------------------

POOL_MODELS = {f"m{i}": {"model": f"mock/m{i}", "temperature": 0.0} for i in (1, 2, 3)}
EDV_MEMORY = {  # table row -> (memory label, memory name), as conf/arm/ writes them
    **{f"nm_b{i}": ("no_memory", "no_memory") for i in (1, 2, 3)},
    **{f"rb_b{i}": ("reasoningbank_build_then_freeze", "reasoningbank") for i in (1, 2, 3)},
    "rb_contaminated_b3": ("reasoningbank_contaminated_build_then_freeze", "reasoningbank_contaminated"),
}
MIND2WEB = {
    "element_acc": 0.5,
    "action_f1": 0.6,
    "step_success": 0.4,
    "upper_bound_step": 0.7,
    "upper_bound_task": 0.25,
}


def write_edv_run(
    root: Path,
    experiment: str,
    row: str,
    *,
    seed: int,
    successes: list[bool],
    protocol: dict[str, Any],
    params: dict[str, Any] | None = None,
    label: str | None = None,
    metrics: dict[str, float] | None = None,
) -> Path:
    """One EDV-table run: a single-backbone row (nm_b2, rb_b3, ...) on pool model m<i>, any other
    row an ensemble memory of that name on the pool."""
    memory, name = EDV_MEMORY.get(row, (row, "edv" if row.startswith("edv") else row))
    backbone = row.rsplit("_b", 1)[1] if row in EDV_MEMORY else None
    model = f"m{backbone}" if backbone else "pool"
    roles = {f"backbone_{i}": f"m{i}" for i in (1, 2, 3)} | {"default": f"m{backbone or 1}"}
    config = {"memory": {"name": name, "label": label or memory, "params": params or {}}}
    return write_run(
        root,
        experiment=experiment,
        framework="single",
        benchmark="toy_tools",
        memory=label or memory,
        seed=seed,
        successes=successes,
        model_label=model,
        models=POOL_MODELS,
        roles=roles,
        protocol=protocol,
        identity={"config": config},
        metrics=metrics,
        n_build=2 if protocol.get("mode") == "build_then_freeze" else 0,
    )


def _edv_rows(name: str) -> list[tuple[str, dict[str, Any], str | None, dict[str, Any]]]:
    """(row, memory params, memory label, protocol change) of every run of one EDV experiment."""
    if name == "table1":
        return [(r, {}, None, {}) for r in (*EDV_MEMORY, "judge", "router", "edv") if r != "rb_contaminated_b3"]
    if name in ("table2", "table3"):  # a few rows keep the default tier fast; the others show "–"
        return [(r, {}, None, {}) for r in ("nm_b1", "rb_b1", "judge", "edv")]
    if name == "table4":
        rows = ("edv_sa_basic", "edv_sa_selfverify", "edv_sa_indep_verifier", "edv_ma_selfdistill", "edv")
        return [(r, {}, None, {}) for r in rows]
    if name == "table5":
        return [(r, {}, None, {}) for r in ("edv", "edv_fixed", "edv_only_shared", "edv_only_private")]
    if name == "contamination":
        return [("rb_b3", {}, None, {}), ("rb_contaminated_b3", {}, None, {})]
    if name == "fig4_epochs":
        return [
            (r, {}, f"{lbl}_epochs{e}", {"build_epochs": e})
            for e in (1, 2)
            for r, lbl in (("edv", "edv"), ("rb_b3", "reasoningbank"))
        ]
    if name == "fig5_topk":
        return [
            (r, {"top_k": k}, f"{lbl}_top{k}", {})
            for k in (0, 1, 2)
            for r, lbl in (("edv", "edv"), ("rb_b3", "reasoningbank"))
        ]
    return [("edv", {"shared_threshold": t}, f"edv_tau{t:.2f}", {}) for t in (0.7, 0.8)]


def write_edv_experiment(
    root: Path, name: str, *, seeds: Iterable[int] = (0, 1), n: int = 4, smoke: bool = True
) -> None:
    """Every run of conf/experiment/edv_<name>.yaml at a tiny size; EDV rows succeed more often."""
    experiment = f"edv_{name}" + ("-smoke" if smoke else "")
    sizes = {"limit": n, "max_steps": 6} if smoke else {"limit": None, "max_steps": None}
    for row, params, label, change in _edv_rows(name):
        k = n if row == "edv" else n // 2
        protocol = {"mode": "build_then_freeze", "label_source": "none", "build_epochs": 1, **sizes, **change}
        for seed in seeds:
            write_edv_run(
                root,
                experiment,
                row,
                seed=seed,
                successes=[i < k for i in range(n)],
                protocol=protocol,
                params=params,
                label=label,
                metrics=MIND2WEB if name == "table2" else None,
            )


MECHANISM_VARIANTS = {
    "rq2_scope": (("hard_scope", "flat_scope"), ("cross_scope_use_pct", "success", "exposure")),
    "rq3_drift": (
        ("dual_timescale", "cumulative_only", "no_governance"),
        ("uses_to_review", "polluted_failed_uses", "post_corruption_success_pct"),
    ),
    "rq4_triage": (
        ("exposure_aware", "risk_only", "random"),
        ("exposure_covered_first_two_reviews_pct", "failed_task_exposure"),
    ),
}


def write_mechanism_test(root: Path, test: str, *, seeds: Iterable[int] = (0, 1), smoke: bool = True) -> Path:
    """One mechanism test's folder: its variant runs (records) and the `mechanisms.csv` the protocol writes."""
    from aecg_bench.mechanisms.protocol import COLUMNS

    folder = root / (f"aecg_{test}" + ("-smoke" if smoke else ""))
    variants, quantities = MECHANISM_VARIANTS[test]
    lines = [",".join(COLUMNS)]
    for seed in seeds:
        for v, variant in enumerate(variants):
            write_run(
                root,
                experiment=folder.name,
                framework="agentnet",
                benchmark="toy",
                memory=variant,
                seed=seed,
                successes=[i <= v for i in range(3)],
                protocol={"mode": "online", "phases": "eval", "limit": 3 if smoke else None, "max_steps": None},
            )
            lines += [f"{test},{q},{variant},{seed},{10.0 * (v + 1) + seed}" for q in quantities]
    (folder / "mechanisms.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def write_every_experiment(root: Path, *, n: int = 4) -> None:
    """Synthetic results in every experiment folder the report reads: AECG Tables 1-2 (Table 1 at the
    paper preset's shape, Table 2 smoke), the three mechanism tests and every EDV experiment (Table 1
    and RQ2 unmarked, the rest smoke), so both caption kinds appear."""
    from aecg_bench.analysis.edv_plan import EXPERIMENTS

    full = {"mode": "online", "label_source": "environment", "limit": None, "max_steps": None}
    rates = {"no_memory": 0.25, "conmem": 0.5, "aecg": 0.75, "aecg_flat_scope": 0.5}
    write_grid(
        root,
        experiment="aecg_table1",
        frameworks=("macnet",),
        benchmarks=("pddl",),
        memories=("no_memory", "conmem", "aecg"),
        seeds=(0, 1),
        n=n,
        rate=lambda f, b, m: rates[m],
        protocol=full,
    )
    write_grid(
        root,
        experiment="aecg_table2-smoke",
        frameworks=("agentnet",),
        benchmarks=("mbpp_plus",),
        memories=("aecg", "aecg_flat_scope"),
        seeds=(0, 1),
        n=n,
        rate=lambda f, b, m: rates[m],
        protocol={**full, "limit": n, "max_steps": 4},
    )
    for test in MECHANISM_VARIANTS:
        write_mechanism_test(root, test, smoke=test != "rq2_scope")
    for name in EXPERIMENTS:
        write_edv_experiment(root, name, n=n, smoke=name != "table1")
