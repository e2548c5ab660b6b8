"""EDV's tables and figures (arXiv 2606.24428) from a results tree, beside the paper's numbers.

Only reads files. A run is placed in a table row from its run.json: the
memory method and label, and for the single-backbone rows (NM, RB) the pool
role `backbone_<i>` its model label fills (conf/arm/). Every table keeps the
paper's rows and benchmarks visible even where a sweep has none of them (a
toy_tools stand-in has no paper column), so what is missing is seen, not hidden.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aecg_bench.analysis.paper import ENVIRONMENT_ROLES, REFERENCE_DIR, _role_sum
from aecg_bench.analysis.stats import paired_difference, summarize
from aecg_bench.analysis.tables import cell_text
from aecg_bench.results_format import latest_snapshot_state

# Table rows in the paper's order, with their display names.
MAIN_ROWS = {
    "nm_b1": "NM (backbone 1)",
    "nm_b2": "NM (backbone 2)",
    "nm_b3": "NM (backbone 3)",
    "rb_b1": "RB (backbone 1)",
    "rb_b2": "RB (backbone 2)",
    "rb_b3": "RB (backbone 3)",
    "judge": "Judge (Ensemble)",
    "router": "Router (Ensemble)",
    "edv": "EDV (Ensemble)",
}
BASELINE_ROWS = tuple(r for r in MAIN_ROWS if r != "edv")
TABLE4_ROWS = {
    "edv_sa_basic": "1. Basic SA",
    "edv_sa_selfverify": "2. SA + Self-Verify",
    "edv_sa_indep_verifier": "3. SA + Indep. Verifier",
    "edv_ma_selfdistill": "4. MA + Self-Distill",
    "edv_ma_thirdparty_distill": "5. MA + Third-Party Distill",
    "edv": "6. EDV (Full)",
}
TABLE5_ROWS = {
    "edv": "EDV-Full",
    "edv_fixed": "EDV-Fixed",
    "edv_only_shared": "EDV-Only-Shared",
    "edv_only_private": "EDV-Only-Private",
}
CONTAMINATION_ROWS = {"rb_b3": "RB (clean)", "rb_contaminated_b3": "RB + 10% injected"}
# Table 2 metric -> the per-sample column it averages (Mind2Web's per-task metrics; SR is task success).
TABLE2_METRICS = {
    "element_acc": "metric_element_acc",
    "action_f1": "metric_action_f1",
    "step_success": "metric_step_success",
    "task_success": "success",
}
TABLE2_NAMES = {"element_acc": "EA", "action_f1": "AF1", "step_success": "SSR", "task_success": "SR"}
# The measured upper bound of each metric (aecg_bench/benchmarks/mind2web/metrics.py): the share of
# steps whose gold element is among the ranked candidates bounds EA, AF1 and SSR; the share of tasks
# where every step's is bounds SR. Table 2 prints the paper's bound in parentheses (App. D.2).
TABLE2_BOUNDS = {
    "element_acc": "metric_upper_bound_step",
    "action_f1": "metric_upper_bound_step",
    "step_success": "metric_upper_bound_step",
    "task_success": "metric_upper_bound_task",
}
UPPER_BOUND = "upper_bound"
MEASURED_BOUND = "upper bound (measured)"
TABLE3_METRICS = {
    "all": "All",
    "single": "A_sgl",
    "chat": "A_cht",
    "clarify": "A_clr",
    "parallel": "A^P",
    "serial": "A^S",
    "serial_parallel": "A^{S+P}",
    "optimal_path": "Opt.Path",
    "accomplished_progress": "Acc.Prog",
}
AUDIT_DIMENSIONS = ("groundedness_correctness", "actionability", "specificity", "noise_hallucination", "potential_harm")


def reference(name: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    return pd.read_csv(reference_dir / f"edv_{name}.csv")


def text_reference(section: str) -> pd.DataFrame:
    """The numbers EDV states in its text for one section (edv_text.csv)."""
    text = reference("text")
    return text[text["section"].astype(str) == section]


def contamination_reference() -> pd.DataFrame:
    """Sec. 5.4's Pass@1 of clean and contaminated RB, in an ablation table's layout (RETAIL)."""
    ref = text_reference("5.4").rename(columns={"variant": "row"})
    return ref[ref["quantity"] == "pass_at_1"].assign(benchmark="tau2_retail")


# --------------------------------------------------------------------------- loading


def run_facts(run_dir: Path) -> dict[str, Any]:
    """What places a run in a table: method name, backbone index, and the swept settings."""
    header = json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))
    config = header["identity"]["config"]
    params = config["memory"].get("params", {})
    model_label = header["labels"]["model"]
    roles = header.get("roles", {})
    backbone = next(
        (
            int(role.rsplit("_", 1)[1])
            for role, label in sorted(roles.items())
            if role.startswith("backbone_") and label == model_label
        ),
        None,
    )
    return {
        "method": config["memory"]["name"],
        "backbone": backbone,
        "build_epochs": header["protocol"].get("build_epochs"),
        "top_k": params.get("top_k"),
        "max_recalled_items": params.get("max_recalled_items"),
        "threshold": params.get("shared_threshold"),
    }


def row_of(memory_label: str, method: str, backbone: int | None) -> str:
    """The table row of a run (conf/arm/ names; ablations keep their memory label)."""
    suffix = f"_b{backbone}" if backbone is not None else ""
    if method == "no_memory":
        return f"nm{suffix}"
    if method == "reasoningbank_contaminated":
        return f"rb_contaminated{suffix}"
    if method == "reasoningbank":
        return f"rb{suffix}"
    return memory_label


def annotate(df: pd.DataFrame) -> pd.DataFrame:
    """Add `row`, `method`, `backbone` and the swept settings to `load()`'s per-sample frame."""
    if df.empty:
        return df.assign(row=[], method=[], backbone=[], build_epochs=[], top_k=[], max_recalled_items=[], threshold=[])
    facts = {d: run_facts(Path(d)) for d in df["run_dir"].unique()}
    out = df.copy()
    for key in ("method", "backbone", "build_epochs", "top_k", "max_recalled_items", "threshold"):
        out[key] = [facts[d][key] for d in out["run_dir"]]
    out["row"] = [
        row_of(m, f["method"], f["backbone"])
        for m, f in zip(out["memory"], (facts[d] for d in out["run_dir"]), strict=True)
    ]
    return out


