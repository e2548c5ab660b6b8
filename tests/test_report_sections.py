"""Every section of the reproduction report on a mock sweep of every experiment (AECG Tables 1-2,
the mechanism tests' Table 3 and Figures 3-4, EDV Tables 1-5, sec. 5.4/5.5.2/5.6, Figures 4-6):
each fills, says what it is, and is refused when a cell mixes configurations."""

from __future__ import annotations

import re

import pytest
from report_fixtures import write_edv_experiment, write_edv_run, write_every_experiment

from aecg_bench.analysis import site
from aecg_bench.analysis.load import load
from aecg_bench.analysis.paper import MixedCellsError


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """(results root, report paths, sections) of the whole synthetic sweep, rendered once."""
    tmp = tmp_path_factory.mktemp("sweep")
    root = tmp / "results"
    write_every_experiment(root)
    ctx = site.Context(root, tmp / "report" / "figures", n_boot=50)
    ctx.figures_dir.mkdir(parents=True)
    sections = site.build_sections(ctx)  # what write_report renders (test_report.py runs that path)
    paths = {"html": tmp / "report" / "index.html", "md": tmp / "report" / "report.md"}
    paths["html"].write_text(site.render_html(sections, generated="test"), encoding="utf-8")
    paths["md"].write_text(site.render_markdown(sections, generated="test"), encoding="utf-8")
    return root, paths, sections


def test_every_registered_section_fills_from_a_mock_sweep_of_every_experiment(sweep):
    _, paths, sections = sweep
    keys = {s.spec.key for s in sections}
    assert {"aecg_table3", "aecg_figure3", "aecg_figure4", "edv_table1", "edv_table5", "edv_contamination"} <= keys
    assert {"edv_bank_retrieval", "edv_tokens", "edv_figure4", "edv_figure5", "edv_figure6"} <= keys
    assert {s.spec.key: s.status for s in sections if s.status != "ok"} == {}
    page = paths["html"].read_text()
    assert page.count("Status: ok") == len(sections) and "Status: not run" not in page
    assert "SMOKE RUN" in page and "SMOKE RUN" in paths["md"].read_text()
    assert "no threshold at which both EDV and RB ran" in page  # Figure 6 is EDV only: no empty test grid
    figures = [p for s in sections for p in s.parts if isinstance(p, site.Figure)]
    assert {f.png.stem.split("_", 2)[1] for f in figures if f.png.stem.startswith("edv_")} == {"fig4", "fig5", "fig6"}
    for src in re.findall(r'<img src="([^"]+)"', page):
        png = paths["html"].parent / src
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.with_suffix(".pdf").stat().st_size > 0


def _section(sections, key):
    return next(s for s in sections if s.spec.key == key)


def _tables(section):
    return [p for p in section.parts if isinstance(p, site.Table)]


def test_mechanism_sections_show_std_ci_paired_test_and_the_papers_values(sweep):
    _, _, sections = sweep
    table3 = _section(sections, "aecg_table3")  # run at the paper's shape: ours − paper shown
    long = _tables(table3)[-1].frame.set_index(["quantity", "variant"])
    flat = long.loc[("cross_scope_use_pct", "flat_scope")]
    # seeds 0, 1 -> 20, 21: mean 20.5, std 0.71; paired against hard_scope (10, 11): +10 in each seed
    assert (flat["ours"], flat["std"], flat["paper"], flat["ours − paper"]) == ("20.50", "0.71", "36.50", "-16.00")
    assert flat["Δ vs hard_scope (paired by seed)"].startswith("+10.00") and flat["p"] == "0.500"
    assert "(paper 36.50)" in _tables(table3)[0].frame.loc["flat_scope", "cross_scope_use_pct"]
    facts = next(p for p in table3.parts if isinstance(p, site.Facts)).items
    assert facts["measured seeds"] == "0, 1" and facts["samples"].startswith("12 of 12")
    figure3 = _section(sections, "aecg_figure3")  # smoke: says so, no difference from the paper
    assert isinstance(figure3.parts[0], site.Text) and figure3.parts[0].text.startswith("SMOKE RUN")
    assert all(t.title.startswith("SMOKE RUN") for t in _tables(figure3))
    assert "ours − paper" not in _tables(figure3)[-1].frame.columns
    assert any(isinstance(p, site.Figure) and p.title.startswith("SMOKE RUN") for p in figure3.parts)


