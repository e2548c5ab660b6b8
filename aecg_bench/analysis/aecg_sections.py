"""The AECG paper's report sections: Table 1 with its claims, Table 2, Figure 5, learning curves
and per-role cost. Each registers itself with the report (aecg_bench.analysis.site)."""

from __future__ import annotations

import hashlib

import pandas as pd

from aecg_bench.analysis.facts import SMOKE_PREFIX, sweep_facts
from aecg_bench.analysis.load import CONFIG_COLUMNS
from aecg_bench.analysis.paper import (
    KEYS,
    MEMORIES,
    PaperTable,
    aecg_claims,
    build_tables,
    configurations,
    cost_table,
    is_smoke,
    load_reference,
    readable_cells,
    readable_claims,
)
from aecg_bench.analysis.plots import learning_curve, role_cost_bars, score_heatmap
from aecg_bench.analysis.site import Context, Facts, Figure, Part, Table, Text, register_section
from aecg_bench.analysis.stats import summarize
from aecg_bench.analysis.tables import flat_columns

TABLE1 = ("aecg_table1", "aecg_table1-smoke")
TABLE2 = ("aecg_table2", "aecg_table2-smoke")
CMD_TABLE1 = "make reproduce-table1 PRESET=paper  (offline smoke: make reproduce-table1)"
CMD_TABLE2 = "make reproduce-table2 PRESET=paper  (offline smoke: make reproduce-table2)"


def slug(config: dict[str, str]) -> str:
    """A file-name-safe, stable name for one configuration's figures."""
    digest = hashlib.sha256(repr(sorted(config.items())).encode()).hexdigest()[:8]
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in config.get("experiment", ""))[:40] + "_" + digest


def facts(df: pd.DataFrame, table: PaperTable, command: str) -> Facts:
    """`sweep_facts` for one configuration's table, with its sample counts and completeness per cell."""
    s = table.summary
    flagged = sorted(set(s["flag"]) - {""})
    per_cell = {
        "samples": f"{int(s['n_samples'].sum())} of {int(s['n_expected'].sum())} expected",
        "completeness": f"{int(s['complete'].sum())} of {len(s)} cells complete"
        + (f" (flagged: {', '.join(flagged)})" if flagged else ""),
        "infra errors": str(int(s["n_infra_error"].sum())),
    }
    return Facts({**sweep_facts(df, command), **per_cell})


def config_frame(df: pd.DataFrame, config: dict[str, str]) -> pd.DataFrame:
    cols = [c for c in CONFIG_COLUMNS if c in df.columns]
    return df[(df[cols].astype(str) == pd.Series(config)).all(axis=1)]


def _table_parts(
    df: pd.DataFrame, ctx: Context, *, name: str, reference: str, compare_to: str, command: str, claims: bool
) -> list[Part]:
    parts: list[Part] = []
    for table in build_tables(df, load_reference(reference), compare_to=compare_to, n_boot=ctx.n_boot):
        sub = config_frame(df, table.config)
        head = f"{name} — {table.config['experiment']}, {table.config['assignment']}"
        if table.smoke:
            parts.append(Text(table.caption_prefix.strip()))
        parts.append(facts(sub, table, command))
        parts.append(
            Table(
                f"{table.caption_prefix}{head}: success (%), mean ± std over seeds [bootstrap 95% CI]",
                table.display,
                note="† = cell with missing or extra samples or infra errors; – = not run.",
            )
        )
        parts.append(
            Table(
                f"{table.caption_prefix}{head}: every cell, paired test against "
                + ("the strongest baseline of its setting" if compare_to == "strongest_baseline" else "full AECG"),
                readable_cells(table),
                index=False,
                note="Δ = mean paired difference (same seed and sample) in points, bootstrap 95% CI; p = two-sided "
                "sign-flip permutation test. paper = the paper's value where its text reports one"
                + ("." if table.smoke else "; ours − paper = the gap."),
            )
        )
        if claims:
            margins = load_reference(f"{reference}_margins")
            parts.append(
                Table(
                    f"{table.caption_prefix}{head}: the paper's claims recomputed from our cells",
                    readable_claims(aecg_claims(table.summary, margins), smoke=table.smoke),
                    index=False,
                )
            )
    return parts


