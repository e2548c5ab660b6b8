"""The EDV paper's report sections: Tables 1-5, memory contamination (sec. 5.4), retrieval per bank
(sec. 5.5.2), inference tokens (sec. 5.6) and Figures 4-6, each from its experiment's results
folders (conf/experiment/edv_*.yaml) beside the paper's numbers (results/reference/edv_*.csv).

Tables and figures are the ones `scripts/make_edv_tables.py` and `scripts/make_edv_figures.py`
write (aecg_bench/analysis/edv.py); this module only lays them out on the page. Every experiment
folder (the paper preset's and the smoke one) is shown on its own, never pooled."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from aecg_bench.analysis import edv
from aecg_bench.analysis.facts import facts_part
from aecg_bench.analysis.load import PAPER_PRESET, preset_folders
from aecg_bench.analysis.paper import MixedCellsError, banner, configurations, preset_of
from aecg_bench.analysis.plots import edv_curve
from aecg_bench.analysis.site import Claim, Claims, Context, Figure, Part, Table, Text, register_section

IDENTITY = ("assignment", "protocol", "preset")
TABLE_NOTE = "mean ± std over seeds [hierarchical-bootstrap 95% CI], in %; † = incomplete cell; – = not run."
TEST_NOTE = "Δ = mean paired difference in points (same benchmark, seed and sample), bootstrap 95% CI; p = sign-flip."


def command(name: str) -> str:
    return f"make reproduce-edv PRESET=paper ONLY={name}  (offline smoke: make reproduce-edv PRESET=smoke ONLY={name})"


def folders(name: str) -> tuple[str, ...]:
    return preset_folders(f"edv_{name}")


def check_identity(df: pd.DataFrame, by: list[str]) -> None:
    """A table cell (row x benchmark, and x for a figure) holds one configuration: runs of one row
    under two model assignments, protocols or sizes are refused, naming both."""
    cols = [c for c in IDENTITY if c in df.columns]
    for key, g in df.groupby(by, sort=True, dropna=False):
        seen = g[cols].drop_duplicates()
        if len(seen) > 1:
            values = " vs ".join("; ".join(f"{c}={r[c]}" for c in cols) for _, r in seen.iterrows())
            raise MixedCellsError(f"EDV cell {key} mixes configurations: {values}")


def experiments(df: pd.DataFrame, by: list[str]) -> list[tuple[str, pd.DataFrame, str]]:
    """(experiment, its annotated samples, its preset label) per experiment folder, each checked by
    `check_identity`."""
    out = []
    for experiment, sub in df.groupby("experiment", sort=True):
        sub = edv.annotate(sub.reset_index(drop=True))
        check_identity(sub, by)
        labels = sorted({preset_of(c) for c in configurations(sub)})
        out.append((str(experiment), sub, " | ".join(labels)))
    return out


def prefix_of(preset: str) -> str:
    return "" if preset == PAPER_PRESET else banner(preset.split(" | ")[0])


def _head(experiment: str, sub: pd.DataFrame, preset: str, name: str) -> list[Part]:
    parts: list[Part] = []
    if preset != PAPER_PRESET:
        parts.append(Text(f"{prefix_of(preset)}{experiment} ({', '.join(sorted(set(sub['preset'])))})."))
    parts.append(facts_part(sub, command(name)))
    return parts


def main_claims(tests: pd.DataFrame) -> list[Claim]:
    """EDV's claim in Tables 1-3: EDV above the strongest single-backbone or ensemble baseline."""
    if tests.empty:
        return []
    rows = tests[tests["target"] == "edv"]
    return [
        Claim.from_paired(
            f"EDV above the strongest baseline ({edv.MAIN_ROWS.get(r['strongest_baseline'], r['strongest_baseline'])}) "
            f"on {r['benchmark']}" + (f", {edv.TABLE2_NAMES.get(r['metric'], r['metric'])}" if "metric" in r else ""),
            r.to_dict(),
            +1,
        )
        for _, r in rows.iterrows()
    ]


def ablation_claims(tests: pd.DataFrame, names: dict[str, str], full: str) -> list[Claim]:
    """Tables 4-5 and sec. 5.4: every variant below the full method (row − full < 0)."""
    if tests.empty:
        return []
    return [
        Claim.from_paired(
            f"{names.get(r['row'], r['row'])} below {names.get(full, full)} on {r['benchmark']}", r.to_dict(), -1
        )
        for _, r in tests.iterrows()
    ]


