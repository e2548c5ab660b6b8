"""The AECG paper's mechanism tests in the report: Table 3 (RQ2, scope), Figure 3 (RQ3, drift and
detection delay) and Figure 4 (RQ4, budgeted triage), each from its tests' `mechanisms.csv`
(aecg_bench/mechanisms/protocol.py), beside the paper's values (results/reference/aecg_mechanisms.csv)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from aecg_bench.analysis.facts import SMOKE_PREFIX, sweep_facts
from aecg_bench.analysis.load import load
from aecg_bench.analysis.mechanisms import (
    FIGURE3,
    FIGURE4,
    bar_figure,
    read_measures,
    readable,
    summarise,
    table3_frame,
)
from aecg_bench.analysis.paper import load_reference
from aecg_bench.analysis.site import Context, Facts, Figure, Part, Table, Text, register_section

CMD = "make reproduce-mechanisms PRESET=paper  (offline smoke: make reproduce-mechanisms PRESET=smoke)"
NOTE = (
    "ours = mean ± std over seeds [bootstrap 95% CI over seeds]; Δ = the variant minus full AECG's variant, "
    "paired by seed (same warm-up snapshot and corruption), bootstrap 95% CI, sign-flip permutation p."
)


def _folders(test: str) -> tuple[str, str]:
    return (f"aecg_{test}", f"aecg_{test}-smoke")


def _facts(ctx: Context, folder: str, measures: pd.DataFrame) -> Facts:
    """The variant runs' facts (config, samples, cost) when their records are in the folder."""
    samples = load(ctx.results_root / folder)
    items = sweep_facts(samples, CMD) if not samples.empty else {"experiment": folder, "command": CMD}
    seeds = ", ".join(str(s) for s in sorted(set(measures["seed"])))
    variants = ", ".join(dict.fromkeys(measures["variant"]))
    return Facts({"measured seeds": seeds, "variants": variants, **items})


def _parts(
    measures: pd.DataFrame,
    ctx: Context,
    *,
    test: str,
    name: str,
    draw: Callable[[pd.DataFrame, str, str], list[Part]],
) -> list[Part]:
    """Per results folder (the paper preset and the smoke one never pooled): facts, the tables, the figure."""
    parts: list[Part] = []
    for folder, group in measures.groupby("folder", sort=True):
        smoke = str(folder).endswith("-smoke")
        prefix = SMOKE_PREFIX if smoke else ""
        summary = summarise(group, n_boot=ctx.n_boot)
        if smoke:
            parts.append(Text(f"{prefix}{folder} ran in the scripted mock world; it shows each mechanism's direction."))
        parts.append(_facts(ctx, str(folder), group))
        parts += draw(summary, f"{prefix}{name} — {folder}", str(folder))
        parts.append(
            Table(
                f"{prefix}{name} — {folder}: every quantity and variant",
                readable(summary, test, smoke=smoke),
                index=False,
                note=NOTE + ("" if smoke else " ours − paper = the gap."),
            )
        )
    return parts


def _not_run(test: str) -> Callable[[Context], list[Part]]:
    def parts(ctx: Context) -> list[Part]:
        ref = load_reference("aecg_mechanisms")
        ref = ref[ref["test"] == test].assign(ours="not run")
        return [
            Text(f"No results yet. Run: {CMD}"),
            Table(
                "The paper's values (ours: not run)",
                ref[["quantity", "variant", "ours", "value", "source"]],
                index=False,
            ),
        ]

    return parts


@register_section(
    "aecg_table3",
    title="AECG Table 3: scope preservation (RQ2, hard vs flat scope)",
    paper="AECG",
    folders=_folders("rq2_scope"),
    command=CMD,
    order=60,
    not_run=_not_run("rq2_scope"),
    loader=read_measures,
)
def table3(measures: pd.DataFrame, ctx: Context) -> list[Part]:
    def draw(summary: pd.DataFrame, title: str, folder: str) -> list[Part]:
        return [Table(f"{title}: cross-scope use (%), success (%), exposure", table3_frame(summary), note=NOTE)]

    return _parts(measures, ctx, test="rq2_scope", name="AECG Table 3", draw=draw)


def _figure(test: str, quantities: tuple[str, ...], stem: str, caption: str, ctx: Context):
    def draw(summary: pd.DataFrame, title: str, folder: str) -> list[Part]:
        png = bar_figure(summary, test, quantities, ctx.figures_dir / f"{stem}_{folder}", title)[0]
        return [Figure(title, png, caption)]

    return draw


@register_section(
    "aecg_figure3",
    title="AECG Figure 3: corrupted skills — detection delay, polluted uses, success (RQ3)",
    paper="AECG",
    folders=_folders("rq3_drift"),
    command=CMD,
    order=61,
    not_run=_not_run("rq3_drift"),
    loader=read_measures,
)
def figure3(measures: pd.DataFrame, ctx: Context) -> list[Part]:
    caption = (
        "Bars: ours, mean over seeds with bootstrap 95% CI; diamonds: the paper's values. Uses to review = "
        "detection delay (uses of a corrupted skill until its first review)."
    )
    draw = _figure("rq3_drift", FIGURE3, "aecg_figure3", caption, ctx)
    return _parts(measures, ctx, test="rq3_drift", name="AECG Figure 3", draw=draw)


@register_section(
    "aecg_figure4",
    title="AECG Figure 4: budgeted triage — exposure-aware vs risk-only vs random (RQ4)",
    paper="AECG",
    folders=_folders("rq4_triage"),
    command=CMD,
    order=62,
    not_run=_not_run("rq4_triage"),
    loader=read_measures,
)
def figure4(measures: pd.DataFrame, ctx: Context) -> list[Part]:
    caption = "Bars: ours, mean over seeds with bootstrap 95% CI; diamonds: the paper's values."
    draw = _figure("rq4_triage", FIGURE4, "aecg_figure4", caption, ctx)
    return _parts(measures, ctx, test="rq4_triage", name="AECG Figure 4", draw=draw)
