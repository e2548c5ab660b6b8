"""Results tree -> one pandas row per sample (latest attempt of every stream position).

Analysis reads only the files runs wrote (run.json + samples.jsonl, format in
`aecg_bench.results_format`), so a table can be re-rendered at any time without a model
call. Runs that are still running or incomplete are loaded too; their status travels with
every row so tables can mark the cells they feed.

Every row carries what makes its result different from another's: the labels, and three
columns derived from the header rather than from a label a user typed:
`assignment` (which model serves which role), `protocol` and `preset` (sample limit, step cap),
and `preset_label`: which preset the run belongs to (smoke, rehearsal, paper, ...; `preset_label`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from aecg_bench.results_format import SIZE_KEYS, read_runs, size_label

ID_COLUMNS = ["experiment", "benchmark", "framework", "memory", "model", "seed"]
# What besides framework x benchmark x memory makes two results different.
CONFIG_COLUMNS = ["experiment", "assignment", "protocol", "preset", "preset_label"]
PAPER_PRESET = "paper"
# Preset names a results folder can carry as a suffix (aecg_table1-smoke, aecg_table1-rehearsal).
NAMED_PRESETS = ("smoke", "rehearsal")


def preset_folders(experiment: str) -> tuple[str, ...]:
    """The results folders one experiment can fill: the paper preset's and one per named preset."""
    return (experiment, *(f"{experiment}-{name}" for name in NAMED_PRESETS))


def preset_label(header: dict[str, Any], sizes: str) -> str:
    """Which preset a run belongs to: the name its header records (`preset`, or `labels.preset`),
    else a preset name in its experiment's name (`-smoke`, `-rehearsal`), else `smoke` when its
    sizes are cut (`limit`/`max_steps`) and `paper` when they are not. Any name passes through, so
    a new preset needs no change here."""
    labels = header.get("labels") or {}
    for explicit in (header.get("preset"), labels.get("preset")):
        if isinstance(explicit, str) and explicit:
            return explicit
    experiment = str(labels.get("experiment", ""))
    named = [n for n in NAMED_PRESETS if n in experiment]
    if named:
        return named[0]
    return "smoke" if sizes != "full" else PAPER_PRESET


def load(root: str | Path, *, phases: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Tidy DataFrame of every sample under `root`; empty (with the id columns) if there is none."""
    rows: list[dict[str, Any]] = []
    for run in read_runs(Path(root)):
        config = run_config(run.header)
        for rec in run.records:
            if phases is None or rec["phase"] in phases:
                rows.append(_row(run.header, config, rec, run.path))
    if not rows:
        return pd.DataFrame(columns=[*ID_COLUMNS, *CONFIG_COLUMNS, "sample_id", "status", "success", "value"])
    df = pd.DataFrame(rows)
    return df.sort_values([*ID_COLUMNS, "position"], kind="stable").reset_index(drop=True)


def short_model_id(model: str) -> str:
    """'openai/gpt-4.1-mini' -> 'gpt-4.1-mini': the provider prefix says how a model is reached, not which."""
    return model.split("/", 1)[1] if "/" in model else model


def assignment_label(models: dict[str, dict[str, Any]], roles: dict[str, str]) -> str:
    """One label per model assignment however it was configured: role -> model id (provider
    prefix dropped, a non-zero temperature kept); roles on the default model are folded into it,
    and pool members no role names are listed after (EDV's heterogeneous pool)."""

    def describe(label: str) -> str:
        spec = models.get(label, {})
        text = short_model_id(str(spec.get("model", label)))
        temp = spec.get("temperature")
        return f"{text}@T{temp:g}" if isinstance(temp, int | float) and temp else text

    by_role = {role: describe(label) for role, label in roles.items() if label in models or role == "default"}
    default = by_role.pop("default", None)
    parts = [f"{role}={m}" for role, m in sorted(by_role.items()) if m != default]
    text = default if not parts else "; ".join([*parts, f"default={default}"])
    used = set(roles.values())
    pool = sorted({describe(lbl) for lbl in models if lbl not in used})
    return f"{text}; pool={','.join(pool)}" if pool else str(text)


def run_config(header: dict[str, Any]) -> dict[str, str]:
    """The configuration columns of one run, from its header."""
    protocol = dict(header.get("protocol") or {})
    preset = size_label(protocol)
    for key in SIZE_KEYS:
        protocol.pop(key, None)
    models = header.get("models") or {}
    roles = header.get("roles") or {}
    assignment = assignment_label(models, roles) if models else str(header["labels"]["model"])
    return {
        "assignment": assignment,
        "protocol": ", ".join(f"{k}={protocol[k]}" for k in sorted(protocol)),
        "preset": preset,
        "preset_label": preset_label(header, preset),
    }


def _row(header: dict[str, Any], config: dict[str, str], rec: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    labels = header["labels"]
    usage = rec["usage"]
    row: dict[str, Any] = {
        **{k: labels[k] for k in ID_COLUMNS},
        **config,
        "run_dir": str(run_dir),
        "run_status": header.get("status"),
        "git_commit": (header.get("environment") or {}).get("git_commit"),
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