def claims_part(claims: list[Claim], experiment: str, preset: str, title: str) -> list[Part]:
    if not claims:
        return []
    return [
        Claims(
            f"{prefix_of(preset)}{title} — {experiment}: the paper's claims, paired", tuple(claims), preset, experiment
        )
    ]


def readable_tests(tests: pd.DataFrame) -> pd.DataFrame:
    if tests.empty:
        return tests
    out = tests.copy()
    out["Δ (paired)"] = [
        "–" if d != d else f"{d:+.2f} [{lo:.2f}, {hi:.2f}]"
        for d, lo, hi in zip(out.pop("mean_diff"), out.pop("ci_low"), out.pop("ci_high"), strict=True)
    ]
    out["p"] = [f"{p:.3f}" if p == p else "–" for p in out.pop("p_value")]
    return out


def table_parts(t: edv.EdvTable, experiment: str, preset: str, title: str) -> list[Part]:
    """Ours, the paper's, the paired tests and the per-cell comparison (no 'ours − paper' outside the paper preset)."""
    smoke = preset != PAPER_PRESET
    prefix = prefix_of(preset)
    comparison = t.comparison.drop(columns=["diff"], errors="ignore") if smoke else t.comparison
    return [
        Table(f"{prefix}{title} — {experiment}: ours", t.ours, note=TABLE_NOTE),
        Table(f"{title}: the paper's", t.paper),
        Table(f"{prefix}{title} — {experiment}: paired tests", readable_tests(t.tests), index=False, note=TEST_NOTE),
        Table(
            f"{prefix}{title} — {experiment}: ours beside the paper, per cell",
            comparison,
            index=False,
            note="paper empty = the paper has no such cell (e.g. a stand-in benchmark)"
            + ("." if smoke else "; diff = ours − paper."),
        ),
    ]


def not_run(name: str, reference: Callable[[], pd.DataFrame]) -> Callable[[Context], list[Part]]:
    def parts(ctx: Context) -> list[Part]:
        return [
            Text(f"No results yet. Run: {command(name)}"),
            Table("The paper's values (ours: not run)", reference().assign(ours="not run"), index=False),
        ]

    return parts


