"""Render aggregated cells as tables (CSV, Markdown, LaTeX/booktabs), optionally beside the paper's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd


def cell_text(
    mean: float,
    std: float | None = None,
    *,
    complete: bool = True,
    digits: int = 2,
    ci: tuple[float, float] | None = None,
) -> str:
    """'71.59 ± 1.20 [68.9, 74.1]' (mean ± std over seeds [bootstrap 95% CI]), with a dagger on
    cells that miss samples, hold extra ones or had infra errors."""
    if mean != mean:  # NaN
        return "–"
    text = f"{mean:.{digits}f}" if std is None or std != std else f"{mean:.{digits}f} ± {std:.{digits}f}"
    if ci is not None and ci[0] == ci[0]:
        text += f" [{ci[0]:.1f}, {ci[1]:.1f}]"
    return text if complete else text + " †"


def pivot(
    summary: pd.DataFrame, rows: str | list[str], cols: str | list[str], *, with_std: bool = True, digits: int = 2
) -> pd.DataFrame:
    """A display table of formatted cells (rows x cols)."""
    data = summary.copy()
    data["cell"] = [
        cell_text(m, s if with_std else None, complete=bool(c), digits=digits)
        for m, s, c in zip(data["mean"], data["std"], data["complete"], strict=True)
    ]
    return data.pivot_table(index=rows, columns=cols, values="cell", aggfunc="first")


def compare_with_reference(ours: pd.DataFrame, reference: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Our mean beside the paper's value and the difference, per key; unmatched cells stay visible."""
    ref = reference.rename(columns={"value": "paper"})
    merged = ours[[*keys, "mean", "std", "complete"]].merge(ref[[*keys, "paper"]], on=keys, how="outer")
    merged["diff"] = merged["mean"] - merged["paper"]
    return merged.sort_values(keys).reset_index(drop=True)


def flat_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Multi-level column names joined with ' / ' (for Markdown and the terminal)."""
    if not isinstance(table.columns, pd.MultiIndex):
        return table
    out = table.copy()
    out.columns = [" / ".join(str(p) for p in col) for col in table.columns]
    return out


def write_table(
    table: pd.DataFrame, out_dir: Path, stem: str, *, caption: str = "", index: bool = True
) -> dict[str, Path]:
    """Write CSV, Markdown and LaTeX (booktabs) versions; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / f"{stem}.csv", "md": out_dir / f"{stem}.md", "tex": out_dir / f"{stem}.tex"}
    table.to_csv(paths["csv"], index=index)
    md = flat_columns(table).to_markdown(index=index, disable_numparse=True)
    paths["md"].write_text((f"{caption}\n\n" if caption else "") + md + "\n", encoding="utf-8")
    latex = _latex(table, caption=caption, index=index)
    paths["tex"].write_text(latex, encoding="utf-8")
    return paths


def _latex(table: pd.DataFrame, *, caption: str, index: bool) -> str:
    styler: Any = table.style
    if not index:
        styler = styler.hide(axis="index")
    body = styler.to_latex(hrules=True, column_format=None, multicol_align="c")
    body = body.replace("±", r"$\pm$").replace("†", r"$^\dagger$")
    if caption:
        return "\\begin{table}[t]\n\\centering\n" + body + f"\\caption{{{caption}}}\n\\end{{table}}\n"
    return body
