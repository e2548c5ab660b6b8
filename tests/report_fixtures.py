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
) -> Path:
    """One run folder with one eval record per success flag (tokens: agent 100+10, memory 50+5)."""
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
    }
    (run_dir / RUN_JSON).write_text(json.dumps(header), encoding="utf-8")
    lines = []
    for i, ok in enumerate(successes):
        by_role = {
            "agent": {"input_tokens": 100, "output_tokens": 10, "calls": 1, "cost": 0.001},
            "memory": {"input_tokens": 50, "output_tokens": 5, "calls": 1, "cost": 0.0005},
        }
        lines.append(
            json.dumps(
                {
                    "position": i,
                    "attempt": 0,
                    "sample_id": f"s{i}",
                    "phase": "eval",
                    "status": "ok",
                    "success": bool(ok),
                    "value": float(ok),
                    "steps": 3,
                    "invalid_actions": 0,
                    "decisions": 2,
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
