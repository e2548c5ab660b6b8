"""What a reviewer needs beside any table or figure of the report, from the samples it was made of:
configuration, seeds, sample counts, completeness, cost, code version and the command.

Shared by every paper's sections (aecg_sections, mechanism_sections, edv_sections), so one sweep
is described the same way wherever it appears."""

from __future__ import annotations

import pandas as pd

from aecg_bench.analysis.paper import cost_table
from aecg_bench.types import Status

SMOKE_PREFIX = "SMOKE RUN, not comparable to the paper: "


def _commit(value: object) -> str:
    text = str(value) if isinstance(value, str) else "unknown"
    return text[:12] + ("+dirty" if text.endswith("+dirty") else "")


def _values(df: pd.DataFrame, column: str) -> str:
    return " | ".join(sorted(set(map(str, df[column])))) if column in df.columns else ""


def sweep_facts(df: pd.DataFrame, command: str) -> dict[str, str]:
    """Key-value lines for the samples `df` (load()'s rows): several values of a configuration
    column are all listed, so a reader sees when a section gathers more than one."""
    eval_rows = df[df["phase"] == "eval"]
    runs = eval_rows.drop_duplicates("run_dir")
    observed = eval_rows.groupby("run_dir").size()
    expected = runs.set_index("run_dir")["n_eval_expected"]
    complete = int(
        sum(1 for r in runs["run_dir"] if expected.get(r) == expected.get(r) and observed.get(r) == expected.get(r))
    )
    n_expected = pd.to_numeric(expected, errors="coerce")
    cost = cost_table(df)
    statuses = eval_rows["status"].value_counts()
    return {
        "experiment": _values(df, "experiment"),
        "model assignment": _values(df, "assignment"),
        "model labels (as configured)": _values(df, "model"),
        "protocol": _values(df, "protocol"),
        "preset": _values(df, "preset"),
        "seeds": ", ".join(str(x) for x in sorted(set(eval_rows["seed"]))),
        "samples": f"{len(eval_rows)} of {int(n_expected.fillna(0).sum())} expected (eval phase)",
        "completeness": f"{complete} of {len(runs)} runs complete",
        "infra errors": str(int(statuses.get(Status.INFRA_ERROR, 0))),
        "runs by status": ", ".join(f"{k}: {v}" for k, v in runs["run_status"].value_counts().items()),
        "code (git commit of the runs)": ", ".join(sorted({_commit(c) for c in eval_rows.get("git_commit", [])})),
        "cost": f"${cost['cost'].sum():.4f}; agent tokens {int(cost['agent_tokens'].sum()):,}; "
        f"memory-side tokens {int(cost['memory_side_tokens'].sum()):,}",
        "command": command,
    }