# --------------------------------------------------------------------------- statistics


def cells(df: pd.DataFrame, by: list[str], *, metric: str = "success", n_boot: int = 1000) -> pd.DataFrame:
    """Mean, std over seeds and the hierarchical-bootstrap 95% CI per cell (percent)."""
    if metric not in df.columns:
        return pd.DataFrame(columns=[*by, "mean", "std", "ci_low", "ci_high", "n_seeds", "complete"])
    return summarize(df, by=by, metric=metric, n_boot=n_boot)


def paired(df: pd.DataFrame, a: str, b: str, *, metric: str = "success", n_boot: int = 2000) -> dict[str, float]:
    """Paired difference a - b over the samples both rows ran (same benchmark, seed and sample), in points."""
    # rows differ in model, assignment and protocol by design (NM online on one backbone, EDV built
    # then frozen on the pool): pair them on benchmark, seed and sample only
    frame = df.assign(
        memory=df["row"], model="-", framework="-", experiment="-", assignment="-", protocol="-", preset="-"
    )
    res = paired_difference(frame, "memory", a, b, metric=metric, n_boot=n_boot)
    for key in ("mean_diff", "ci_low", "ci_high"):
        res[key] *= 100
    return res


def vs_strongest(
    df: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    target: str,
    baselines: tuple[str, ...],
    metric: str = "success",
    n_boot: int = 2000,
) -> pd.DataFrame:
    """Per benchmark: the target row against the strongest baseline there (highest mean), paired."""
    rows = []
    for bench, group in summary.groupby("benchmark"):
        base = group[group["row"].isin(baselines)]
        if base.empty or target not in set(group["row"]):
            continue
        best = base.sort_values("mean", ascending=False).iloc[0]["row"]
        res = paired(df[df["benchmark"] == bench], target, best, metric=metric, n_boot=n_boot)
        rows.append({"benchmark": bench, "target": target, "strongest_baseline": best, **res})
    return pd.DataFrame(rows)


