"""The papers' tables from a results tree: our numbers, the paper's, the difference, the cost.

Only reads files. Row and column orders follow the papers; components missing
from a sweep simply do not appear, and paper cells with no value (the AECG
text quotes only some) show as missing rather than being invented.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from aecg_bench.analysis.stats import summarize
from aecg_bench.analysis.tables import cell_text

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "results" / "reference"

FRAMEWORKS = {"autogen": "AutoGen", "macnet": "MacNet", "agentnet": "AgentNet", "single": "Single"}
BENCHMARKS = {
    "pddl": "PDDL",
    "fever": "FEVER",
    "scienceworld": "SciWorld",
    "mbpp_plus": "MBPP+",
    "toy": "Toy",
    "toy_tools": "ToyTools",
}
MEMORIES = {
    "no_memory": "No-Memory",
    "macnet_m": "MacNet-M",
    "memorybank": "MemoryBank",
    "conmem": "ConMem",
    "g_memory": "G-Memory",
    "aecg": "AECG",
    "aecg_no_scope": "w/o scope preservation",
    "aecg_no_fast_belief": "w/o fast belief",
    "aecg_no_exposure": "w/o exposure (risk-only)",
    "aecg_random_review": "random review order",
    "aecg_no_replay_gate": "w/o replay gate",
    "aecg_symmetric": "symmetric admission",
    "aecg_no_governance": "w/o governance",
    "recorder": "Recorder (test)",
}
KEYS = ["framework", "benchmark", "memory"]
# Roles whose calls act on the task: the frameworks' decision roles (their calls are accounted under
# the decision's role, docs/frameworks/README.md) and EDV's executor/solver; "user_simulator" is the
# environment's; every other role (memory, judge, distiller, verifier, adjudicator) is memory-side.
FRAMEWORK_ROLES = (
    "actor",
    "planner",
    "executor",
    "critic",
    "solver",
    "helper",
    "router",
    "instructor",
    "node",
    "decider",
)
AGENT_ROLES = ("agent", *FRAMEWORK_ROLES)
ENVIRONMENT_ROLES = ("user_simulator",)
# Paper sample counts per benchmark (for cost estimates of the paper preset).
PAPER_SIZES = {"pddl": 60, "fever": 100, "scienceworld": 90, "mbpp_plus": 378}


def _ordered(values: pd.Series, order: dict[str, str]) -> list[str]:
    present = list(dict.fromkeys(values))
    return [v for v in order if v in present] + [v for v in present if v not in order]


def load_reference(name: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    path = reference_dir / f"{name}.csv"
    if not path.exists():
        return pd.DataFrame(columns=[*KEYS, "value"])
    return pd.read_csv(path)


@dataclass(frozen=True)
class PaperTable:
    display: pd.DataFrame  # formatted cells: rows = memory, columns = (framework, benchmark|Avg)
    comparison: pd.DataFrame  # one row per cell: ours, paper, diff, completeness
    summary: pd.DataFrame  # the raw aggregates (mean, std, CI, counts, cost, tokens)


def build_table(
    df: pd.DataFrame, reference: pd.DataFrame, *, metric: str = "success", n_boot: int = 2000
) -> PaperTable:
    """Table 1/2 report success rates: task success (PDDL), accuracy (FEVER; ScienceWorld, whose
    paper values are all multiples of 1/88), pass@1 on base+plus tests (MBPP-Plus)."""
    summary = summarize(df, by=KEYS, metric=metric, n_boot=n_boot)
    if summary.empty:
        raise ValueError("no evaluated samples found: run the sweep first")
    frameworks = _ordered(summary["framework"], FRAMEWORKS)
    benchmarks = _ordered(summary["benchmark"], BENCHMARKS)
    memories = _ordered(summary["memory"], MEMORIES)
    cells = summary.set_index(KEYS)
    columns, data = [], {}
    for fw in frameworks:
        for bench in [*benchmarks, "Avg"]:
            columns.append((FRAMEWORKS.get(fw, fw), BENCHMARKS.get(bench, bench)))
    for mem in memories:
        row = []
        for fw in frameworks:
            means, complete = [], True
            for bench in benchmarks:
                if (fw, bench, mem) in cells.index:
                    c = cells.loc[(fw, bench, mem)]
                    row.append(cell_text(c["mean"], c["std"], complete=bool(c["complete"])))
                    means.append(c["mean"])
                    complete &= bool(c["complete"])
                else:
                    row.append("–")
                    complete = False
            avg_ok = len(means) == len(benchmarks)
            row.append(cell_text(sum(means) / len(means), None, complete=complete) if avg_ok else "–")
        data[MEMORIES.get(mem, mem)] = row
    display = pd.DataFrame.from_dict(data, orient="index", columns=pd.MultiIndex.from_tuples(columns))
    display.index.name = "Method"
    ref = (
        reference.rename(columns={"value": "paper"})[[*KEYS, "paper"]]
        if not reference.empty
        else pd.DataFrame(columns=[*KEYS, "paper"])
    )
    comparison = summary[[*KEYS, "mean", "std", "n_seeds", "n_samples", "n_expected", "n_infra_error", "complete"]]
    comparison = comparison.merge(ref, on=KEYS, how="left")
    comparison["diff"] = comparison["mean"] - comparison["paper"]
    return PaperTable(display=display, comparison=comparison, summary=summary)


def cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per cell: samples, calls, agent-side and memory-side tokens, dollars; then the agent-side
    tokens split by role (`tokens_<role>`: planner, executor, critic, router, ...)."""
    data = df[df["phase"] == "eval"].copy()
    data["agent_tokens"] = _role_sum(data, "tokens_", AGENT_ROLES)
    data["memory_side_tokens"] = (
        _role_sum(data, "tokens_", None) - data["agent_tokens"] - _role_sum(data, "tokens_", ENVIRONMENT_ROLES)
    )
    by_role = {c: (c, "sum") for c in data.columns if c.startswith("tokens_") and c[len("tokens_") :] in AGENT_ROLES}
    data[list(by_role)] = data[list(by_role)].fillna(0)
    out = data.groupby(KEYS, sort=True).agg(
        samples=("sample_id", "count"),
        calls=("calls", "sum"),
        agent_tokens=("agent_tokens", "sum"),
        memory_side_tokens=("memory_side_tokens", "sum"),
        cost=("cost", "sum"),
        **by_role,
    )
    return out.reset_index()


