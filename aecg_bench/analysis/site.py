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
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pandas as pd

from aecg_bench.analysis.load import PAPER_PRESET, load
from aecg_bench.analysis.paper import directed, verdict
from aecg_bench.analysis.tables import flat_columns, flat_index

# Sections register when their module is imported: every `aecg_bench/analysis/*_sections.py` is
# (so a new paper table needs only its own file), plus any module named here.
SECTION_MODULES: list[str] = []


@dataclass(frozen=True)
class Table:
    title: str
    frame: pd.DataFrame
    index: bool = True
    note: str = ""
    # (row label, column label as the frame shows it) -> the run viewer's filter for the runs behind that
    # cell (`make view`; the links work when the report is opened through it, at /report/)
    links: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)


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
    """Key-value lines a reviewer needs beside a table: config, counts, completeness, cost, command;
    `numbers` (runs, complete runs, samples, expected samples, dollars) add up on the first screen."""

    items: dict[str, str]
    numbers: dict[str, float] = field(default_factory=dict)
    preset: str = ""  # the preset label(s) of its runs: smoke, rehearsal, paper, ...


VERDICTS = ("holds", "undecided", "fails", "not run")


@dataclass(frozen=True)
class Claim:
    """One of a paper's claims recomputed from our results: the estimate behind it, its 95% CI (a
    count claim: the decided..possible range), the paired test's p and the verdict (VERDICTS)."""

    statement: str
    ours: str
    ci: str
    p: str
    verdict: str
    paper: str = ""

    @classmethod
    def from_paired(cls, statement: str, res: dict[str, float], sign: int, paper: str = "") -> Claim:
        """A claim from one paired test (`n`, `mean_diff`, `ci_low`, `ci_high`, `p_value`), turned to
        the claimed direction (`sign` -1: the claim says the first is lower) and given its verdict."""
        d = directed({**res, "n": res.get("n", 0)}, sign)
        shown = d["mean_diff"] == d["mean_diff"]
        return cls(
            statement,
            f"{d['mean_diff']:+.2f}" if shown else "–",
            f"[{d['ci_low']:+.2f}, {d['ci_high']:+.2f}]" if shown and d["ci_low"] == d["ci_low"] else "",
            f"{d['p_value']:.3f}" if d["p_value"] == d["p_value"] else "",
            verdict(d),
            paper,
        )


@dataclass(frozen=True)
class Claims:
    """A section's claims, shown in the section and gathered on the report's first screen."""

    title: str
    items: tuple[Claim, ...]
    preset: str  # the preset the results come from (smoke, rehearsal, paper, ...)
    experiment: str


Part = Table | Figure | Text | Facts | Claims


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


def _frame_for_text(table: Table) -> tuple[pd.DataFrame, bool]:
    """The frame as text tables print it (joined column levels, row levels as columns) and whether
    its index is still printed."""
    frame, index = flat_index(flat_columns(table.frame), table.index)
    return (frame.fillna("–") if not frame.empty else frame), index


def claims_frame(claims: Claims) -> pd.DataFrame:
    return pd.DataFrame(
        [[c.statement, c.ours, c.ci, c.p, c.verdict, c.paper] for c in claims.items],
        columns=["claim", "ours", "95% CI / range", "p", "verdict", "paper"],
    )


def _parts(sections: list[Section], kind: type) -> list[tuple[Section, Any]]:
    return [(s, p) for s in sections for p in s.parts if isinstance(p, kind)]


def _cost_cell(n: dict[str, float]) -> str:
    tokens, build = n.get("tokens", 0.0), n.get("construction_tokens", 0.0)
    share = f" ({100 * build / tokens:.0f}% memory construction)" if tokens and build else ""
    return f"${n.get('dollars', 0.0):.4f}; {tokens:,.0f} tokens{share}"