def _cell(c: pd.Series) -> str:
    text = cell_text(c["mean"], c["std"], complete=bool(c["complete"]))
    return text if c["ci_low"] != c["ci_low"] else f"{text} [{c['ci_low']:.1f}, {c['ci_high']:.1f}]"


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class EdvTable:
    ours: pd.DataFrame  # display cells: mean ± std over seeds [95% CI]
    paper: pd.DataFrame  # the paper's table in the same layout
    comparison: pd.DataFrame  # one row per cell both have: ours, paper, diff
    tests: pd.DataFrame  # paired tests


def _grid(summary: pd.DataFrame, rows: dict[str, str], columns: list[str], key: str = "benchmark") -> pd.DataFrame:
    data = {}
    index = summary.set_index(["row", key]) if not summary.empty else None
    present = set(summary["row"]) if not summary.empty else set()
    for row in [*rows, *sorted(present - set(rows))]:
        data[rows.get(row, row)] = [
            _cell(index.loc[(row, col)]) if index is not None and (row, col) in index.index else "–" for col in columns
        ]
    return pd.DataFrame.from_dict(data, orient="index", columns=columns)


def main_table(df: pd.DataFrame, ref: pd.DataFrame, *, n_boot: int = 1000) -> EdvTable:
    """Table 1 (and any benchmark run with the main rows): Pass@1 per benchmark with Avg."""
    summary = cells(df, ["benchmark", "row"], n_boot=n_boot)
    benches = sorted(set(summary["benchmark"])) if not summary.empty else []
    ours = _grid(summary, MAIN_ROWS, benches)
    if len(benches) > 1:
        means = summary.pivot_table(index="row", columns="benchmark", values="mean")
        ours["Avg."] = [
            f"{means.loc[r].mean():.2f}" if r in means.index and means.loc[r].notna().all() else "–"
            for r in [*MAIN_ROWS, *sorted(set(summary["row"]) - set(MAIN_ROWS))]
        ]
    paper = ref.pivot_table(index="row", columns="benchmark", values="value", aggfunc="first")
    paper = paper.reindex(
        index=[r for r in MAIN_ROWS if r in paper.index], columns=list(dict.fromkeys(ref["benchmark"]))
    )
    paper.index = [MAIN_ROWS[r] for r in paper.index]
    comparison = _compare(summary, ref, ["benchmark", "row"])
    tests = (
        vs_strongest(df, summary, target="edv", baselines=BASELINE_ROWS, n_boot=2 * n_boot)
        if not summary.empty
        else pd.DataFrame()
    )
    return EdvTable(ours, paper, comparison, tests)


