"""Results tree -> one pandas row per sample (latest attempt of every stream position).

Analysis reads only the files runs wrote (run.json + samples.jsonl), so a
table can be re-rendered at any time without a model call. Runs that are
still running or incomplete are loaded too; their status travels with every
row so tables can mark the cells they feed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from aecg_bench.runner.records import RUN_JSON, SAMPLES, RunDir, latest_by_position

ID_COLUMNS = ["experiment", "benchmark", "framework", "memory", "model", "seed"]


def find_runs(root: Path) -> list[Path]:
    """Every run directory under `root` (a directory holding run.json), hidden folders skipped."""
    root = Path(root)
    return sorted(
        p.parent for p in root.rglob(RUN_JSON) if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def load(root: str | Path, *, phases: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Tidy DataFrame of every sample under `root`; empty (with the id columns) if there is none."""
    rows: list[dict[str, Any]] = []
    for run_dir in find_runs(Path(root)):
        header = json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))
        if not (run_dir / SAMPLES).exists():
            continue
        for rec in latest_by_position(RunDir(run_dir).records()).values():
            if phases is None or rec["phase"] in phases:
                rows.append(_row(header, rec, run_dir))
    if not rows:
        return pd.DataFrame(columns=[*ID_COLUMNS, "sample_id", "status", "success", "value"])
    df = pd.DataFrame(rows)
    return df.sort_values([*ID_COLUMNS, "position"], kind="stable").reset_index(drop=True)


def _row(header: dict[str, Any], rec: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    labels = header["labels"]
    usage = rec["usage"]
    row: dict[str, Any] = {
        **{k: labels[k] for k in ID_COLUMNS},
        "run_dir": str(run_dir),
        "run_status": header.get("status"),
        "n_eval_expected": header.get("n_eval"),
        "position": rec["position"],
        "sample_id": str(rec["sample_id"]),
        "phase": rec["phase"],
        "epoch": rec.get("epoch", 0),
        "task_type": rec.get("task_type"),
        "difficulty": rec.get("difficulty"),
        "status": rec["status"],
        "success": rec["success"],
        "value": rec["value"],
        "steps": rec["steps"],
        "invalid_actions": rec["invalid_actions"],
        "decisions": rec["decisions"],
        "n_rollouts": rec.get("n_rollouts", 1),
        "n_recalled": len(rec.get("recalled_memory_ids", [])),
        "recalled_memory_ids": list(rec.get("recalled_memory_ids", [])),
        "seconds": rec.get("seconds"),
        "input_tokens": usage["total"]["input_tokens"],
        "output_tokens": usage["total"]["output_tokens"],
        "calls": usage["total"]["calls"],
        "cost": usage["total"]["cost"],
    }
    for metric, value in rec.get("metrics", {}).items():
        row[f"metric_{metric}"] = value
    for role, u in usage.get("by_role", {}).items():
        row[f"in_tokens_{role}"] = u["input_tokens"]
        row[f"out_tokens_{role}"] = u["output_tokens"]
        row[f"tokens_{role}"] = u["input_tokens"] + u["output_tokens"]
        row[f"cost_{role}"] = u["cost"]
    return row
