"""`make report`: one static page (HTML + the same as Markdown) with every registered table and figure.

Pure: it reads results folders and writes <out>/index.html, <out>/report.md and <out>/figures/;
no model call, no network. The page is a list of sections; each paper table or figure is one
section, registered here with `@register_section(...)` by the module that knows how to build it,
a file `aecg_bench/analysis/<name>_sections.py` (docs/infra/report.md says how). A section whose
results folders hold nothing still appears, saying "not run" and showing the paper's numbers and
the command that would fill it.

    python -m aecg_bench.analysis.site [--results results] [--out results/report]
"""

from __future__ import annotations

import argparse
import html
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from aecg_bench.analysis.load import load
from aecg_bench.analysis.tables import flat_columns

# Sections register when their module is imported: every `aecg_bench/analysis/*_sections.py` is
# (so a new paper table needs only its own file), plus any module named here.
SECTION_MODULES: list[str] = []


@dataclass(frozen=True)
class Table:
    title: str
    frame: pd.DataFrame
    index: bool = True
    note: str = ""


@dataclass(frozen=True)
class Figure:
    title: str
    png: Path  # inside the report's figures/ folder
    caption: str = ""


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Facts:
    """Key-value lines a reviewer needs beside a table: config, counts, completeness, cost, command."""

    items: dict[str, str]


Part = Table | Figure | Text | Facts


@dataclass(frozen=True)
class Context:
    results_root: Path
    figures_dir: Path
    n_boot: int = 2000


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    paper: str  # "AECG" | "EDV"
    folders: tuple[str, ...]  # experiment folders under the results root it reads
    command: str  # what fills them
    build: Callable[[pd.DataFrame, Context], list[Part]]  # called with the loaded samples (never empty)
    not_run: Callable[[Context], list[Part]] | None = None  # the paper's side when nothing ran
    order: int = 100
    # how one folder is read (default: every sample, `load`); an empty frame means "nothing ran"
    loader: Callable[[Path], pd.DataFrame] = load


@dataclass
class Section:
    spec: SectionSpec
    status: str  # "ok" | "not run" | "error: ..."
    parts: list[Part] = field(default_factory=list)


REGISTRY: dict[str, SectionSpec] = {}


def register_section(
    key: str,
    *,
    title: str,
    paper: str,
    folders: tuple[str, ...],
    command: str,
    order: int = 100,
    not_run: Callable[[Context], list[Part]] | None = None,
    loader: Callable[[Path], pd.DataFrame] = load,
) -> Callable[[Callable[[pd.DataFrame, Context], list[Part]]], Callable[[pd.DataFrame, Context], list[Part]]]:
    """Decorator: add a section builder to the report. `key` must be unique (a slug: it names figures).
    `loader` reads one folder for sections whose results are not sample records (a mechanism
    test's `mechanisms.csv`)."""

    def deco(fn: Callable[[pd.DataFrame, Context], list[Part]]) -> Callable[[pd.DataFrame, Context], list[Part]]:
        if key in REGISTRY and REGISTRY[key].build is not fn:
            raise ValueError(f"report section {key!r} is registered twice")
        REGISTRY[key] = SectionSpec(key, title, paper, folders, command, fn, not_run, order, loader)
        return fn

    return deco


def section_modules() -> list[str]:
    """`aecg_bench.analysis.*_sections` modules, sorted, then SECTION_MODULES."""
    package = Path(__file__).parent
    found = sorted(f"aecg_bench.analysis.{p.stem}" for p in package.glob("*_sections.py"))
    return [*found, *(m for m in SECTION_MODULES if m not in found)]


def registered() -> list[SectionSpec]:
    for module in section_modules():
        importlib.import_module(module)
    return sorted(REGISTRY.values(), key=lambda s: (s.order, s.key))


def build_sections(ctx: Context, specs: list[SectionSpec] | None = None) -> list[Section]:
    """Every section, built from its folders; one failing section (an unreadable folder, a builder
    error) is reported on the page, not fatal."""
    cache: dict[tuple[Callable[[Path], pd.DataFrame], str], pd.DataFrame | str] = {}
    out = []
    for spec in specs if specs is not None else registered():
        for folder in spec.folders:
            if (spec.loader, folder) not in cache:
                try:
                    cache[spec.loader, folder] = spec.loader(ctx.results_root / folder)
                except (ValueError, KeyError, OSError) as exc:
                    cache[spec.loader, folder] = f"{folder}: {exc}"
        loaded = [cache[spec.loader, f] for f in spec.folders]
        broken = [x for x in loaded if isinstance(x, str)]
        if broken:
            out.append(Section(spec, f"error: {'; '.join(map(str, broken))}", []))
            continue
        frames = [f for f in loaded if isinstance(f, pd.DataFrame) and not f.empty]
        if not frames:
            out.append(Section(spec, "not run", spec.not_run(ctx) if spec.not_run else []))
            continue
        try:
            out.append(Section(spec, "ok", spec.build(pd.concat(frames, ignore_index=True), ctx)))
        except (ValueError, KeyError) as exc:
            out.append(Section(spec, f"error: {exc}", []))
    return out


# -- rendering ------------------------------------------------------------------------------


def _frame_for_text(table: Table) -> pd.DataFrame:
    frame = flat_columns(table.frame)
    return frame.fillna("–") if not frame.empty else frame