def _compare(summary: pd.DataFrame, ref: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if summary.empty:
        return pd.DataFrame(columns=[*keys, "mean", "std", "paper", "diff"])
    merged = summary[[*keys, "mean", "std", "ci_low", "ci_high", "n_seeds", "complete"]].merge(
        ref[[*keys, "value"]].rename(columns={"value": "paper"}), on=keys, how="left"
    )
    merged["diff"] = merged["mean"] - merged["paper"]
    return merged.round({"mean": 2, "std": 2, "ci_low": 2, "ci_high": 2, "diff": 2})


def mind2web_table(df: pd.DataFrame, ref: pd.DataFrame, *, n_boot: int = 1000) -> EdvTable:
    """Table 2: rows (test set, metric), columns the measured upper bound (`TABLE2_BOUNDS`, over
    every run of the test set: the candidates do not depend on the method) then the method rows.
    A metric a benchmark does not record (a toy_tools stand-in has only success) shows as '–'."""
    parts, tests = [], []
    for metric, column in TABLE2_METRICS.items():
        bound = cells(df, ["benchmark"], metric=TABLE2_BOUNDS[metric], n_boot=n_boot)
        if not bound.empty:  # pooled over every run of the test set, so no one run's sample count applies
            parts.append(bound.assign(metric=metric, row=UPPER_BOUND, complete=True, flag=""))
        s = cells(df, ["benchmark", "row"], metric=column, n_boot=n_boot)
        if not s.empty:
            parts.append(s.assign(metric=metric))
            if column in df.columns:
                t = vs_strongest(df, s, target="edv", baselines=BASELINE_ROWS, metric=column, n_boot=2 * n_boot)
                tests.append(t.assign(metric=metric))
    summary = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["benchmark", "row", "metric"])
    benches = sorted(set(df["benchmark"])) if not df.empty else []
    index = [(b, TABLE2_NAMES[m]) for b in benches for m in TABLE2_METRICS]
    lookup = summary.set_index(["benchmark", "metric", "row"]) if not summary.empty else None
    ours = pd.DataFrame(
        [
            [
                _cell(lookup.loc[(b, m, r)]) if lookup is not None and (b, m, r) in lookup.index else "–"
                for r in [UPPER_BOUND, *MAIN_ROWS]
            ]
            for b in benches
            for m in TABLE2_METRICS
        ],
        index=pd.MultiIndex.from_tuples(index, names=["benchmark", "metric"]) if index else None,
        columns=[MEASURED_BOUND, *MAIN_ROWS.values()],
    )
    paper = ref.pivot_table(index=["benchmark", "metric"], columns="row", values="value", aggfunc="first")
    order = [(b, m) for b in dict.fromkeys(ref["benchmark"]) for m in TABLE2_METRICS]
    paper = paper.reindex(index=pd.MultiIndex.from_tuples(order), columns=["upper_bound", *MAIN_ROWS])
    paper.index = pd.MultiIndex.from_tuples([(b, TABLE2_NAMES[m]) for b, m in order], names=["benchmark", "metric"])
    paper.columns = ["upper bound", *MAIN_ROWS.values()]
    comparison = _compare(summary, ref, ["benchmark", "metric", "row"]) if not summary.empty else summary
    return EdvTable(ours, paper, comparison, pd.concat(tests, ignore_index=True) if tests else pd.DataFrame())


def mmtb_table(df: pd.DataFrame, ref: pd.DataFrame, *, n_boot: int = 1000) -> EdvTable:
    """Table 3: MMTB's nine numbers per row, computed per seed from the per-mission metrics
    (aecg_bench.benchmarks.mmtb.metrics.summary), then mean ± std over seeds. Without MMTB's
    metrics (a stand-in benchmark) only `All` (success) is filled."""
    from aecg_bench.benchmarks.mmtb.metrics import summary as mmtb_summary

    data = df[df["phase"] == "eval"] if not df.empty else df
    rows = []
    for (bench, row, seed), g in data.groupby(["benchmark", "row", "seed"]):
        metric_cols = {c[len("metric_") :]: c for c in g.columns if c.startswith("metric_")}
        if {"success", "is_single"} <= set(metric_cols):
            per = g[list(metric_cols.values())].rename(columns={v: k for k, v in metric_cols.items()}).fillna(0.0)
            values = mmtb_summary(per.to_dict("records"))
        else:
            values = {"all": float(g["success"].fillna(False).astype(float).mean())}
        rows += [
            {"benchmark": bench, "row": row, "seed": seed, "metric": k, "value": v * 100}
            for k, v in values.items()
            if v is not None and k in TABLE3_METRICS
        ]
    per_seed = pd.DataFrame(rows, columns=["benchmark", "row", "seed", "metric", "value"])
    agg = per_seed.groupby(["benchmark", "row", "metric"])["value"].agg(["mean", "std", "count"]).reset_index()
    agg["std"] = agg["std"].fillna(0.0)
    lookup = agg.set_index(["row", "metric"])
    ours = pd.DataFrame(
        [
            [
                cell_text(lookup.loc[(r, m)]["mean"], lookup.loc[(r, m)]["std"]) if (r, m) in lookup.index else "–"
                for m in TABLE3_METRICS
            ]
            for r in MAIN_ROWS
        ],
        index=list(MAIN_ROWS.values()),
        columns=list(TABLE3_METRICS.values()),
    )
    paper = ref.pivot_table(index="row", columns="metric", values="value", aggfunc="first")
    paper = paper.reindex(index=[r for r in MAIN_ROWS if r in paper.index], columns=list(TABLE3_METRICS))
    paper.index = [MAIN_ROWS[r] for r in paper.index]
    paper.columns = list(TABLE3_METRICS.values())
    comparison = agg.merge(
        ref[["row", "metric", "value"]].rename(columns={"value": "paper"}), on=["row", "metric"], how="left"
    )
    comparison["diff"] = comparison["mean"] - comparison["paper"]
    summary = cells(df, ["benchmark", "row"], n_boot=n_boot)
    tests = (
        vs_strongest(df, summary, target="edv", baselines=BASELINE_ROWS, n_boot=2 * n_boot)
        if not summary.empty
        else pd.DataFrame()
    )
    return EdvTable(ours, paper, comparison.round(2), tests)


