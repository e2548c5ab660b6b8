"""The papers' tables from a results tree: our numbers, the paper's, the difference, the cost.

Only reads files. Row and column orders follow the papers; components missing
from a sweep simply do not appear, and paper cells with no value (the AECG
text quotes only some) show as missing rather than being invented. A table
holds one configuration (experiment, model assignment, protocol, preset):
results of different configurations become separate tables, never one cell.
Every cell carries mean, std over seeds, bootstrap 95% CI and a paired test
against its reference method (the strongest baseline, or full AECG for ablations).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from aecg_bench.analysis.load import CONFIG_COLUMNS
from aecg_bench.analysis.stats import NAN, paired_stats, prepare_outcomes, summarize
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
    "reasoningbank": "ReasoningBank",
    "aecg": "AECG",
    # Table 2 ablations (names as in AECG Table 2 / Figures 3-4; docs/memory/aecg.md)
    "aecg_flat_scope": "w/o scope preservation (flat scope)",
    "aecg_cumulative_only": "w/o fast belief (cumulative only)",
    "aecg_risk_only": "w/o exposure (risk-only review)",
    "aecg_random_review": "random review order",
    "aecg_no_replay_gate": "w/o replay gate",
    "aecg_symmetric_admission": "symmetric admission",
    "aecg_no_governance": "w/o governance",
    "recorder": "Recorder (test)",
}
KEYS = ["framework", "benchmark", "memory"]
PROPOSED = "aecg"
NO_MEMORY = "no_memory"
STRONGEST_BASELINE = "strongest_baseline"
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
# Paper sample counts per benchmark (for cost estimates of the paper preset): the denominators its
# values imply (ScienceWorld 1/88, MBPP-Plus 1/122), which conf/benchmark/*_aecg.yaml select.
PAPER_SIZES = {"pddl": 60, "fever": 100, "scienceworld": 88, "mbpp_plus": 122}
# What those task sets are, and the one override that gives the full set (docs/benchmarks/*.md).
PAPER_TASK_SETS = {
    "scienceworld": (
        "the 88 train-split variations of AgentBoard's 90 (benchmark=scienceworld_aecg)",
        "full 90: benchmark=scienceworld",
    ),
    "mbpp_plus": (
        "the first 122 of MBPP+ v0.2.0's 378 tasks, our hypothesis (benchmark=mbpp_plus_aecg)",
        "full 378: benchmark=mbpp_plus",
    ),
}


def task_set_notes(df: pd.DataFrame) -> list[str]:
    """One line per benchmark with a paper task set: how many tasks each run evaluated, and whether
    that is the paper's count (its values' denominator) or another set, with the switch to the other."""
    notes = []
    for bench in _ordered(df["benchmark"], BENCHMARKS):
        if bench not in PAPER_TASK_SETS:
            continue
        sizes = sorted({int(n) for n in df.loc[df["benchmark"] == bench, "n_eval_expected"].dropna()})
        paper_set, full = PAPER_TASK_SETS[bench]
        name, paper_n = BENCHMARKS.get(bench, bench), PAPER_SIZES[bench]
        shown = "/".join(map(str, sizes)) or "?"
        if sizes == [paper_n]:
            notes.append(f"{name}: {shown} tasks per run = the paper's count: {paper_set}; {full}.")
        else:
            notes.append(
                f"{name}: {shown} tasks per run, NOT the paper's {paper_n} ({paper_set}); "
                "cells are not on the paper's task set."
            )
    return notes


def _ordered(values: pd.Series, order: dict[str, str]) -> list[str]:
    present = list(dict.fromkeys(values))
    return [v for v in order if v in present] + [v for v in present if v not in order]


def is_baseline(memory: str) -> bool:
    """A competing memory method: not the proposed one, its ablations, No-Memory, or a test recorder."""
    return not memory.startswith(PROPOSED) and memory not in (NO_MEMORY, "recorder")


def load_reference(name: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    path = reference_dir / f"{name}.csv"
    if not path.exists():
        return pd.DataFrame(columns=[*KEYS, "value", "kind", "source"])
    return pd.read_csv(path)


class MixedCellsError(ValueError):
    """Results of different configurations would land in one table."""


@dataclass(frozen=True)
class PaperTable:
    display: pd.DataFrame  # formatted cells: rows = memory, columns = (framework, benchmark|Avg)
    comparison: pd.DataFrame  # one row per cell: ours with CI, paired test vs reference method, paper
    summary: pd.DataFrame  # the raw aggregates (mean, std, CI, counts, cost, tokens)
    config: dict[str, str]  # experiment, model assignment, protocol, preset of every cell
    smoke: bool  # a smoke-size run: not comparable to the paper

    @property
    def caption_prefix(self) -> str:
        if not self.smoke:
            return ""
        return (
            f"SMOKE RUN ({self.config.get('preset', '')}; {self.config.get('assignment', '')}): "
            "shows the pipeline works, NOT comparable to the paper. "
        )


def configurations(df: pd.DataFrame) -> list[dict[str, str]]:
    """The distinct configurations (experiment, assignment, protocol, preset) in a frame."""
    cols = [c for c in CONFIG_COLUMNS if c in df.columns]
    if df.empty or not cols:
        return []
    return [dict(zip(cols, map(str, k), strict=True)) for k in df[cols].drop_duplicates().itertuples(index=False)]


def is_smoke(config: dict[str, str]) -> bool:
    return config.get("preset", "full") != "full" or "smoke" in config.get("experiment", "")


def build_tables(
    df: pd.DataFrame, reference: pd.DataFrame, *, compare_to: str = STRONGEST_BASELINE, n_boot: int = 2000
) -> list[PaperTable]:
    """One table per configuration: results of different model assignments, protocols or sizes
    are never pooled into one cell."""
    cols = [c for c in CONFIG_COLUMNS if c in df.columns]
    out = []
    for config in configurations(df):
        mask = (df[cols].astype(str) == pd.Series(config)).all(axis=1)
        out.append(_build(df[mask], reference, config, compare_to=compare_to, n_boot=n_boot))
    if not out:
        raise ValueError("no evaluated samples found: run the sweep first")
    return out


def build_table(
    df: pd.DataFrame, reference: pd.DataFrame, *, compare_to: str = STRONGEST_BASELINE, n_boot: int = 2000
) -> PaperTable:
    """Table 1/2 report success rates: task success (PDDL), accuracy (FEVER; ScienceWorld, whose
    paper values are all multiples of 1/88), pass@1 on base+plus tests (MBPP-Plus).
    Refuses a frame that holds more than one configuration, naming the values that differ."""
    configs = configurations(df)
    if len(configs) > 1:
        differ = {k: sorted({c[k] for c in configs}) for k in configs[0] if len({c[k] for c in configs}) > 1}
        detail = "; ".join(f"{k}: {' vs '.join(v)}" for k, v in differ.items())
        raise MixedCellsError(
            f"results of {len(configs)} configurations would share cells ({detail}); "
            "render them as separate tables (build_tables) or move one away"
        )
    return build_tables(df, reference, compare_to=compare_to, n_boot=n_boot)[0]


def _build(
    df: pd.DataFrame, reference: pd.DataFrame, config: dict[str, str], *, compare_to: str, n_boot: int
) -> PaperTable:
    summary = summarize(df, by=KEYS, metric="success", n_boot=n_boot)
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
                    row.append(
                        cell_text(c["mean"], c["std"], complete=bool(c["complete"]), ci=(c["ci_low"], c["ci_high"]))
                    )
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
    comparison = _comparison(df, summary, reference, compare_to=compare_to, smoke=is_smoke(config))
    return PaperTable(display=display, comparison=comparison, summary=summary, config=config, smoke=is_smoke(config))


def reference_method(cell: pd.DataFrame, compare_to: str) -> str | None:
    """The method each cell is compared with: the named one, or the strongest baseline (highest
    mean among competing memory methods; No-Memory when no competitor ran)."""
    present = set(cell["memory"])
    if compare_to != STRONGEST_BASELINE:
        return compare_to if compare_to in present else None
    baselines = cell[cell["memory"].map(is_baseline)]
    if baselines.empty:
        return NO_MEMORY if NO_MEMORY in present else None
    return str(baselines.sort_values(["mean", "memory"], ascending=[False, True]).iloc[0]["memory"])


def _comparison(
    df: pd.DataFrame, summary: pd.DataFrame, reference: pd.DataFrame, *, compare_to: str, smoke: bool
) -> pd.DataFrame:
    cols = [
        *KEYS,
        "mean",
        "std",
        "ci_low",
        "ci_high",
        "n_seeds",
        "n_samples",
        "n_expected",
        "n_infra_error",
        "complete",
        "flag",
    ]
    out = summary[cols].copy()
    # outcomes per setting as (seed, sample) x memory, so a pair is the same sample of the same seed
    outcomes = prepare_outcomes(df, "success", "failure", "eval")
    paired = {
        key: part.pivot_table(index=["seed", "sample_id"], columns="memory", values="_y", aggfunc="first")
        for key, part in outcomes.groupby(["framework", "benchmark"])
    }
    vs, diff, lo, hi, p, n = [], [], [], [], [], []
    for _, row in out.iterrows():
        cell = summary[(summary["framework"] == row["framework"]) & (summary["benchmark"] == row["benchmark"])]
        ref = reference_method(cell, compare_to)
        if ref is None or ref == row["memory"]:
            res = {"n": 0, "mean_diff": NAN, "ci_low": NAN, "ci_high": NAN, "p_value": NAN}
        else:
            table = paired[(row["framework"], row["benchmark"])]
            res = paired_stats((table[row["memory"]] - table[ref]).dropna().to_numpy(dtype=float))
        vs.append(ref if ref != row["memory"] else "")
        diff.append(res["mean_diff"] * 100)
        lo.append(res["ci_low"] * 100)
        hi.append(res["ci_high"] * 100)
        p.append(res["p_value"])
        n.append(res["n"])
    out["vs"] = vs
    out["diff_vs"] = diff
    out["diff_ci_low"] = lo
    out["diff_ci_high"] = hi
    out["p_value"] = p
    out["n_pairs"] = n
    ref = reference.rename(columns={"value": "paper", "kind": "paper_kind", "source": "paper_source"})
    keep = [c for c in [*KEYS, "paper", "paper_kind", "paper_source"] if c in ref.columns]
    out = out.merge(ref[keep], on=KEYS, how="left") if not ref.empty else out.assign(paper=NAN)
    if not smoke:
        out["ours_minus_paper"] = out["mean"] - out["paper"]
    rank = {
        col: {v: i for i, v in enumerate(_ordered(out[col], order))}
        for col, order in (("framework", FRAMEWORKS), ("benchmark", BENCHMARKS), ("memory", MEMORIES))
    }
    return out.sort_values(KEYS, key=lambda c: c.map(rank[c.name]), kind="stable").reset_index(drop=True)


def _framework_avgs(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean over benchmarks per (framework, memory), only where the memory ran every benchmark."""
    n_bench = summary.groupby("framework")["benchmark"].nunique()
    g = summary.groupby(["framework", "memory"])["mean"].agg(["mean", "count"]).reset_index()
    g = g[g["count"] == g["framework"].map(n_bench)]
    return g.rename(columns={"mean": "avg"})[["framework", "memory", "avg"]]


