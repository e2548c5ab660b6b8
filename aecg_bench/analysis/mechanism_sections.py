"""The AECG paper's mechanism tests in the report: Table 3 (RQ2, scope), Figure 3 (RQ3, drift and
detection delay) and Figure 4 (RQ4, budgeted triage), each from its tests' `mechanisms.csv`
(aecg_bench/mechanisms/protocol.py), beside the paper's values (results/reference/aecg_mechanisms.csv)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from aecg_bench.analysis.facts import facts_part
from aecg_bench.analysis.load import load, preset_folders
from aecg_bench.analysis.mechanisms import (
    FIGURE3,
    FIGURE4,
    FULL_VARIANT,
    bar_figure,
    read_measures,
    readable,
    summarise,
    table3_frame,
)
from aecg_bench.analysis.paper import banner, load_reference, preset_of
from aecg_bench.analysis.site import Claim, Claims, Context, Facts, Figure, Part, Table, Text, register_section

CMD = "make reproduce-mechanisms PRESET=paper  (offline smoke: make reproduce-mechanisms PRESET=smoke)"
NOTE = (
    "ours = mean ± std over seeds [bootstrap 95% CI over seeds]; Δ = the variant minus full AECG's variant, "
    "paired by seed (same warm-up snapshot and corruption), bootstrap 95% CI, sign-flip permutation p."
)


def _folders(test: str) -> tuple[str, ...]:
    return preset_folders(f"aecg_{test}")


def _facts(ctx: Context, folder: str, measures: pd.DataFrame, preset: str) -> Facts:
    """The variant runs' facts (config, samples, cost) when their records are in the folder."""
    seeds = ", ".join(str(s) for s in sorted(set(measures["seed"])))
    variants = ", ".join(dict.fromkeys(measures["variant"]))
    head = {"measured seeds": seeds, "variants": variants}
    samples = load(ctx.results_root / folder)
    if samples.empty:
        return Facts({**head, "experiment": folder, "preset": preset, "command": CMD}, preset=preset)
    part = facts_part(samples, CMD)
    return Facts({**head, **part.items}, part.numbers, part.preset)


def mechanism_claims(summary: pd.DataFrame, test: str) -> list[Claim]:
    """Each variant against full AECG's, in the direction the paper's two values point (a quantity
    the paper gives for both); paired by seed."""
    full = FULL_VARIANT.get(test)
    d = summary[summary["test"] == test]
    paper = d.set_index(["quantity", "variant"])["paper"]
    claims = []
    for _, r in d.iterrows():
        base = paper.get((r["quantity"], full), float("nan"))
        if r["variant"] == full or r["paper"] != r["paper"] or base != base or r["paper"] == base:
            continue
        sign = 1 if r["paper"] > base else -1
        res = {
            "n": int(r["seeds"]),
            "mean_diff": r["diff_vs_full"],
            "ci_low": r["diff_ci_low"],
            "ci_high": r["diff_ci_high"],
            "p_value": r["p_value"],
        }
        statement = f"{r['quantity']}: {r['variant']} {'above' if sign > 0 else 'below'} {full}"
        claims.append(Claim.from_paired(statement, res, sign, f"{r['paper'] - base:+.2f}"))
    return claims


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
        preset = preset_of({"experiment": str(folder)})
        smoke = preset != "paper"
        prefix = banner(preset)
        summary = summarise(group, n_boot=ctx.n_boot)
        if preset == "smoke":
            parts.append(Text(f"{prefix}{folder} ran in the scripted mock world; it shows each mechanism's direction."))
        elif smoke:
            parts.append(Text(f"{prefix}{folder}."))
        parts.append(_facts(ctx, str(folder), group, preset))
        parts += draw(summary, f"{prefix}{name} — {folder}", str(folder))
        claims = mechanism_claims(summary, test)
        if claims:
            parts.append(
                Claims(
                    f"{prefix}{name} — {folder}: each variant against full AECG in the paper's direction "
                    "(paper = its difference)",
                    tuple(claims),
                    preset,
                    str(folder),
                )
            )
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