def test_edv_sections_put_ours_beside_the_papers_with_paired_tests(sweep):
    _, _, sections = sweep
    table1 = _section(sections, "edv_table1")  # not smoke: the per-cell difference is there
    titles = [t.title for t in _tables(table1)]
    assert not any(t.startswith("SMOKE") for t in titles)
    ours, paper, tests, comparison = (t.frame for t in _tables(table1))
    assert ours.loc["EDV (Ensemble)", "toy_tools"].startswith("100.00 ± 0.00 [")
    assert ours.loc["NM (backbone 2)", "toy_tools"].startswith("50.00")
    assert paper.loc["EDV (Ensemble)", "tau2_retail"] == 88.6 and "diff" in comparison.columns
    assert len(tests) == 9  # every row against the strongest other baseline, not only EDV
    edv_test = tests.set_index("target").loc["edv"]
    assert edv_test["Δ (paired)"].startswith("+50.00") and edv_test["n"] == 8  # 2 seeds x 4 samples
    assert tests.set_index("target").loc["nm_b1", "Δ (paired)"].startswith("+0.00")
    facts = next(p for p in table1.parts if isinstance(p, site.Facts)).items
    assert facts["completeness"] == "18 of 18 runs complete" and "make reproduce-edv" in facts["command"]

    table4 = _section(sections, "edv_table4")
    assert table4.parts[0].text.startswith("SMOKE RUN")
    assert "diff" not in _tables(table4)[-1].frame.columns
    drops = _tables(table4)[0].frame
    assert drops.loc["1. Basic SA", "toy_tools drop"] == "-50.0"
    tokens = _tables(_section(sections, "edv_tokens"))
    assert tokens[0].frame.iloc[0]["vs"] == "rb_b1" and 24.5 in set(tokens[-1].frame["value"])
    fig5 = _tables(_section(sections, "edv_figure5"))
    assert sorted(fig5[0].frame["top_k"].unique()) == [0, 1, 2]
    assert len(fig5[1].frame) == 3 and fig5[1].frame.iloc[0]["Δ (paired)"].startswith("+50.00")  # EDV vs RB per k


def test_empty_results_show_the_papers_numbers_for_every_new_section(tmp_path):
    (tmp_path / "results").mkdir()
    sections = site.build_sections(site.Context(tmp_path / "results", tmp_path / "fig", n_boot=10))
    new = [s for s in sections if s.spec.key.startswith(("edv_", "aecg_table3", "aecg_figure3", "aecg_figure4"))]
    assert len(new) == 14 and all(s.status == "not run" for s in new)
    for s in new:
        text, table = s.parts
        assert "make reproduce-" in text.text and "not run" in set(table.frame["ours"])
    table5 = _tables(_section(sections, "edv_table5"))[0].frame
    assert 88.6 in set(table5["value"])


def test_an_edv_cell_with_two_model_assignments_is_refused_naming_both(tmp_path):
    root = tmp_path / "results"
    write_edv_experiment(root, "table4", seeds=(0,), n=2)
    models = {"m1": {"model": "mock/other"}, "m2": {"model": "mock/m2"}, "m3": {"model": "mock/m3"}}
    run = write_edv_run(
        root,
        "edv_table4-smoke",
        "edv",
        seed=1,
        successes=[True, True],
        protocol={"mode": "build_then_freeze", "label_source": "none", "build_epochs": 1, "limit": 2, "max_steps": 6},
        label="edv",
    )
    import json

    header = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**header, "models": models}))
    spec = site.REGISTRY["edv_table4"]
    with pytest.raises(MixedCellsError, match=r"m1.*vs.*other|other.*vs.*m1"):
        spec.build(load(root / "edv_table4-smoke"), site.Context(root, tmp_path / "fig", n_boot=10))
    section = site.build_sections(site.Context(root, tmp_path / "fig", n_boot=10), [spec])[0]
    assert section.status.startswith("error: EDV cell") and "mixes configurations" in section.status


