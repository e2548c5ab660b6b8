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


def flat_index(table: pd.DataFrame, index: bool = True) -> tuple[pd.DataFrame, bool]:
    """A multi-level row index as ordinary columns (Markdown would print its labels as tuples)."""
    if index and isinstance(table.index, pd.MultiIndex):
        return table.reset_index(), False
    return table, index


def with_config(frame: pd.DataFrame, config: dict[str, str]) -> pd.DataFrame:
    """`frame` with the configuration it belongs to (experiment, model assignment, protocol, preset)
    as leading columns, so a CSV says what it is without its folder's name."""
    out = frame.copy()
    for i, (key, value) in enumerate(config.items()):
        if key not in out.columns:
            out.insert(i, key, value)
    return out


def write_table(
    table: pd.DataFrame,
    out_dir: Path,
    stem: str,
    *,
    caption: str = "",
    index: bool = True,
    data: pd.DataFrame | None = None,
) -> dict[str, Path]:
    """Write Markdown and LaTeX (booktabs) versions of the display `table`, and a CSV of `data`
    (numbers, one row per cell; default: `table` itself); returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / f"{stem}.csv", "md": out_dir / f"{stem}.md", "tex": out_dir / f"{stem}.tex"}
    if data is not None:
        data.to_csv(paths["csv"], index=False)
    else:
        table.to_csv(paths["csv"], index=index)
    shown, shown_index = flat_index(flat_columns(table), index)
    md = shown.to_markdown(index=shown_index, disable_numparse=True)
    paths["md"].write_text((f"{caption}\n\n" if caption else "") + md + "\n", encoding="utf-8")
    paths["tex"].write_text(latex_table(table, caption=caption, index=index), encoding="utf-8")
    return paths


# Characters our tables print that pdflatex's UTF-8 input does not typeset by itself.
LATEX_SYMBOLS = {
    "±": r"$\pm$",
    "†": r"$^\dagger$",
    "Δ": r"$\Delta$",
    "τ": r"$\tau$",
    "−": r"$-$",
    "–": "--",
    "—": "---",
    "×": r"$\times$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "≈": r"$\approx$",
    "→": r"$\rightarrow$",
    "…": r"\ldots{}",
    "§": r"\S{}",
    "²": r"$^2$",
    "·": r"$\cdot$",
}
LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: object) -> str:
    """Plain text -> LaTeX that pdflatex compiles: specials escaped, the symbols we print mapped,
    any other character outside Latin-1 shown as '?' rather than breaking the document."""
    out = []
    for ch in str(text):
        if ch in LATEX_SPECIALS:
            out.append(LATEX_SPECIALS[ch])
        elif ch in LATEX_SYMBOLS:
            out.append(LATEX_SYMBOLS[ch])
        elif ord(ch) > 0xFF:
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


def latex_table(table: pd.DataFrame, *, caption: str, index: bool) -> str:
    """A booktabs table environment (needs \\usepackage{booktabs}); every cell, label and the caption escaped."""

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return "–"
        return latex_escape(f"{v:.2f}" if isinstance(v, float) else v)

    styler: Any = table.style.format(cell)
    styler = styler.format_index(latex_escape, axis=0).format_index(latex_escape, axis=1)
    if not index:
        styler = styler.hide(axis="index")
    body = styler.to_latex(hrules=True, multicol_align="c", multirow_align="naive")
    head = "% aecg-bench table: needs \\usepackage{booktabs}\n"
    if caption:
        return (
            head + "\\begin{table}[t]\n\\centering\n" + body + f"\\caption{{{latex_escape(caption)}}}\n\\end{{table}}\n"
        )
    return head + body