def aecg_claims(summary: pd.DataFrame, margins: pd.DataFrame) -> pd.DataFrame:
    """AECG §4.2's claims computed from our cells, beside the paper's (aecg_table1_margins.csv):
    best in k of N settings, first in average for every framework, the largest per-setting margin
    over the strongest baseline, the framework-average margins over the strongest baseline and
    over No-Memory, and the MacNet-PDDL exception (ConMem minus AECG)."""
    paper = {(r.framework, r.quantity): (r.value, r.source) for r in margins.itertuples()} if not margins.empty else {}
    rows: list[dict[str, object]] = []

    def add(framework: str, quantity: str, claim: str, ours: float) -> None:
        value, source = paper.get((framework, quantity), (NAN, ""))
        rows.append(
            {
                "framework": framework,
                "quantity": quantity,
                "claim": claim,
                "ours": ours,
                "paper": value,
                "source": source,
            }
        )

    settings, best, margin = 0, 0, []
    for _, cell in summary.groupby(["framework", "benchmark"]):
        if PROPOSED not in set(cell["memory"]):
            continue
        settings += 1
        top = cell["mean"].max()
        aecg = float(cell.loc[cell["memory"] == PROPOSED, "mean"].iloc[0])
        best += int(aecg >= top)
        competitors = cell[cell["memory"].map(is_baseline)]
        if not competitors.empty:
            margin.append(aecg - competitors["mean"].max())
    add("all", "settings", "framework-benchmark settings with AECG", float(settings))
    add("all", "aecg_best_settings", "settings where AECG has the best score", float(best))
    add(
        "all",
        "aecg_max_margin_over_best_baseline",
        "largest per-setting margin over the strongest baseline",
        max(margin) if margin else NAN,
    )
    avgs = _framework_avgs(summary)
    first = 0
    for fw in _ordered(summary["framework"], FRAMEWORKS):
        a = avgs[avgs["framework"] == fw].set_index("memory")["avg"]
        if PROPOSED not in a.index:
            continue
        first += int(a[PROPOSED] >= a.max())
        competitors = a[[m for m in a.index if is_baseline(m)]]
        add(
            fw,
            "aecg_minus_best_baseline_avg",
            "average: AECG minus the strongest memory method",
            a[PROPOSED] - competitors.max() if len(competitors) else NAN,
        )
        add(
            fw,
            "aecg_minus_no_memory_avg",
            "average: AECG minus No-Memory",
            a[PROPOSED] - a[NO_MEMORY] if NO_MEMORY in a.index else NAN,
        )
    add("all", "aecg_first_in_avg_frameworks", "frameworks where AECG ranks first in average", float(first))
    cells = summary.set_index(KEYS)["mean"]
    exc = ("macnet", "pddl")
    ours = cells.get((*exc, "conmem"), NAN) - cells.get((*exc, PROPOSED), NAN)
    add("macnet", "pddl_conmem_minus_aecg", "MacNet-PDDL: ConMem minus AECG (the paper's sole exception)", ours)
    out = pd.DataFrame(rows)
    out["ours_minus_paper"] = out["ours"] - out["paper"]
    return out


def cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per cell (and configuration, when the frame has them): samples, calls, agent-side and
    memory-side tokens, dollars; then the agent-side tokens split by role (`tokens_<role>`:
    planner, executor, critic, router, ...)."""
    data = df[df["phase"] == "eval"].copy()
    keys = [*[c for c in CONFIG_COLUMNS if c in data.columns], *KEYS]
    data["agent_tokens"] = _role_sum(data, "tokens_", AGENT_ROLES)
    data["memory_side_tokens"] = (
        _role_sum(data, "tokens_", None) - data["agent_tokens"] - _role_sum(data, "tokens_", ENVIRONMENT_ROLES)
    )
    by_role = {c: (c, "sum") for c in data.columns if c.startswith("tokens_") and c[len("tokens_") :] in AGENT_ROLES}
    data[list(by_role)] = data[list(by_role)].fillna(0)
    out = data.groupby(keys, sort=True).agg(
        samples=("sample_id", "count"),
        calls=("calls", "sum"),
        agent_tokens=("agent_tokens", "sum"),
        memory_side_tokens=("memory_side_tokens", "sum"),
        cost=("cost", "sum"),
        **by_role,
    )
    return out.reset_index()


def _role_sum(data: pd.DataFrame, prefix: str, roles: tuple[str, ...] | None) -> pd.Series:
    """Sum of the per-role columns `<prefix><role>` (all roles when `roles` is None)."""
    cols = [c for c in data.columns if c.startswith(prefix) and (roles is None or c[len(prefix) :] in roles)]
    return data[cols].fillna(0).sum(axis=1) if cols else pd.Series(0.0, index=data.index)


def _num(x: float, digits: int = 2, signed: bool = False) -> str:
    if x != x:  # NaN
        return "–"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def readable_cells(table: PaperTable) -> pd.DataFrame:
    """One line per cell for a reader: ours with CI and counts, the paired test against the cell's
    reference method, the paper's value (marked when derived) and, outside smoke runs, the gap."""
    c = table.comparison
    out = pd.DataFrame(
        {
            "Framework": [FRAMEWORKS.get(v, v) for v in c["framework"]],
            "Benchmark": [BENCHMARKS.get(v, v) for v in c["benchmark"]],
            "Method": [MEMORIES.get(v, v) for v in c["memory"]],
            "mean ± std": [f"{_num(m)} ± {_num(s)}" for m, s in zip(c["mean"], c["std"], strict=True)],
            "95% CI": [f"[{_num(lo, 1)}, {_num(hi, 1)}]" for lo, hi in zip(c["ci_low"], c["ci_high"], strict=True)],
            "samples": [
                f"{n}/{e} ({s} seeds){' ' + f if f else ''}"
                for n, e, s, f in zip(c["n_samples"], c["n_expected"], c["n_seeds"], c["flag"], strict=True)
            ],
            "vs": [MEMORIES.get(v, v) if v else "" for v in c["vs"]],
            "Δ (paired)": [
                "" if not v else f"{_num(d, signed=True)} [{_num(lo, 1)}, {_num(hi, 1)}] n={n}"
                for v, d, lo, hi, n in zip(
                    c["vs"], c["diff_vs"], c["diff_ci_low"], c["diff_ci_high"], c["n_pairs"], strict=True
                )
            ],
            "p": ["" if not v else (_num(p, 3) if p == p else "–") for v, p in zip(c["vs"], c["p_value"], strict=True)],
            "paper": [
                _num(p) + (" (derived)" if k == "derived" else "")
                for p, k in zip(c["paper"], c.get("paper_kind", pd.Series([""] * len(c))), strict=True)
            ],
        }
    )
    if not table.smoke and "ours_minus_paper" in c:
        out["ours − paper"] = [_num(d, signed=True) for d in c["ours_minus_paper"]]
    return out


COUNT_CLAIMS = ("settings", "aecg_best_settings", "aecg_first_in_avg_frameworks")


def readable_claims(claims: pd.DataFrame, *, smoke: bool) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "Framework": [FRAMEWORKS.get(v, v) for v in claims["framework"]],
            "Claim": claims["claim"],
            "ours": [
                _num(v, 0 if q in COUNT_CLAIMS else 2) for v, q in zip(claims["ours"], claims["quantity"], strict=True)
            ],
            "paper": [
                _num(v, 0 if q in COUNT_CLAIMS else 2) for v, q in zip(claims["paper"], claims["quantity"], strict=True)
            ],
            "source": claims["source"].fillna(""),
        }
    )
    if not smoke:
        out.insert(4, "ours − paper", [_num(v, signed=True) for v in claims["ours_minus_paper"]])
    return out