def render_markdown(sections: list[Section], *, generated: str) -> str:
    lines = ["# Reproduction report", "", f"Generated {generated} from the results folder.", ""]
    lines.append("| section | paper | status |")
    lines.append("| --- | --- | --- |")
    lines += [f"| {s.spec.title} | {s.spec.paper} | {s.status} |" for s in sections]
    for s in sections:
        lines += ["", f"## {s.spec.title}", "", f"*Status: {s.status}.* Command: `{s.spec.command}`", ""]
        for part in s.parts:
            if isinstance(part, Table):
                frame = _frame_for_text(part)
                lines += [f"**{part.title}**", ""]
                lines.append(
                    frame.to_markdown(index=part.index, disable_numparse=True) if not frame.empty else "(empty)"
                )
                lines += ["", part.note] if part.note else []
                lines.append("")
            elif isinstance(part, Figure):
                lines += [f"![{part.title}](figures/{part.png.name})", "", f"*{part.title}.* {part.caption}", ""]
            elif isinstance(part, Text):
                lines += [part.text, ""]
            elif isinstance(part, Facts):
                lines += [f"- **{k}**: {v}" for k, v in part.items.items()]
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


CSS = """
body{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.status-ok{color:#176d2c}.status-not{color:#8a6d00}.status-error{color:#a00}
.smoke{background:#fff3cd;padding:.4em;border-left:4px solid #c90}
figure{margin:1em 0} img{max-width:100%;border:1px solid #eee}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em;font-size:.9em}
dt{font-weight:600} code{background:#f6f6f6;padding:0 .2em}
"""

# Marks on <body> what actually rendered (tables with rows, images decoded), for a browser check.
CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var tables = Array.prototype.slice.call(document.querySelectorAll('table.report-table'));
  var filled = tables.filter(function (t) { return t.rows.length > 1 && t.offsetHeight > 0; }).length;
  document.body.setAttribute('data-images', imgs.length);
  document.body.setAttribute('data-images-rendered', ok);
  document.body.setAttribute('data-tables', tables.length);
  document.body.setAttribute('data-tables-rendered', filled);
});
"""


def _status_class(status: str) -> str:
    return "status-ok" if status == "ok" else ("status-not" if status == "not run" else "status-error")


def render_html(sections: list[Section], *, generated: str) -> str:
    e = html.escape
    body = [f"<h1>Reproduction report</h1><p>Generated {e(generated)} from the results folder.</p>"]
    body.append('<table class="report-table"><tr><th>section</th><th>paper</th><th>status</th></tr>')
    for s in sections:
        body.append(
            f'<tr><td><a href="#{e(s.spec.key)}">{e(s.spec.title)}</a></td><td>{e(s.spec.paper)}</td>'
            f'<td class="{_status_class(s.status)}">{e(s.status)}</td></tr>'
        )
    body.append("</table>")
    for s in sections:
        body.append(f'<section id="{e(s.spec.key)}"><h2>{e(s.spec.title)}</h2>')
        body.append(
            f'<p class="{_status_class(s.status)}">Status: {e(s.status)}. Command: <code>{e(s.spec.command)}</code></p>'
        )
        for part in s.parts:
            if isinstance(part, Table):
                frame = _frame_for_text(part)
                body.append(f"<h3>{e(part.title)}</h3>")
                if frame.empty:  # no rows: say so rather than draw an empty grid
                    body.append("<p>(none)</p>")
                else:
                    body.append(frame.to_html(index=part.index, classes="report-table", border=0, na_rep="–"))
                if part.note:
                    body.append(f"<p>{e(part.note)}</p>")
            elif isinstance(part, Figure):
                body.append(
                    f'<figure><img src="figures/{e(part.png.name)}" alt="{e(part.title)}">'
                    f"<figcaption><b>{e(part.title)}.</b> {e(part.caption)} "
                    f'(<a href="figures/{e(part.png.with_suffix(".pdf").name)}">PDF</a>)</figcaption></figure>'
                )
            elif isinstance(part, Text):
                cls = ' class="smoke"' if part.text.startswith("SMOKE") else ""
                body.append(f"<p{cls}>{e(part.text)}</p>")
            elif isinstance(part, Facts):
                items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in part.items.items())
                body.append(f"<dl>{items}</dl>")
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Reproduction report</title>'
        f"<style>{CSS}</style><script>{CHECK_SCRIPT}</script></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(results_root: Path, out_dir: Path, *, n_boot: int = 2000) -> dict[str, Path]:
    """Build every registered section from `results_root`; write index.html, report.md, figures/."""
    figures = out_dir / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    sections = build_sections(Context(Path(results_root), figures, n_boot))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    paths = {"html": out_dir / "index.html", "md": out_dir / "report.md"}
    paths["html"].write_text(render_html(sections, generated=generated), encoding="utf-8")
    paths["md"].write_text(render_markdown(sections, generated=generated), encoding="utf-8")
    for s in sections:
        print(f"{s.spec.title}: {s.status}")
    print(f"wrote {paths['html']} and {paths['md']}")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the reproduction report from a results folder.")
    parser.add_argument("--results", default="results", help="results root (holds one folder per experiment)")
    parser.add_argument("--out", default=None, help="output folder (default: <results>/report)")
    parser.add_argument("--n-boot", type=int, default=2000, help="bootstrap replicates per CI")
    args = parser.parse_args(argv)
    root = Path(args.results)
    if not root.is_dir():
        print(f"results folder {root} does not exist; run an experiment first (e.g. make reproduce-table1)")
        return 2
    write_report(root, Path(args.out) if args.out else root / "report", n_boot=args.n_boot)
    return 0


if __name__ == "__main__":
    # Run the importable module's main, so sections register into the same REGISTRY it reads
    # (under `python -m` this file is `__main__`, a second copy of the module).
    from aecg_bench.analysis.site import main as _main

    sys.exit(_main())