def estimate_paper_cost(
    smoke: pd.DataFrame,
    *,
    agent_price: tuple[float, float],
    memory_price: tuple[float, float],
    seeds: int = 3,
    sizes: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Scale a smoke run's measured usage per sample to the paper's grid and price it.

    Prices are (input, output) dollars per million tokens. Assumes a real model
    uses about as many tokens per sample as the smoke run measured, which is a
    rough guide (the embedded model writes short replies and the smoke preset
    cuts step limits), not a quote.
    """
    sizes = sizes or PAPER_SIZES
    data = smoke[smoke["phase"] == "eval"].copy()
    rows = []
    for (fw, bench, mem), cell in data.groupby(KEYS, sort=True):
        n = sizes.get(bench, len(cell)) * seeds
        per = len(cell)
        agent_in = _role_sum(cell, "in_tokens_", AGENT_ROLES).sum() / per
        agent_out = _role_sum(cell, "out_tokens_", AGENT_ROLES).sum() / per
        mem_in = cell["input_tokens"].sum() / per - agent_in
        mem_out = cell["output_tokens"].sum() / per - agent_out
        cost = (
            n
            * (
                agent_in * agent_price[0]
                + agent_out * agent_price[1]
                + mem_in * memory_price[0]
                + mem_out * memory_price[1]
            )
            / 1e6
        )
        rows.append(
            {
                "framework": fw,
                "benchmark": bench,
                "memory": mem,
                "samples": n,
                "calls": n * cell["calls"].sum() / per,
                "tokens": n * (cell["input_tokens"].sum() + cell["output_tokens"].sum()) / per,
                "dollars": cost,
            }
        )
    return pd.DataFrame(rows)


def _role_sum(data: pd.DataFrame, prefix: str, roles: tuple[str, ...] | None) -> pd.Series:
    """Sum of the per-role columns `<prefix><role>` (all roles when `roles` is None)."""
    cols = [c for c in data.columns if c.startswith(prefix) and (roles is None or c[len(prefix) :] in roles)]
    return data[cols].fillna(0).sum(axis=1) if cols else pd.Series(0.0, index=data.index)
