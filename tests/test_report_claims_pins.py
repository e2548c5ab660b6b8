"""Pins of the pure rules behind the report's claims and files: a verdict from a paired result, a
count claim against the paper's share, turning a claim's direction, the equal-weight framework
average, the preset label of a run, and LaTeX escaping. Fast: the mutation campaign
`analysis_claims` runs these."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.analysis.load import preset_folders, preset_label
from aecg_bench.analysis.paper import (
    FAILS,
    HOLDS,
    NOT_RUN,
    UNDECIDED,
    _averaged,
    banner,
    count_verdict,
    directed,
    is_smoke,
    preset_of,
    verdict,
)
from aecg_bench.analysis.tables import latex_escape

FAST = settings(max_examples=60, deadline=None)


def _res(lo, hi, p, n=10, mean=None):
    return {"n": n, "ci_low": lo, "ci_high": hi, "p_value": p, "mean_diff": (lo + hi) / 2 if mean is None else mean}


def test_verdict_needs_both_the_ci_and_the_p_value():
    assert verdict(_res(0.5, 2.0, 0.01)) == HOLDS
    assert verdict(_res(-2.0, -0.5, 0.01)) == FAILS
    assert verdict(_res(0.5, 2.0, 0.125)) == UNDECIDED  # CI clear of zero, p not: four pairs
    assert verdict(_res(-0.5, 2.0, 0.01)) == UNDECIDED  # p small, CI across zero
    assert verdict(_res(0.0, 2.0, 0.01)) == UNDECIDED  # touching zero is not clear of it
    assert verdict(_res(-2.0, 0.0, 0.01)) == UNDECIDED
    assert verdict(_res(0.5, 2.0, 0.05)) == UNDECIDED  # p must be below 0.05
    assert verdict(_res(0.5, 2.0, 0.0499)) == HOLDS
    assert verdict(_res(-2.0, -0.5, 0.05)) == UNDECIDED
    assert verdict(_res(-2.0, -0.5, 0.0499)) == FAILS
    assert verdict(_res(0.0, 0.0, 1.0)) == UNDECIDED  # a tie
    assert verdict(_res(0.5, 2.0, float("nan"))) == UNDECIDED
    assert verdict(_res(float("nan"), float("nan"), float("nan"), n=0)) == NOT_RUN
    assert verdict({}) == NOT_RUN


@FAST
@given(st.floats(-50, 50), st.floats(0, 50), st.floats(0, 1))
def test_turning_a_claim_swaps_holds_and_fails(lo, width, p):
    res = _res(lo, lo + width, p)
    turned = directed(res, -1)
    assert (turned["ci_low"], turned["ci_high"]) == (-(lo + width), -lo)
    assert turned["mean_diff"] == -res["mean_diff"] and turned["p_value"] == p and turned["n"] == 10
    swap = {HOLDS: FAILS, FAILS: HOLDS, UNDECIDED: UNDECIDED}
    assert verdict(turned) == swap[verdict(res)]
    assert directed(res, 1) == res and directed(res, 1) is not res
    with pytest.raises(ValueError, match="1 or -1"):
        directed(res, 0)


def test_count_claims_hold_at_the_papers_share_and_fail_when_out_of_reach():
    # the paper: 11 of 12; with 12 settings 11 are needed, with 4 settings ceil(3.67) = 4
    assert count_verdict(11, 0, 12, 11, 12) == HOLDS
    assert count_verdict(10, 1, 12, 11, 12) == UNDECIDED
    assert count_verdict(10, 0, 12, 11, 12) == FAILS
    assert count_verdict(3, 1, 4, 11, 12) == UNDECIDED
    assert count_verdict(3, 0, 4, 11, 12) == FAILS
    assert count_verdict(4, 0, 4, 11, 12) == HOLDS
    assert count_verdict(12, 0, 12, 12, 12) == HOLDS  # a share of exactly 1 needs every setting
    assert count_verdict(11, 1, 12, 12, 12) == UNDECIDED
    assert count_verdict(0, 0, 0, 11, 12) == NOT_RUN
    # no paper value: every setting must hold
    assert count_verdict(2, 0, 3, float("nan"), float("nan")) == FAILS
    assert count_verdict(3, 0, 3, float("nan"), 12) == HOLDS
    assert count_verdict(1, 0, 2, 1, 2) == HOLDS  # half of 2 is 1


@FAST
@given(st.integers(1, 30), st.integers(0, 30), st.integers(0, 30), st.integers(1, 12), st.integers(0, 12))
def test_count_verdict_is_monotone_and_bounded(total, held, undecided, paper_n, paper_k):
    held, undecided = min(held, total), min(undecided, total - min(held, total))
    paper_k = min(paper_k, paper_n)
    v = count_verdict(held, undecided, total, paper_k, paper_n)
    needed = math.ceil(paper_k / paper_n * total - 1e-9)
    assert v == (HOLDS if held >= needed else FAILS if held + undecided < needed else UNDECIDED)
    if v == HOLDS and held < total:
        assert count_verdict(held + 1, max(undecided - 1, 0), total, paper_k, paper_n) == HOLDS


@FAST
@given(st.lists(st.lists(st.floats(-100, 100), min_size=1, max_size=8), min_size=1, max_size=4))
def test_the_framework_average_weights_every_benchmark_equally(parts):
    arrays = [np.array(p) for p in parts]
    out = _averaged(arrays)
    assert len(out) == sum(len(p) for p in parts)
    assert out.mean() == pytest.approx(np.mean([a.mean() for a in arrays]), abs=1e-6)
    assert len(_averaged([*arrays, np.array([])])) == 0 and len(_averaged([])) == 0


def test_preset_label_from_the_header_the_folder_name_or_the_sizes():
    labels = {"experiment": "aecg_table1"}
    assert preset_label({"labels": labels}, "full") == "paper"
    assert preset_label({"labels": labels}, "limit=2") == "smoke"
    assert preset_label({"labels": {"experiment": "aecg_table1-smoke"}}, "full") == "smoke"
    assert preset_label({"labels": {"experiment": "edv_table1-rehearsal"}}, "limit=1") == "rehearsal"
    assert preset_label({"preset": "rehearsal", "labels": labels}, "limit=2") == "rehearsal"
    assert preset_label({"labels": {**labels, "preset": "pilot"}}, "full") == "pilot"  # any name passes
    assert preset_label({"preset": "", "labels": labels}, "full") == "paper"
    assert preset_label({}, "full") == "paper"
    assert preset_folders("aecg_table1") == ("aecg_table1", "aecg_table1-smoke", "aecg_table1-rehearsal")
    assert preset_of({"experiment": "x-rehearsal", "preset": "full"}) == "rehearsal"
    assert preset_of({"experiment": "x", "preset": "full", "preset_label": "smoke"}) == "smoke"
    assert preset_of({"experiment": "x"}) == "paper" and not is_smoke({"experiment": "x"})
    assert preset_of({"experiment": "x", "preset": "limit=2"}) == "smoke" and is_smoke({"preset": "max_steps=3"})
    assert banner("paper") == "" and banner("rehearsal") == "REHEARSAL RUN, not comparable to the paper: "


@FAST
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FFF), max_size=40))
def test_escaped_text_has_no_bare_tex_specials(text):
    out = latex_escape(text)
    bare = out
    for token in (r"\textbackslash{}", r"\textasciitilde{}", r"\textasciicircum{}", r"\ldots{}", r"\S{}"):
        bare = bare.replace(token, "")
    for token in ("$\\pm$", "$^\\dagger$", "$\\Delta$", "$\\tau$", "$-$", "$\\times$", "$\\geq$", "$\\leq$"):
        bare = bare.replace(token, "")
    for token in ("$\\approx$", "$\\rightarrow$", "$^2$", "$\\cdot$"):
        bare = bare.replace(token, "")
    for ch in "%&#_{}$":
        bare = bare.replace("\\" + ch, "")
    assert not set(bare) & set("%&#_{}$~^\\"), (text, out)
    assert all(ord(c) <= 0xFF for c in out)
    if all((c.isalnum() and ord(c) < 128) or c == " " for c in text):
        assert out == text


def test_latex_escape_maps_each_symbol():
    pairs = {
        "%": r"\%",
        "&": r"\&",
        "#": r"\#",
        "$": r"\$",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "\\": r"\textbackslash{}",
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
        "é": "é",
        "ÿ": "ÿ",
        "Ā": "?",
        "東": "?",
    }
    for ch, tex in pairs.items():
        assert latex_escape(f"a{ch}b") == f"a{tex}b", ch
    assert latex_escape(3.5) == "3.5"