def every_row_vs_strongest(df: pd.DataFrame, n_boot: int, metrics: dict[str, str] | None = None) -> pd.DataFrame:
    """Every row of a main table (not only EDV) against the strongest other single-backbone or
    ensemble baseline of its benchmark, paired by seed and sample; per metric for Table 2."""
    frames = []
    for metric, column in (metrics or {"success": "success"}).items():
        if column not in df.columns:
            continue
        summary = edv.cells(df, ["benchmark", "row"], metric=column, n_boot=n_boot)
        for row in [r for r in edv.MAIN_ROWS if r in set(df["row"])]:
            others = tuple(b for b in edv.BASELINE_ROWS if b != row)
            t = edv.vs_strongest(df, summary, target=row, baselines=others, metric=column, n_boot=n_boot)
            frames.append(t.assign(metric=metric) if metrics else t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def main_tables(make: Callable[[pd.DataFrame, Context], edv.EdvTable], metrics: dict[str, str] | None = None):
    """Tables 1-3: the table `make` builds, with a paired test for every row."""

    def build(df: pd.DataFrame, ctx: Context) -> edv.EdvTable:
        return replace(make(df, ctx), tests=every_row_vs_strongest(df, ctx.n_boot, metrics))

    return build


def _table_section(
    key: str,
    name: str,
    title: str,
    order: int,
    make: Callable[[pd.DataFrame, Context], edv.EdvTable],
    claims: Callable[[pd.DataFrame], list[Claim]],
) -> None:
    """Register one paper table: `make` builds it from one experiment's annotated samples, `claims`
    reads the paper's claims off its paired tests."""

    def build(df: pd.DataFrame, ctx: Context) -> list[Part]:
        parts: list[Part] = []
        for experiment, sub, preset in experiments(df, ["benchmark", "row"]):
            parts += _head(experiment, sub, preset, name)
            table = make(sub, ctx)
            parts += table_parts(table, experiment, preset, title)
            parts += claims_part(claims(table.tests), experiment, preset, title)
        return parts

    register_section(
        key,
        title=title,
        paper="EDV",
        folders=folders(name),
        command=command(name),
        order=order,
        not_run=not_run(name, lambda: edv.reference(name)),
    )(build)


_table_section(
    "edv_table1",
    "table1",
    "EDV Table 1: Pass@1 on τ²-bench domains",
    110,
    main_tables(lambda d, c: edv.main_table(d, edv.reference("table1"), n_boot=c.n_boot)),
    main_claims,
)
_table_section(
    "edv_table2",
    "table2",
    "EDV Table 2: Mind2Web (EA, AF1, SSR, SR)",
    120,
    main_tables(lambda d, c: edv.mind2web_table(d, edv.reference("table2"), n_boot=c.n_boot), edv.TABLE2_METRICS),
    main_claims,
)
_table_section(
    "edv_table3",
    "table3",
    "EDV Table 3: MMTB",
    130,
    main_tables(lambda d, c: edv.mmtb_table(d, edv.reference("table3"), n_boot=c.n_boot)),
    main_claims,
)
_table_section(
    "edv_table4",
    "table4",
    "EDV Table 4: progressive paradigm ablation",
    140,
    lambda d, c: edv.ablation_table(d, edv.reference("table4"), edv.TABLE4_ROWS, n_boot=c.n_boot),
    lambda tests: ablation_claims(tests, edv.TABLE4_ROWS, "edv"),
)
_table_section(
    "edv_table5",
    "table5",
    "EDV Table 5: component ablation",
    150,
    lambda d, c: edv.ablation_table(d, edv.reference("table5"), edv.TABLE5_ROWS, n_boot=c.n_boot),
    lambda tests: ablation_claims(tests, edv.TABLE5_ROWS, "edv"),
)


@register_section(
    "edv_contamination",
    title="EDV §5.4: memory contamination (RB with 10% injected wrong experience)",
    paper="EDV",
    folders=folders("contamination"),
    command=command("contamination"),
    order=160,
    not_run=not_run("contamination", lambda: edv.text_reference("5.4")),
)
def contamination(df: pd.DataFrame, ctx: Context) -> list[Part]:
    parts: list[Part] = []
    for experiment, sub, preset in experiments(df, ["benchmark", "row"]):
        parts += _head(experiment, sub, preset, "contamination")
        t = edv.ablation_table(
            sub, edv.contamination_reference(), edv.CONTAMINATION_ROWS, full="rb_b3", n_boot=ctx.n_boot
        )
        parts += table_parts(t, experiment, preset, "EDV §5.4")
        parts += claims_part(ablation_claims(t.tests, edv.CONTAMINATION_ROWS, "rb_b3"), experiment, preset, "EDV §5.4")
        parts.append(
            Table(
                f"{prefix_of(preset)}EDV §5.4 — {experiment}: injected share of stored and recalled items "
                "(paper: 10% of the memory volume)",
                edv.contamination_recall(sub),
                index=False,
            )
        )
    return parts


@register_section(
    "edv_bank_retrieval",
    title="EDV §5.5.2: retrieval per memory bank (shared vs private)",
    paper="EDV",
    folders=folders("table5"),
    command=command("table5"),
    order=155,
    not_run=not_run("table5", lambda: edv.text_reference("5.5.2")),
)
def bank_retrieval(df: pd.DataFrame, ctx: Context) -> list[Part]:
    parts: list[Part] = []
    paper = edv.text_reference("5.5.2").pivot_table(
        index="variant", columns="quantity", values="value", aggfunc="first"
    )
    for experiment, sub, preset in experiments(df, ["benchmark", "row"]):
        prefix = prefix_of(preset)
        parts += _head(experiment, sub, preset, "table5")
        per_seed = edv.bank_retrieval(sub)
        if per_seed.empty:
            parts.append(Text(f"{experiment}: no EDV run (the full method) to measure retrieval per bank in."))
            continue
        measures = ["retrieval_rate_pct", "gain_per_hit_pct", "contribution_pct"]
        agg = per_seed.groupby(["benchmark", "row", "bank"])[measures].agg(["mean", "std"]).round(2)
        agg[("seeds", "n")] = per_seed.groupby(["benchmark", "row", "bank"]).size()
        parts.append(
            Table(
                f"{prefix}EDV §5.5.2 — {experiment}: retrieval rate, success gain per hit and contribution (%), "
                "mean and std over seeds",
                agg,
                note="Gain per hit = success on tasks that recalled an item of the bank minus success on tasks "
                "that did not, within a run: observational, the paper does not define it.",
            )
        )
    parts.append(Table("EDV §5.5.2: the paper's", paper))
    return parts


@register_section(
    "edv_tokens",
    title="EDV §5.6: inference tokens per test task, EDV vs ReasoningBank",
    paper="EDV",
    folders=folders("table1"),
    command=command("table1"),
    order=115,
    not_run=not_run("table1", lambda: edv.text_reference("5.6")),
)
def tokens(df: pd.DataFrame, ctx: Context) -> list[Part]:
    parts: list[Part] = []
    for experiment, sub, preset in experiments(df, ["benchmark", "row"]):
        parts += _head(experiment, sub, preset, "table1")
        parts.append(
            Table(
                f"{prefix_of(preset)}EDV §5.6 — {experiment}: mean inference tokens per test task "
                "(every role but the user simulator)",
                edv.inference_tokens(sub),
                index=False,
                note="reduction = 1 − EDV / RB, against each RB backbone and their mean.",
            )
        )
    parts.append(Table("EDV §5.6: the paper's", edv.text_reference("5.6"), index=False))
    return parts


# Figures 4-6 (App. A.1-A.3): the swept setting (a column `edv.annotate` adds) and its axis label.
FIGURES = {
    "fig4_epochs": ("build_epochs", "construction epochs", "EDV Figure 4: Pass@1 over construction epochs", 170),
    "fig5_topk": ("top_k", "retrieved memories ({units})", "EDV Figure 5: Pass@1 vs number of retrieved memories", 171),
    "fig6_threshold": (
        "threshold",
        "recall threshold τ (shared bank)",
        "EDV Figure 6: Pass@1 vs recall threshold",
        172,
    ),
}


def curve_tests(sub: pd.DataFrame, x: str, n_boot: int) -> pd.DataFrame:
    """At each x both methods ran: EDV minus RB, paired by benchmark, seed and sample."""
    data = sub.assign(row=np.where(sub["method"] == "edv", "edv", "rb"))
    rows = []
    for value, g in data.groupby(x, sort=True):
        if {"edv", "rb"} <= set(g["row"]):
            rows.append({x: value, "target": "edv", "vs": "rb", **edv.paired(g, "edv", "rb", n_boot=n_boot)})
    return pd.DataFrame(rows)


def _figure_section(name: str) -> None:
    x, xlabel, title, order = FIGURES[name]

    def build(df: pd.DataFrame, ctx: Context) -> list[Part]:
        parts: list[Part] = []
        ref = edv.reference("figures")
        ref = ref[ref["figure"] == name]
        for experiment, sub, preset in experiments(df, ["benchmark", "method", "row", x]):
            prefix = prefix_of(preset)
            parts += _head(experiment, sub, preset, name)
            data = edv.curve(sub, x, n_boot=ctx.n_boot)
            points = ref[ref["x"].notna()].astype({"x": float})
            png = edv_curve(
                data,
                points,
                x,
                xlabel.format(units=edv.recall_units(sub)),
                f"{prefix}{title}",
                ctx.figures_dir / f"edv_{name}_{experiment}",
            )[0]
            parts.append(
                Figure(
                    f"{prefix}{title} — {experiment}",
                    png,
                    "Lines: ours, mean over seeds with bootstrap 95% CI; hollow markers: values the paper's text states.",
                )
            )
            parts.append(Table(f"{prefix}{title} — {experiment}: ours", data.round(2), index=False))
            tests = readable_tests(curve_tests(sub, x, ctx.n_boot))
            if tests.empty:
                parts.append(Text(f"{experiment}: no {x} at which both EDV and RB ran, so no paired test."))
                continue
            parts.append(
                Table(f"{prefix}{title} — {experiment}: EDV vs RB at each {x}", tests, index=False, note=TEST_NOTE)
            )
        parts.append(Table(f"{title}: the paper's stated points", ref, index=False))
        return parts

    register_section(
        f"edv_{name.split('_')[0].replace('fig', 'figure')}",
        title=title,
        paper="EDV",
        folders=folders(name),
        command=command(name),
        order=order,
        not_run=not_run(name, lambda: edv.reference("figures").loc[lambda r: r["figure"] == name]),
    )(build)


for _name in FIGURES:
    _figure_section(_name)