def ablation_table(
    df: pd.DataFrame, ref: pd.DataFrame, rows: dict[str, str], *, full: str = "edv", n_boot: int = 1000
) -> EdvTable:
    """Tables 4, 5 and sec. 5.4: Pass@1 per row, its drop from the full method, each paired against it."""
    summary = cells(df, ["benchmark", "row"], n_boot=n_boot)
    benches = sorted(set(summary["benchmark"])) if not summary.empty else []
    ours = _grid(summary, rows, benches)
    for bench in benches:
        means = summary[summary["benchmark"] == bench].set_index("row")["mean"]
        ours[f"{bench} drop"] = [
            f"{means[r] - means[full]:+.1f}" if r in means and full in means and r != full else "–"
            for r in [*rows, *sorted(set(summary["row"]) - set(rows))]
        ]
    key = "memory" if "memory" in ref.columns else "row"
    paper_ref = ref.rename(columns={key: "row"})
    paper = paper_ref.set_index("row").reindex([r for r in rows if r in set(paper_ref["row"])])
    paper.index = [rows[r] for r in paper.index]
    paper = paper[[c for c in ("benchmark", "value", "drop") if c in paper.columns]]
    tests = []
    for bench in benches:
        sub = df[df["benchmark"] == bench]
        for r in sorted(set(sub["row"]) - {full}):
            if full in set(sub["row"]):
                tests.append({"benchmark": bench, "row": r, "vs": full, **paired(sub, r, full, n_boot=2 * n_boot)})
    comparison = _compare(summary, paper_ref, ["benchmark", "row"]) if "benchmark" in paper_ref else summary
    return EdvTable(ours, paper, comparison, pd.DataFrame(tests))


# --------------------------------------------------------------------------- figures' data


def recall_units(df: pd.DataFrame) -> str:
    """Figure 5's x unit: items when every ReasoningBank run caps its recall at top_k items
    (arm rb_items_b3), else RB counts entries (its own unit: one source task, up to 3 items)."""
    rb = df[df["method"].isin(("reasoningbank", "reasoningbank_contaminated"))]
    if rb.empty or "max_recalled_items" not in rb:
        return "items"
    matched = (rb["max_recalled_items"] == rb["top_k"]).all()
    return "items" if matched else "EDV: items; RB: entries"


def curve(df: pd.DataFrame, x: str, *, n_boot: int = 1000) -> pd.DataFrame:
    """Figure 4-6 data: per method (edv | rb) and x, mean and 95% CI of Pass@1 over seeds.

    A No-Memory run is Figure 5's x = 0, one point both curves start from (App. A.2: "both methods
    start from the same baseline (0.781)", Table 1's NM on RB's backbone)."""
    if df.empty:
        return pd.DataFrame(columns=["method", x, "mean", "ci_low", "ci_high", "n_seeds"])
    data = df.assign(curve=np.where(df["method"] == "edv", "edv", "rb"))
    baseline = data["method"] == "no_memory"
    if baseline.any():
        shared = data[baseline].assign(**{x: 0})
        data = pd.concat([data[~baseline], shared.assign(curve="edv"), shared.assign(curve="rb")])
    s = summarize(data, by=["curve", x], metric="success", n_boot=n_boot)
    return s.rename(columns={"curve": "method"})[["method", x, "mean", "std", "ci_low", "ci_high", "n_seeds"]]


