"""What a reviewer needs beside any table or figure of the report, from the samples it was made of:
configuration, seeds, sample counts, completeness, cost, code version and the command.

Shared by every paper's sections (aecg_sections, mechanism_sections, edv_sections), so one sweep
is described the same way wherever it appears."""

from __future__ import annotations

import pandas as pd

from aecg_bench.analysis.paper import banner, cost_line, cost_table
from aecg_bench.analysis.site import Facts
from aecg_bench.types import Status

SMOKE_PREFIX = banner("smoke")


def _commit(value: object) -> str:
    text = str(value) if isinstance(value, str) else "unknown"
    return text[:12] + ("+dirty" if text.endswith("+dirty") else "")


def _values(df: pd.DataFrame, column: str) -> str:
    return " | ".join(sorted(set(map(str, df[column])))) if column in df.columns else ""


def preset_text(df: pd.DataFrame) -> str:
    """'smoke (limit=2, max_steps=3)' per distinct preset: its name, then what it cuts."""
    if "preset_label" not in df.columns:
        return _values(df, "preset")
    pairs = sorted(set(zip(df["preset_label"].astype(str), df["preset"].astype(str), strict=True)))
    return " | ".join(f"{label} ({'every sample, no step cap' if size == 'full' else size})" for label, size in pairs)


def _completeness(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int, float]:
    """(eval rows, one row per run, complete runs, expected eval samples): every run counts, one
    stopped during memory construction (no eval record yet) too."""
    eval_rows = df[df["phase"] == "eval"]
    runs = df.drop_duplicates("run_dir")
    observed = eval_rows.groupby("run_dir").size()
    expected = pd.to_numeric(runs.set_index("run_dir")["n_eval_expected"], errors="coerce")
    complete = sum(
        1 for r in runs["run_dir"] if expected.get(r) == expected.get(r) and observed.get(r, 0) == expected[r]
    )
    return eval_rows, runs, int(complete), float(expected.fillna(0).sum())


def sweep_facts(df: pd.DataFrame, command: str) -> dict[str, str]:
    """Key-value lines for the samples `df` (load()'s rows): several values of a configuration
    column are all listed, so a reader sees when a section gathers more than one."""
    eval_rows, runs, complete, n_expected = _completeness(df)
    cost = cost_table(df)
    statuses = eval_rows["status"].value_counts()
    return {
        "experiment": _values(df, "experiment"),
        "model assignment": _values(df, "assignment"),
        "model labels (as configured)": _values(df, "model"),
        "protocol": _values(df, "protocol"),
        "preset": preset_text(df),
        "seeds": ", ".join(str(x) for x in sorted(set(df["seed"]))),
        "samples": f"{len(eval_rows)} of {int(n_expected)} expected (eval phase)",
        "completeness": f"{complete} of {len(runs)} runs complete",
        "infra errors": str(int(statuses.get(Status.INFRA_ERROR, 0))),
        "runs by status": ", ".join(f"{k}: {v}" for k, v in runs["run_status"].value_counts().items()),
        "code (git commit of the runs)": ", ".join(sorted({_commit(c) for c in runs.get("git_commit", [])})),
        "cost": cost_line(cost),
        "command": command,
    }


def sweep_numbers(df: pd.DataFrame) -> dict[str, float]:
    """What the report's first screen adds up over experiment folders: runs, complete runs, eval
    samples against expected, dollars (every phase) and memory construction's dollars."""
    eval_rows, runs, complete, n_expected = _completeness(df)
    cost = cost_table(df)
    return {
        "tokens": float(cost[["agent_tokens", "memory_side_tokens", "construction_tokens"]].to_numpy().sum()),
        "construction_tokens": float(cost["construction_tokens"].sum()),
        "runs": float(len(runs)),
        "runs_complete": float(complete),
        "samples": float(len(eval_rows)),
        "samples_expected": n_expected,
        "dollars": float(cost["cost"].sum()),
        "construction_dollars": float(cost["construction_cost"].sum()),
    }


def presets(df: pd.DataFrame) -> str:
    """The preset labels of the samples (`a | b` when a frame holds more than one)."""
    return _values(df, "preset_label")


def facts_part(df: pd.DataFrame, command: str, extra: dict[str, str] | None = None) -> Facts:
    """`sweep_facts` (with `extra` lines) as a report part carrying its numbers and preset."""
    return Facts({**sweep_facts(df, command), **(extra or {})}, sweep_numbers(df), presets(df))