def _reference_parts(reference: str, command: str) -> list[Part]:
    ref = load_reference(reference)
    shown = ref.assign(ours="not run", memory=[MEMORIES.get(m, m) for m in ref["memory"]])
    return [
        Text(f"No results yet. Run: {command}"),
        Table(
            "The paper's values (ours: not run)",
            shown[["framework", "benchmark", "memory", "ours", "value", "kind", "source"]],
            index=False,
        ),
    ]


@register_section(
    "aecg_table1",
    title="AECG Table 1: success by framework, benchmark and memory method",
    paper="AECG",
    folders=TABLE1,
    command=CMD_TABLE1,
    order=10,
    not_run=lambda ctx: _reference_parts("aecg_table1", CMD_TABLE1),
)
def table1(df: pd.DataFrame, ctx: Context) -> list[Part]:
    return _table_parts(
        df,
        ctx,
        name="AECG Table 1",
        reference="aecg_table1",
        compare_to="strongest_baseline",
        command=CMD_TABLE1,
        claims=True,
    )


@register_section(
    "aecg_table2",
    title="AECG Table 2: component ablations",
    paper="AECG",
    folders=TABLE2,
    command=CMD_TABLE2,
    order=20,
    not_run=lambda ctx: _reference_parts("aecg_table2", CMD_TABLE2),
)
def table2(df: pd.DataFrame, ctx: Context) -> list[Part]:
    return _table_parts(
        df, ctx, name="AECG Table 2", reference="aecg_table2", compare_to="aecg", command=CMD_TABLE2, claims=False
    )


def _per_config_figures(df: pd.DataFrame, ctx: Context, stem: str, draw, title: str, caption: str) -> list[Part]:
    parts: list[Part] = []
    for config in configurations(df):
        sub = config_frame(df, config)
        prefix = SMOKE_PREFIX if is_smoke(config) else ""
        name = f"{stem}_{slug(config)}"
        png = draw(sub, ctx.figures_dir / name, f"{prefix}{title}")[0]
        parts.append(Figure(f"{prefix}{title} — {config['experiment']}, {config['assignment']}", png, caption))
    return parts


@register_section(
    "aecg_figure5",
    title="AECG Figure 5: score heatmap (framework × benchmark × memory)",
    paper="AECG",
    folders=TABLE1,
    command=CMD_TABLE1,
    order=30,
)
def figure5(df: pd.DataFrame, ctx: Context) -> list[Part]:
    def draw(sub: pd.DataFrame, stem, title: str):
        return score_heatmap(summarize(sub, by=KEYS, metric="success", n_boot=1), stem, title=title)

    return _per_config_figures(
        df,
        ctx,
        "aecg_figure5",
        draw,
        "Score by framework, benchmark and memory method",
        "Mean success (%) over seeds; the AECG row is outlined, as in the paper's Figure 5.",
    )


@register_section(
    "learning_curves",
    title="Learning curves: success over the task stream",
    paper="AECG",
    folders=(*TABLE1, *TABLE2),
    command=CMD_TABLE1,
    order=40,
)
def learning_curves(df: pd.DataFrame, ctx: Context) -> list[Part]:
    return _per_config_figures(
        df,
        ctx,
        "learning_curve",
        lambda sub, stem, title: learning_curve(sub, stem, title=title),
        "Learning curve per method",
        "Running mean of success over the last 10 tasks of the eval stream, mean over seeds (band: min..max).",
    )


@register_section(
    "role_cost",
    title="Cost by role",
    paper="AECG",
    folders=(*TABLE1, *TABLE2),
    command=CMD_TABLE1,
    order=50,
)
def role_cost(df: pd.DataFrame, ctx: Context) -> list[Part]:
    parts: list[Part] = _per_config_figures(
        df,
        ctx,
        "role_cost",
        lambda sub, stem, title: role_cost_bars(sub, stem, title=title),
        "Tokens per sample by role",
        "Hatched bars are memory-side roles (memory, judges, distiller, verifier); plain bars act on the task.",
    )
    cost = cost_table(df)
    parts.append(Table("Usage and cost per cell (all configurations)", flat_columns(cost), index=False))
    return parts
