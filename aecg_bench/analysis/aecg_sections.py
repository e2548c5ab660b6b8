"""The AECG paper's report sections: Table 1 with its claims, Table 2, Figure 5, learning curves
and per-role cost. Each registers itself with the report (aecg_bench.analysis.site)."""

from __future__ import annotations

import hashlib

import pandas as pd

from aecg_bench.analysis.facts import facts_part
from aecg_bench.analysis.load import CONFIG_COLUMNS, preset_folders
from aecg_bench.analysis.paper import (
    KEYS,
    MEMORIES,
    PaperTable,
    aecg_claims,
    banner,
    build_tables,
    compact_cost,
    configurations,
    cost_table,
    display_links,
    load_margins,
    load_reference,
    preset_of,
    readable_cells,
    readable_claims,
    role_tokens,
)
from aecg_bench.analysis.plots import learning_curve, role_cost_bars, score_heatmap
from aecg_bench.analysis.site import Claim, Claims, Context, Facts, Figure, Part, Table, Text, register_section
from aecg_bench.analysis.stats import summarize

TABLE1 = preset_folders("aecg_table1")
TABLE2 = preset_folders("aecg_table2")
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
    return facts_part(df, command, per_cell)


def claims_part(claims: pd.DataFrame, table: PaperTable) -> Claims:
    """The claims rows (`aecg_claims`) for the page and its first screen; the bare count of
    settings is context, not a claim."""
    shown = readable_claims(claims, smoke=table.smoke)
    items = tuple(
        Claim(
            statement=row["Claim"]
            if row["Framework"] == "all" or row["Claim"].startswith(row["Framework"])
            else f"{row['Framework']}: {row['Claim']}",
            ours=row["ours"],
            ci=row["95% CI / range"],
            p=row["p"],
            verdict=row["verdict"],
            paper=row["paper"],
        )
        for (_, row), quantity in zip(shown.iterrows(), claims["quantity"], strict=True)
        if quantity != "settings"
    )
    return Claims(
        f"{table.caption_prefix}AECG §4.2's claims recomputed from our cells — {table.config['experiment']}",
        items,
        table.preset,
        table.config["experiment"],
    )


def config_frame(df: pd.DataFrame, config: dict[str, str]) -> pd.DataFrame:
    cols = [c for c in CONFIG_COLUMNS if c in df.columns]
    return df[(df[cols].astype(str) == pd.Series(config)).all(axis=1)]


def _table_parts(
    df: pd.DataFrame, ctx: Context, *, name: str, reference: str, compare_to: str, command: str
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
                note="† = cell with missing or extra samples or infra errors; – = not run. Each cell links to its "
                "runs in the run viewer when this page is opened through it (make view; /report/).",
                links=display_links(table),
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
        margins = load_margins(reference)
        if margins is not None and "aecg" in set(table.summary["memory"]):
            raw = aecg_claims(table.summary, margins, sub, n_boot=ctx.n_boot)
            parts.append(claims_part(raw, table))
            parts.append(
                Text(
                    "Verdicts: holds / fails where the paired difference's bootstrap 95% CI excludes 0 (in the "
                    "claimed direction / against it) and the sign-flip p < 0.05, otherwise undecided: ties and "
                    "all-zero cells never count as wins. Count claims show the settings decided in AECG's "
                    "favour, the range they could reach, and hold when that reaches the paper's share."
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
    return _table_parts(df, ctx, name="AECG Table 2", reference="aecg_table2", compare_to="aecg", command=CMD_TABLE2)


def _per_config_figures(df: pd.DataFrame, ctx: Context, stem: str, draw, title: str, caption: str) -> list[Part]:
    parts: list[Part] = []
    for config in configurations(df):
        sub = config_frame(df, config)
        prefix = banner(preset_of(config))
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
    """Per configuration: tokens per sample by role (the figure and the same numbers as a table,
    so its legend lists exactly the table's roles), then the usage and cost of every cell."""
    parts: list[Part] = []
    for config in configurations(df):
        sub = config_frame(df, config)
        prefix = banner(preset_of(config))
        head = f"{config['experiment']}, {config['assignment']}"
        png = role_cost_bars(
            sub, ctx.figures_dir / f"role_cost_{slug(config)}", title=f"{prefix}Tokens per sample by role"
        )[0]
        parts.append(
            Figure(
                f"{prefix}Tokens per sample by role — {head}",
                png,
                "Hatched bars are memory-side roles (memory, judges, distiller, verifier); plain bars act on the task.",
            )
        )
        parts.append(Table(f"{prefix}Tokens per evaluated sample by role — {head}", role_tokens(sub).round(1)))
        parts.append(
            Table(
                f"{prefix}Usage and cost per cell — {head} ({preset_of(config)}: {config['preset']}; "
                f"protocol {config['protocol']})",
                compact_cost(cost_table(sub)),
                index=False,
                note="tokens: eval phase by side; construction = every phase before eval (build epochs, warm-up "
                "tasks); $ = every phase. Per-role columns: the table above and the CSV files.",
            )
        )
    return parts