# --------------------------------------------------------------------------- memory-side analyses


def latest_memory_state(run_dir: Path) -> dict[str, Any] | None:
    state = latest_snapshot_state(Path(run_dir))
    return None if state is None else state["memory"]


def bank_retrieval(df: pd.DataFrame) -> pd.DataFrame:
    """Sec. 5.5.2 per EDV run: the share of test tasks that recalled an item of each bank, the
    success-rate gain per hit (success with a hit minus success without, within the run) and
    the contribution (rate x gain). The paper does not define 'gain per hit'; this within-run
    difference is observational (tasks that find memory may differ from those that do not)."""
    out = []
    runs = df[(df["method"] == "edv") & (df["phase"] == "eval")]
    for (bench, row, seed, run_dir), g in runs.groupby(["benchmark", "row", "seed", "run_dir"]):
        state = latest_memory_state(Path(run_dir)) or {}
        bank = {i["id"]: i["bank"] for i in state.get("items", [])}
        recalled = g["recalled_memory_ids"] if "recalled_memory_ids" in g else pd.Series([[]] * len(g), index=g.index)
        success = g["success"].fillna(False).astype(float)
        for name in ("shared", "private"):
            hit = recalled.map(lambda ids, n=name, b=bank: any(b.get(i) == n for i in ids)).astype(bool)
            rate = float(hit.mean())
            gain = float(success[hit].mean() - success[~hit].mean()) if hit.any() and (~hit).any() else float("nan")
            out.append(
                {
                    "benchmark": bench,
                    "row": row,
                    "seed": seed,
                    "bank": name,
                    "retrieval_rate_pct": 100 * rate,
                    "gain_per_hit_pct": 100 * gain,
                    "contribution_pct": 100 * rate * gain if gain == gain else float("nan"),
                    "n_tasks": len(g),
                }
            )
    return pd.DataFrame(out)


def contamination_recall(df: pd.DataFrame) -> pd.DataFrame:
    """Sec. 5.4: per contaminated run, the injected share of stored ReasoningBank items and of the
    items recalled on test tasks (near each other when injected items are as retrievable as real ones)."""
    out = []
    runs = df[(df["method"] == "reasoningbank_contaminated") & (df["phase"] == "eval")]
    for (bench, seed, run_dir), g in runs.groupby(["benchmark", "seed", "run_dir"]):
        state = latest_memory_state(Path(run_dir)) or {}
        origin = {e["id"]: e.get("origin", "induced") for e in state.get("entries", [])}
        n_items = {e["id"]: len(e.get("items", [])) for e in state.get("entries", [])}
        stored = sum(n_items.values())
        injected = sum(n for eid, n in n_items.items() if origin[eid] == "contamination")
        recalled = [i for ids in g["recalled_memory_ids"] for i in ids]
        hits = sum(origin.get(i.rsplit("-", 1)[0]) == "contamination" for i in recalled)
        out.append(
            {
                "benchmark": bench,
                "seed": seed,
                "stored_items": stored,
                "injected_stored_pct": 100 * injected / stored if stored else float("nan"),
                "recalled_items": len(recalled),
                "injected_recalled_pct": 100 * hits / len(recalled) if recalled else float("nan"),
            }
        )
    return pd.DataFrame(out)


def inference_tokens(df: pd.DataFrame) -> pd.DataFrame:
    """Sec. 5.6: mean inference tokens per test task (every role except the environment's user
    simulator; frozen runs make no memory-side calls on test tasks), EDV against each RB backbone
    and their mean; reduction = 1 - EDV / RB (paper: 24.5% on RETAIL)."""
    data = df[df["phase"] == "eval"].copy()
    if data.empty:
        return pd.DataFrame()
    total = data["input_tokens"].fillna(0) + data["output_tokens"].fillna(0)
    data["inference_tokens"] = total - _role_sum(data, "tokens_", ENVIRONMENT_ROLES)
    per = data.groupby(["benchmark", "row"])["inference_tokens"].mean().unstack("row")
    out = []
    for bench, r in per.iterrows():
        if "edv" not in r or r["edv"] != r["edv"]:
            continue
        rbs = {c: r[c] for c in r.index if c.startswith("rb_b") and r[c] == r[c]}
        refs = {**rbs, **({"rb_mean": float(np.mean(list(rbs.values())))} if rbs else {})}
        for name, value in refs.items():
            out.append(
                {
                    "benchmark": bench,
                    "edv_tokens_per_task": round(float(r["edv"]), 1),
                    "vs": name,
                    "rb_tokens_per_task": round(float(value), 1),
                    "reduction_pct": round(100 * (1 - r["edv"] / value), 2) if value else float("nan"),
                }
            )
    return pd.DataFrame(out)