def test_edv_table_script_marks_smoke_output_and_drops_the_paper_difference(tmp_path):
    import importlib.util

    import pandas as pd
    from conftest import REPO

    spec = importlib.util.spec_from_file_location("make_edv_tables", REPO / "scripts" / "make_edv_tables.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    root = tmp_path / "results"
    write_edv_experiment(root, "table4", seeds=(0,), n=2)
    write_edv_experiment(root, "table4", seeds=(0,), n=2, smoke=False)
    script.render(root, "-smoke", tmp_path / "smoke", n_boot=10)
    script.render(root, "", tmp_path / "full", n_boot=10)
    assert (tmp_path / "smoke" / "table4.md").read_text().startswith("# SMOKE RUN")
    assert "diff" not in pd.read_csv(tmp_path / "smoke" / "table4_vs_paper.csv").columns
    assert "SMOKE" not in (tmp_path / "full" / "table4.md").read_text()
    assert "diff" in pd.read_csv(tmp_path / "full" / "table4_vs_paper.csv").columns
    for folder, experiment, preset in (("smoke", "edv_table4-smoke", "smoke"), ("full", "edv_table4", "paper")):
        for path in (tmp_path / folder).glob("*.csv"):
            frame = pd.read_csv(path)
            assert set(frame["experiment"]) == {experiment} and set(frame["preset_label"]) == {preset}, path
    cells = pd.read_csv(tmp_path / "smoke" / "table4.csv")  # numbers, not "50.00 ± 0.00" strings
    assert cells["mean"].dtype.kind == "f" and cells["ci_low"].dtype.kind == "f"


def test_the_report_reads_results_without_importing_the_runner():
    """The record format lives below the runner and the analysis (aecg_bench.results_format)."""
    import subprocess
    import sys

    from conftest import REPO

    code = (
        "import sys\nfrom aecg_bench.analysis import site\nsite.registered()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('aecg_bench.runner', 'aecg_bench.mechanisms'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-2000:]


def test_a_mechanism_test_that_stopped_before_its_measures_is_an_error_line_not_not_run(tmp_path):
    from report_fixtures import write_mechanism_test

    root = tmp_path / "results"
    (write_mechanism_test(root, "rq4_triage") / "mechanisms.csv").unlink()
    spec = site.REGISTRY["aecg_figure4"]
    section = site.build_sections(site.Context(root, tmp_path / "fig", n_boot=10), [spec])[0]
    assert section.status.startswith("error: aecg_rq4_triage-smoke") and "did not finish" in section.status


def _claims(section):
    return {c.statement: c for p in section.parts if isinstance(p, site.Claims) for c in p.items}


def test_each_papers_claims_are_read_off_its_paired_tests_in_the_claimed_direction(sweep):
    _, paths, sections = sweep
    edv1 = _claims(_section(sections, "edv_table1"))
    best = edv1["EDV above the strongest baseline (Judge (Ensemble)) on toy_tools"]
    # EDV 4/4 vs 2/4 per seed: +50 points over 8 pairs, 4 of them differing: p = 2/16, so undecided
    assert (best.ours, best.p, best.verdict) == ("+50.00", "0.125", "undecided") and best.ci.startswith("[+")
    edv4 = _claims(_section(sections, "edv_table4"))
    basic = edv4["1. Basic SA below 6. EDV (Full) on toy_tools"]  # the ablation is 50 points lower: +50 for the claim
    assert basic.ours == "+50.00" and basic.verdict == "undecided"
    rq2 = _claims(_section(sections, "aecg_table3"))
    flat = rq2["cross_scope_use_pct: flat_scope above hard_scope"]  # paper: 36.5 vs 0.0
    assert (flat.ours, flat.paper, flat.verdict) == ("+10.00", "+36.50", "undecided")  # two seeds: p >= 0.5
    assert "success: flat_scope below hard_scope" in rq2
    page = paths["html"].read_text()
    overview = page[: page.index("<section ")]
    assert "EDV above the strongest baseline" in overview and "flat_scope above hard_scope" in overview
