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

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from aecg_bench.analysis.load import CONFIG_COLUMNS, PAPER_PRESET, preset_label
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


def load_margins(name: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame | None:
    """The claims a paper table makes (`<name>_margins.csv`), or None when the paper states none for it."""
    path = reference_dir / f"{name}_margins.csv"
    return pd.read_csv(path) if path.exists() else None


class MixedCellsError(ValueError):
    """Results of different configurations would land in one table."""


@dataclass(frozen=True)
class PaperTable:
    display: pd.DataFrame  # formatted cells: rows = memory, columns = (framework, benchmark|Avg)
    comparison: pd.DataFrame  # one row per cell: ours with CI, paired test vs reference method, paper
    summary: pd.DataFrame  # the raw aggregates (mean, std, CI, counts, cost, tokens)
    config: dict[str, str]  # experiment, model assignment, protocol, preset of every cell
    smoke: bool  # not the paper preset (smoke, rehearsal, ...): not comparable to the paper

    @property
    def preset(self) -> str:
        return preset_of(self.config)

    @property
    def caption_prefix(self) -> str:
        if not self.smoke:
            return ""
        return (
            f"{self.preset.upper()} RUN ({self.config.get('preset', '')}; {self.config.get('assignment', '')}): "
            "shows the pipeline works, NOT comparable to the paper. "
        )


def configurations(df: pd.DataFrame) -> list[dict[str, str]]:
    """The distinct configurations (experiment, assignment, protocol, preset) in a frame."""
    cols = [c for c in CONFIG_COLUMNS if c in df.columns]
    if df.empty or not cols:
        return []
    return [dict(zip(cols, map(str, k), strict=True)) for k in df[cols].drop_duplicates().itertuples(index=False)]


def preset_of(config: dict[str, str]) -> str:
    """The preset label of a configuration (load's `preset_label`; derived as load derives it when absent)."""
    if config.get("preset_label"):
        return config["preset_label"]
    header = {"labels": {"experiment": config.get("experiment", "")}}
    return preset_label(header, config.get("preset", "full"))


def is_smoke(config: dict[str, str]) -> bool:
    """Not the paper preset (smoke, rehearsal, ...): not comparable to the paper's numbers."""
    return preset_of(config) != PAPER_PRESET


def banner(preset: str) -> str:
    """The caption prefix of anything a non-paper preset made ('' for the paper preset)."""
    return "" if preset == PAPER_PRESET else f"{preset.upper()} RUN, not comparable to the paper: "


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


def display_links(table: PaperTable) -> dict[tuple[str, str], dict[str, str]]:
    """(row label, 'Framework / Benchmark' column label) of each display cell -> the run labels behind it,
    for the report's links into the run viewer (an Avg cell: every benchmark of its framework)."""
    links: dict[tuple[str, str], dict[str, str]] = {}
    base = {"experiment": table.config.get("experiment", "")}
    for _, cell in table.summary.iterrows():
        fw, bench, mem = cell["framework"], cell["benchmark"], cell["memory"]
        row, fw_label = MEMORIES.get(mem, mem), FRAMEWORKS.get(fw, fw)
        where = {**base, "framework": fw, "memory": mem}
        links[(row, f"{fw_label} / {BENCHMARKS.get(bench, bench)}")] = {**where, "benchmark": bench}
        links[(row, f"{fw_label} / Avg")] = where
    return links


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
    paired = paired_outcomes(df)
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


# A claim's verdict: the paired difference in the claimed direction decides it only when both its
# bootstrap 95% CI excludes zero and the sign-flip p is below ALPHA; ties, all-zero cells and
# differences the data cannot tell from noise are "undecided" (docs/infra/report.md).
HOLDS, UNDECIDED, FAILS, NOT_RUN = "holds", "undecided", "fails", "not run"
ALPHA = 0.05


def verdict(res: dict[str, float]) -> str:
    """holds / fails when the paired difference (claimed direction: positive) is decided, else undecided."""
    if not res.get("n"):
        return NOT_RUN
    p, lo, hi = res["p_value"], res["ci_low"], res["ci_high"]
    if p == p and p < ALPHA and lo > 0:
        return HOLDS
    if p == p and p < ALPHA and hi < 0:
        return FAILS
    return UNDECIDED


def directed(res: dict[str, float], sign: int) -> dict[str, float]:
    """A paired result turned so that the claimed direction is positive (`sign` -1: the claim says a < b)."""
    if sign not in (1, -1):
        raise ValueError(f"a claim's direction is 1 or -1, not {sign!r}")
    if sign == 1:
        return dict(res)
    return {
        **res,
        "mean_diff": -res["mean_diff"],
        "ci_low": -res["ci_high"],
        "ci_high": -res["ci_low"],
    }


def count_verdict(held: int, undecided: int, total: int, paper_k: float, paper_n: float) -> str:
    """A claim 'true in k of N settings': it holds when the settings it decidedly holds in reach the
    paper's share of ours, fails when even every undecided one resolved in its favour could not."""
    if total == 0:
        return NOT_RUN
    share = paper_k / paper_n if paper_n == paper_n and paper_k == paper_k and paper_n else 1.0
    needed = math.ceil(share * total - 1e-9)
    if held >= needed:
        return HOLDS
    return FAILS if held + undecided < needed else UNDECIDED


def paired_outcomes(df: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """Per (framework, benchmark): eval outcomes as (seed, sample) x memory, so a pair is the same
    sample of the same seed (infra errors count as failures)."""
    outcomes = prepare_outcomes(df, "success", "failure", "eval")
    return {
        key: part.pivot_table(index=["seed", "sample_id"], columns="memory", values="_y", aggfunc="first")
        for key, part in outcomes.groupby(["framework", "benchmark"])
    }


def _pair(paired: dict[tuple[str, str], pd.DataFrame], fw: str, bench: str, a: str, b: str) -> np.ndarray:
    """a - b in points over the samples both ran in one setting."""
    table = paired.get((fw, bench))
    if table is None or a not in table or b not in table:
        return np.array([])
    return (table[a] - table[b]).dropna().to_numpy(dtype=float) * 100


def _averaged(parts: list[np.ndarray]) -> np.ndarray:
    """Per-benchmark paired differences reweighted so their plain mean is the mean over benchmarks
    of each benchmark's mean difference (a framework-average margin); empty if a part is."""
    if not parts or any(len(p) == 0 for p in parts):
        return np.array([])
    total = sum(len(p) for p in parts)
    return np.concatenate([p * total / (len(p) * len(parts)) for p in parts])


def aecg_claims(
    summary: pd.DataFrame, margins: pd.DataFrame, samples: pd.DataFrame, *, n_boot: int = 2000
) -> pd.DataFrame:
    """AECG §4.2's claims computed from our cells, beside the paper's (aecg_table1_margins.csv):
    best in k of N settings, first in average for every framework, the largest per-setting margin
    over the strongest baseline, the framework-average margins over the strongest baseline and
    over No-Memory, and the MacNet-PDDL exception (ConMem minus AECG).

    Every claim carries the paired difference behind it (same seed and sample; framework
    averages weight each benchmark equally) with its bootstrap 95% CI, sign-flip p and a verdict
    (`verdict`): a setting where AECG ties the best method, or every cell is 0, is undecided, never
    a win. Count claims give the settings decided in AECG's favour (`ours`), the range they could
    reach once the undecided ones are settled (`ci_low`..`ci_high`) and `count_verdict`."""
    paper = {(r.framework, r.quantity): (r.value, r.source) for r in margins.itertuples()} if not margins.empty else {}
    paired = paired_outcomes(samples)
    rows: list[dict[str, object]] = []

    def add(framework: str, quantity: str, claim: str, ours: float, res: dict[str, float], verdict_: str) -> None:
        value, source = paper.get((framework, quantity), (NAN, ""))
        rows.append(
            {
                "framework": framework,
                "quantity": quantity,
                "claim": claim,
                "ours": ours,
                "ci_low": res.get("ci_low", NAN),
                "ci_high": res.get("ci_high", NAN),
                "p_value": res.get("p_value", NAN),
                "n_pairs": res.get("n", 0),
                "verdict": verdict_,
                "paper": value,
                "source": source,
            }
        )

    def setting(fw: str, bench: str) -> str:
        return f"{FRAMEWORKS.get(fw, fw)}/{BENCHMARKS.get(bench, bench)}"

    best: dict[str, list[str]] = {HOLDS: [], UNDECIDED: [], FAILS: [], NOT_RUN: []}
    margin: list[tuple[float, str, str]] = []
    for (fw, bench), cell in summary.groupby(["framework", "benchmark"]):
        if PROPOSED not in set(cell["memory"]):
            continue
        aecg = float(cell.loc[cell["memory"] == PROPOSED, "mean"].iloc[0])
        others = cell[cell["memory"] != PROPOSED].sort_values(["mean", "memory"], ascending=[False, True])
        if others.empty:
            best[NOT_RUN].append(setting(fw, bench))
        else:
            res = paired_stats(_pair(paired, fw, bench, PROPOSED, str(others.iloc[0]["memory"])), n_boot=n_boot)
            best[verdict(res)].append(setting(fw, bench))
        competitors = cell[cell["memory"].map(is_baseline)]
        if not competitors.empty:
            margin.append((aecg - competitors["mean"].max(), fw, bench))
    n_settings = sum(len(v) for v in best.values())
    add("all", "settings", "framework-benchmark settings with AECG", float(n_settings), {}, "")
    held, open_ = len(best[HOLDS]), len(best[UNDECIDED]) + len(best[NOT_RUN])
    paper_k, paper_n = paper.get(("all", "aecg_best_settings"), (NAN, ""))[0], paper.get(("all", "settings"), (NAN,))[0]
    detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in best.items() if v and k != HOLDS)
    add(
        "all",
        "aecg_best_settings",
        "settings where AECG is best, decided by a paired test against the next method"
        + (f" ({detail})" if detail else ""),
        float(held),
        {"ci_low": float(held), "ci_high": float(held + open_)},
        count_verdict(held, open_, n_settings, paper_k, paper_n),
    )
    if margin:
        value, fw, bench = max(margin)
        cell = summary[(summary["framework"] == fw) & (summary["benchmark"] == bench)]
        ref = reference_method(cell, STRONGEST_BASELINE) or ""
        res = paired_stats(_pair(paired, fw, bench, PROPOSED, ref), n_boot=n_boot)
        add(
            "all",
            "aecg_max_margin_over_best_baseline",
            f"largest per-setting margin over the strongest baseline ({setting(fw, bench)})",
            value,
            res,
            verdict(res),
        )
    else:
        add("all", "aecg_max_margin_over_best_baseline", "largest per-setting margin", NAN, {}, NOT_RUN)
    avgs = _framework_avgs(summary)
    first: dict[str, int] = {HOLDS: 0, UNDECIDED: 0, FAILS: 0, NOT_RUN: 0}
    frameworks = _ordered(summary["framework"], FRAMEWORKS)
    for fw in frameworks:
        a = avgs[avgs["framework"] == fw].set_index("memory")["avg"]
        if PROPOSED not in a.index:
            continue
        benches = sorted(set(summary.loc[summary["framework"] == fw, "benchmark"]))

        def versus(other: str, fw: str = fw, benches: list[str] = benches) -> dict[str, float]:
            return paired_stats(_averaged([_pair(paired, fw, b, PROPOSED, other) for b in benches]), n_boot=n_boot)

        others = a.drop(PROPOSED).sort_values(ascending=False)
        first[verdict(versus(str(others.index[0]))) if len(others) else NOT_RUN] += 1
        competitors = a[[m for m in a.index if is_baseline(m)]].sort_values(ascending=False)
        res = versus(str(competitors.index[0])) if len(competitors) else {}
        add(
            fw,
            "aecg_minus_best_baseline_avg",
            "average: AECG minus the strongest memory method",
            a[PROPOSED] - competitors.iloc[0] if len(competitors) else NAN,
            res,
            verdict(res) if res else NOT_RUN,
        )
        res = versus(NO_MEMORY) if NO_MEMORY in a.index else {}
        add(
            fw,
            "aecg_minus_no_memory_avg",
            "average: AECG minus No-Memory",
            a[PROPOSED] - a[NO_MEMORY] if NO_MEMORY in a.index else NAN,
            res,
            verdict(res) if res else NOT_RUN,
        )
    add(
        "all",
        "aecg_first_in_avg_frameworks",
        "frameworks where AECG ranks first in average, decided by a paired test against the next method",
        float(first[HOLDS]),
        {"ci_low": float(first[HOLDS]), "ci_high": float(first[HOLDS] + first[UNDECIDED] + first[NOT_RUN])},
        # the paper: first "for all three frameworks", so every framework we ran must hold
        count_verdict(first[HOLDS], first[UNDECIDED] + first[NOT_RUN], sum(first.values()), 1.0, 1.0),
    )
    cells = summary.set_index(KEYS)["mean"]
    exc = ("macnet", "pddl")
    ours = cells.get((*exc, "conmem"), NAN) - cells.get((*exc, PROPOSED), NAN)
    res = paired_stats(_pair(paired, *exc, "conmem", PROPOSED), n_boot=n_boot)
    add(
        "macnet",
        "pddl_conmem_minus_aecg",
        "MacNet-PDDL: ConMem minus AECG (the paper's sole exception)",
        ours,
        res,
        verdict(res),
    )
    out = pd.DataFrame(rows)
    out["ours_minus_paper"] = out["ours"] - out["paper"]
    return out


EVAL_PHASE = "eval"


def cost_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per cell (and configuration, when the frame has them): evaluated samples, calls, the eval
    phase's agent-side and memory-side tokens, memory construction's tokens (every phase before
    eval: EDV's build epochs, warm-up tasks) and dollars over every phase (`cost`, of which
    `construction_cost`) and calls over every phase; then the eval phase's agent-side tokens split
    by role (`tokens_<role>`: planner, executor, critic, router, ...)."""
    data = df.copy()
    keys = [*[c for c in CONFIG_COLUMNS if c in data.columns], *KEYS]
    evals = data["phase"] == EVAL_PHASE
    data["_eval"] = evals.astype(int)
    data["agent_tokens"] = _role_sum(data, "tokens_", AGENT_ROLES).where(evals, 0.0)
    data["memory_side_tokens"] = (
        _role_sum(data, "tokens_", None) - _role_sum(data, "tokens_", (*AGENT_ROLES, *ENVIRONMENT_ROLES))
    ).where(evals, 0.0)
    data["construction_tokens"] = (data["input_tokens"].fillna(0) + data["output_tokens"].fillna(0)).where(~evals, 0)
    data["construction_cost"] = data["cost"].fillna(0).where(~evals, 0.0)
    by_role = {c: (c, "sum") for c in data.columns if c.startswith("tokens_") and c[len("tokens_") :] in AGENT_ROLES}
    for col in by_role:
        data[col] = data[col].fillna(0).where(evals, 0)
    out = data.groupby(keys, sort=True).agg(
        samples=("_eval", "sum"),
        calls=("calls", "sum"),
        agent_tokens=("agent_tokens", "sum"),
        memory_side_tokens=("memory_side_tokens", "sum"),
        construction_tokens=("construction_tokens", "sum"),
        cost=("cost", "sum"),
        construction_cost=("construction_cost", "sum"),
        **by_role,
    )
    return out.reset_index()


def compact_cost(cost: pd.DataFrame) -> pd.DataFrame:
    """`cost_table` for a page: one row per cell with readable names and whole numbers; the
    configuration is said once beside the table and the per-role split is `role_tokens`."""
    return pd.DataFrame(
        {
            "Framework": [FRAMEWORKS.get(v, v) for v in cost["framework"]],
            "Benchmark": [BENCHMARKS.get(v, v) for v in cost["benchmark"]],
            "Method": [MEMORIES.get(v, v) for v in cost["memory"]],
            "samples": cost["samples"].astype(int),
            "calls": cost["calls"].astype(int),
            "agent tokens": [f"{int(v):,}" for v in cost["agent_tokens"]],
            "memory-side tokens": [f"{int(v):,}" for v in cost["memory_side_tokens"]],
            "construction tokens": [f"{int(v):,}" for v in cost["construction_tokens"]],
            "$": [f"{v:.4f}" for v in cost["cost"]],
        }
    )


def role_tokens(df: pd.DataFrame) -> pd.DataFrame:
    """Tokens per evaluated sample by role and memory method (the eval phase; mean over every cell a
    method ran), only roles that spent tokens; agent-side roles first. Rows are display names."""
    data = df[df["phase"] == EVAL_PHASE]
    roles = [c[len("tokens_") :] for c in data.columns if c.startswith("tokens_")]
    totals = {r: float(data[f"tokens_{r}"].fillna(0).sum()) for r in roles}
    roles = sorted(r for r in roles if totals[r] > 0)
    roles = [r for r in roles if r in AGENT_ROLES] + [r for r in roles if r not in AGENT_ROLES]
    memories = _ordered(data["memory"], MEMORIES)
    per = data.groupby("memory")[[f"tokens_{r}" for r in roles]].apply(lambda g: g.fillna(0).mean())
    per = per.reindex(memories)
    per.columns = roles
    per.index = [MEMORIES.get(m, m) for m in memories]
    return per


def role_side(role: str) -> str:
    return "agent" if role in AGENT_ROLES else ("environment" if role in ENVIRONMENT_ROLES else "memory-side")


def cost_line(cost: pd.DataFrame) -> str:
    """One line for a reader: dollars over every phase, then tokens by side and memory construction's share."""
    agent, memory = int(cost["agent_tokens"].sum()), int(cost["memory_side_tokens"].sum())
    build = int(cost["construction_tokens"].sum())
    total = agent + memory + build
    share = f" ({100 * build / total:.0f}% of all tokens)" if total and build else ""
    return (
        f"${cost['cost'].sum():.4f} (memory construction ${cost['construction_cost'].sum():.4f}); "
        f"agent tokens {agent:,}; memory-side tokens {memory:,}; memory construction tokens {build:,}{share}"
    )


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


def claim_interval(quantity: str, lo: float, hi: float) -> str:
    """A margin's bootstrap 95% CI in points, or a count claim's range (decided .. possible)."""
    if lo != lo:
        return ""
    if quantity in COUNT_CLAIMS:
        return f"{lo:.0f}..{hi:.0f} (decided..possible)"
    return f"[{lo:+.2f}, {hi:+.2f}]"


def readable_claims(claims: pd.DataFrame, *, smoke: bool) -> pd.DataFrame:
    """The claims for a reader: ours, the CI (a count's decided..possible range), p, the verdict, the paper's."""
    digits = [0 if q in COUNT_CLAIMS else 2 for q in claims["quantity"]]
    out = pd.DataFrame(
        {
            "Framework": [FRAMEWORKS.get(v, v) for v in claims["framework"]],
            "Claim": claims["claim"],
            "ours": [_num(v, d) for v, d in zip(claims["ours"], digits, strict=True)],
            "95% CI / range": [
                claim_interval(q, lo, hi)
                for q, lo, hi in zip(claims["quantity"], claims["ci_low"], claims["ci_high"], strict=True)
            ],
            "p": ["" if p != p else _num(p, 3) for p in claims["p_value"]],
            "verdict": claims["verdict"],
            "paper": [_num(v, d) for v, d in zip(claims["paper"], digits, strict=True)],
            "source": claims["source"].fillna(""),
        }
    )
    if not smoke:
        out.insert(7, "ours − paper", [_num(v, signed=True) for v in claims["ours_minus_paper"]])
    return out