def audit_items(df: pd.DataFrame, *, benchmark: str | None = None) -> pd.DataFrame:
    """Every stored item of the EDV and RB runs (latest snapshot), one row each, for the human
    audit of sec. 5.3; `origin`/`bank` say where it came from."""
    rows = []
    runs = df[df["method"].isin(["edv", "reasoningbank"])]
    if benchmark is not None:
        runs = runs[runs["benchmark"] == benchmark]
    for (bench, row, seed, run_dir), _ in runs.groupby(["benchmark", "row", "seed", "run_dir"]):
        state = latest_memory_state(Path(run_dir)) or {}
        for item in state.get("items", []):
            rows.append(
                {
                    "benchmark": bench,
                    "row": row,
                    "seed": seed,
                    "run_dir": run_dir,
                    "memory_id": item["id"],
                    "where": item.get("bank", ""),
                    "source_task": item.get("task_id", ""),
                    "title": item.get("title", ""),
                    "description": item.get("description", ""),
                    "content": item.get("content", ""),
                }
            )
        for entry in state.get("entries", []):
            for n, item in enumerate(entry.get("items", [])):
                rows.append(
                    {
                        "benchmark": bench,
                        "row": row,
                        "seed": seed,
                        "run_dir": run_dir,
                        "memory_id": f"{entry['id']}-{n}",
                        "where": entry.get("origin", "induced"),
                        "source_task": entry.get("task_id", ""),
                        "title": item.get("title", ""),
                        "description": item.get("description", ""),
                        "content": item.get("content", ""),
                    }
                )
    return pd.DataFrame(rows)


def audit_sheets(items: pd.DataFrame, *, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rating sheet, key): the sheet shows only an opaque key and the item's text, in a shuffled
    order, with an empty column per sec. 5.3 dimension (0-5) and notes, so raters do not see which
    method wrote an item; the key maps each item key back to its run, method and bank."""
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    shuffled = items.iloc[order].reset_index(drop=True)
    keys = [f"item-{i + 1:04d}" for i in range(len(shuffled))]
    sheet = pd.DataFrame(
        {
            "item_key": keys,
            "title": shuffled["title"],
            "description": shuffled["description"],
            "content": shuffled["content"],
        }
    )
    for dim in AUDIT_DIMENSIONS:
        sheet[dim] = ""
    sheet["notes"] = ""
    key = shuffled.drop(columns=["title", "description", "content"]).assign(item_key=keys)
    return sheet, key


def audit_scores(sheet: pd.DataFrame, key: pd.DataFrame) -> pd.DataFrame:
    """A filled rating sheet -> mean rating per method (edv | rb) and dimension, beside sec. 5.3."""
    rated = sheet.merge(key[["item_key", "row"]], on="item_key")
    rated["method"] = np.where(rated["row"].str.startswith("rb"), "rb", "edv")
    long = rated.melt(id_vars=["method"], value_vars=list(AUDIT_DIMENSIONS), var_name="quantity", value_name="rating")
    long["rating"] = pd.to_numeric(long["rating"], errors="coerce")
    ours = long.dropna().groupby(["quantity", "method"])["rating"].agg(["mean", "count"]).reset_index()
    paper = reference("text")
    paper = paper[paper["section"].astype(str) == "5.3"].rename(columns={"variant": "method", "value": "paper"})
    return ours.merge(paper[["quantity", "method", "paper"]], on=["quantity", "method"], how="outer")