def overview(sections: list[Section]) -> dict[str, Any]:
    """The first screen: every claim with its verdict (decided ones first), what ran (one row per
    experiment folder and configuration, from the sections' facts) and the totals."""
    runs: dict[tuple[str, str, str], Facts] = {}
    for _, facts in _parts(sections, Facts):
        items = facts.items
        runs.setdefault(
            (items.get("experiment", ""), items.get("model assignment", ""), items.get("preset", "")), facts
        )
    rows = [
        {
            "experiment": f.items.get("experiment", ""),
            "preset": f.items.get("preset", ""),
            "model assignment": f.items.get("model assignment", ""),
            "complete": f.items.get("completeness", ""),
            "samples": f.items.get("samples", ""),
            "cost": _cost_cell(f.numbers) if f.numbers else "",
        }
        for f in runs.values()
    ]
    names = ("tokens", "construction_tokens", "runs", "runs_complete", "samples", "samples_expected", "dollars")
    totals = {name: sum(f.numbers.get(name, 0.0) for f in runs.values()) for name in (*names, "construction_dollars")}
    presets = sorted({p for f in runs.values() for p in f.preset.split(" | ")} - {""})
    claims = []
    for section, group in _parts(sections, Claims):
        for c in group.items:
            claims.append(
                {
                    "claim": c.statement,
                    "where": f"{section.spec.title.split(':')[0]} · {group.experiment} · {group.preset}",
                    "ours": c.ours,
                    "95% CI / range": c.ci,
                    "p": c.p,
                    "verdict": c.verdict,
                    "paper": c.paper,
                }
            )
    order = ("holds", "fails", "undecided", "not run")  # decided claims first
    claims.sort(key=lambda c: order.index(c["verdict"]) if c["verdict"] in order else len(order))
    counts = {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    assignments = sorted({a for f in runs.values() for a in f.items.get("model assignment", "").split(" | ")} - {""})
    return {
        "runs": pd.DataFrame(rows, columns=["experiment", "preset", "model assignment", "complete", "samples", "cost"]),
        "totals": totals,
        "presets": presets,
        "assignments": assignments,
        "claims": claims,
        "counts": counts,
        "sections": {st: sum(s.status.split(":")[0] == st for s in sections) for st in ("ok", "not run", "error")},
    }


def summary_lines(o: dict[str, Any]) -> list[str]:
    """The five answers of the first screen, one line each."""
    t, counts, assignments = o["totals"], o["counts"], o["assignments"]
    shown = " | ".join(assignments) if len(assignments) <= 2 else f"{len(assignments)} (per folder under 'What ran')"
    paper_only = o["presets"] in ([], [PAPER_PRESET])
    share = f" ({100 * t['construction_tokens'] / t['tokens']:.0f}% memory construction)" if t["tokens"] else ""
    return [
        f"Configuration: {len(o['runs'])} experiment folder(s); model assignment(s): {shown or '–'}",
        f"Preset: {', '.join(o['presets']) or 'none (nothing ran)'}"
        + ("" if paper_only else " (anything but paper: NOT comparable to the paper)"),
        f"Completeness: {t['runs_complete']:.0f} of {t['runs']:.0f} runs complete; {t['samples']:.0f} of "
        f"{t['samples_expected']:.0f} expected eval samples; sections: {o['sections']['ok']} ok, "
        f"{o['sections']['not run']} not run, {o['sections']['error']} error",
        f"Cost: ${t['dollars']:.4f} (memory construction ${t['construction_dollars']:.4f}); "
        f"{t['tokens']:,.0f} tokens{share}",
        f"Claims: {counts['holds']} hold, {counts['undecided']} undecided, {counts['fails']} fail"
        + (f", {counts['not run']} not run" if counts["not run"] else "")
        + " — holds/fails: the paired 95% CI excludes 0 (for/against the claim) and p < 0.05; "
        "ties and all-zero cells are undecided",
    ]


def render_markdown(sections: list[Section], *, generated: str) -> str:
    lines = ["# Reproduction report", "", f"Generated {generated} from the results folder.", ""]
    o = overview(sections)
    lines += [f"- {line}" for line in summary_lines(o)] + [""]
    if o["claims"]:
        lines += ["**Claims**", "", pd.DataFrame(o["claims"]).to_markdown(index=False, disable_numparse=True), ""]
    if not o["runs"].empty:
        lines += ["**What ran**", "", o["runs"].to_markdown(index=False, disable_numparse=True), ""]
    lines.append("| section | paper | status |")
    lines.append("| --- | --- | --- |")
    lines += [f"| {s.spec.title} | {s.spec.paper} | {s.status} |" for s in sections]
    for s in sections:
        lines += ["", f"## {s.spec.title}", "", f"*Status: {s.status}.* Command: `{s.spec.command}`", ""]
        for part in s.parts:
            if isinstance(part, Table):
                frame, index = _frame_for_text(part)
                lines += [f"**{part.title}**", ""]
                lines.append(frame.to_markdown(index=index, disable_numparse=True) if not frame.empty else "(empty)")
                lines += ["", part.note] if part.note else []
                lines.append("")
            elif isinstance(part, Claims):
                lines += [
                    f"**{part.title}**",
                    "",
                    claims_frame(part).to_markdown(index=False, disable_numparse=True),
                    "",
                ]
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
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em;max-width:100%}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f3f3f3}
.status-ok{color:#176d2c}.status-not{color:#8a6d00}.status-error{color:#a00}
.verdict-holds{background:#e3f4e6}.verdict-fails{background:#fbe3e3}.verdict-undecided{background:#fff6d6}
.smoke{background:#fff3cd;padding:.4em;border-left:4px solid #c90}
.overview{border:1px solid #bbb;padding:.5em 1em;margin-bottom:1.5em;background:#fafafa}
.overview li{margin:.2em 0}
figure{margin:1em 0} img{max-width:100%;border:1px solid #eee}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em;font-size:.9em}
dt{font-weight:600} dd{margin:0;overflow-wrap:anywhere} code{background:#f6f6f6;padding:0 .2em;overflow-wrap:anywhere}
"""

# Marks on <body> what actually rendered, for a browser check: tables with rows, images decoded,
# elements reaching past the viewport's right edge, and figures whose legend lacks a series of
# their data (each <figure> carries its manifest: data-series, data-legend, `|`-separated).
CHECK_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var tables = Array.prototype.slice.call(document.querySelectorAll('table.report-table'));
  var filled = tables.filter(function (t) { return t.rows.length > 1 && t.offsetHeight > 0; }).length;
  var width = document.documentElement.clientWidth;
  var wide = Array.prototype.slice.call(document.body.querySelectorAll('*')).filter(function (el) {
    var r = el.getBoundingClientRect();
    return r.width > 0 && (r.right > width + 1 || r.left < -1);
  });
  var figures = Array.prototype.slice.call(document.querySelectorAll('figure[data-series]'));
  var missing = [];
  figures.forEach(function (f) {
    var legend = f.getAttribute('data-legend').split('|');
    f.getAttribute('data-series').split('|').filter(Boolean).forEach(function (s) {
      if (legend.indexOf(s) < 0) { missing.push(f.id + ': ' + s); }
    });
  });
  document.body.setAttribute('data-images', imgs.length);
  document.body.setAttribute('data-images-rendered', ok);
  document.body.setAttribute('data-tables', tables.length);
  document.body.setAttribute('data-tables-rendered', filled);
  document.body.setAttribute('data-viewport', width);
  document.body.setAttribute('data-page-width', document.documentElement.scrollWidth);
  document.body.setAttribute('data-too-wide', wide.length);
  document.body.setAttribute('data-too-wide-first', wide.slice(0, 3).map(function (el) {
    return el.tagName + ':' + (el.textContent || '').slice(0, 40);
  }).join(' || '));
  document.body.setAttribute('data-figures-checked', figures.length);
  document.body.setAttribute('data-legend-missing', missing.length);
  document.body.setAttribute('data-legend-missing-first', missing.slice(0, 3).join(' || '));
});
"""


def _status_class(status: str) -> str:
    return "status-ok" if status == "ok" else ("status-not" if status == "not run" else "status-error")


def _claims_html(rows: list[dict[str, str]], columns: list[str]) -> str:
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    body = "".join(
        f'<tr class="verdict-{e(r["verdict"].replace(" ", "-"))}">'
        + "".join(f"<td>{e(str(r.get(c, '')))}</td>" for c in columns)
        + "</tr>"
        for r in rows
    )
    return f'<table class="report-table claims"><tr>{head}</tr>{body}</table>'


def _figure_html(part: Figure, key: str) -> str:
    e = html.escape
    attrs = ""
    manifest = part.png.with_name(part.png.stem + ".figure.json")
    if manifest.exists():
        facts = json.loads(manifest.read_text(encoding="utf-8"))
        attrs = (
            f' data-series="{e("|".join(facts.get("series", [])))}"'
            f' data-legend="{e("|".join(facts.get("legend", [])))}"'
        )
    return (
        f'<figure id="fig-{e(key)}-{e(part.png.stem)}"{attrs}><img src="figures/{e(part.png.name)}" alt="{e(part.title)}">'
        f"<figcaption><b>{e(part.title)}.</b> {e(part.caption)} "
        f'(<a href="figures/{e(part.png.with_suffix(".pdf").name)}">PDF</a>)</figcaption></figure>'
    )


def viewer_href(filters: dict[str, str]) -> str:
    """The run viewer's page listing the runs that match `filters` (served by `make view`)."""
    return "/#runs?" + urlencode(filters)


def _linked_table_html(frame: pd.DataFrame, links: dict[tuple[str, str], dict[str, str]]) -> str:
    """A table whose cells link to the run viewer's list of the runs behind them."""
    e = html.escape
    head = "".join(f"<th>{e(str(c))}</th>" for c in frame.columns)
    rows = []
    for label, row in frame.iterrows():
        cells = []
        for col, value in row.items():
            text = e(str(value))
            where = links.get((str(label), str(col)))
            cells.append(f'<td><a href="{e(viewer_href(where))}">{text}</a></td>' if where else f"<td>{text}</td>")
        rows.append(f"<tr><th>{e(str(label))}</th>{''.join(cells)}</tr>")
    name = e(str(frame.index.name or ""))
    return f'<table class="report-table linked"><tr><th>{name}</th>{head}</tr>{"".join(rows)}</table>'


def render_html(sections: list[Section], *, generated: str) -> str:
    e = html.escape
    o = overview(sections)
    body = [f"<h1>Reproduction report</h1><p>Generated {e(generated)} from the results folder.</p>"]
    body.append('<div class="overview" id="overview"><ul>')
    body += [f"<li>{e(line)}</li>" for line in summary_lines(o)]
    body.append("</ul>")
    if o["claims"]:
        body.append("<h3>Claims (paired 95% CI; count claims: decided..possible settings)</h3>")
        body.append(_claims_html(o["claims"], list(o["claims"][0])))
    if not o["runs"].empty:
        body.append("<h3>What ran</h3>")
        body.append(o["runs"].to_html(index=False, classes="report-table", border=0))
    body.append("</div>")
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
                frame = flat_columns(part.frame)
                frame = frame.fillna("–") if not frame.empty else frame
                body.append(f"<h3>{e(part.title)}</h3>")
                if frame.empty:  # no rows: say so rather than draw an empty grid
                    body.append("<p>(none)</p>")
                elif part.links:
                    body.append(_linked_table_html(frame, part.links))
                else:
                    body.append(frame.to_html(index=part.index, classes="report-table", border=0, na_rep="–"))
                if part.note:
                    body.append(f"<p>{e(part.note)}</p>")
            elif isinstance(part, Claims):
                body.append(f"<h3>{e(part.title)}</h3>")
                rows = claims_frame(part).to_dict("records")
                body.append(_claims_html(rows, list(claims_frame(part).columns)))
            elif isinstance(part, Figure):
                body.append(_figure_html(part, s.spec.key))
            elif isinstance(part, Text):
                cls = ' class="smoke"' if re.match(r"[A-Z]+ RUN\b", part.text) else ""
                body.append(f"<p{cls}>{e(part.text)}</p>")
            elif isinstance(part, Facts):
                items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in part.items.items())
                body.append(f"<dl>{items}</dl>")
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Reproduction report</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
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
