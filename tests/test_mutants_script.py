"""scripts/mutants.py: campaign selection, the generated mutmut config and the score (no mutmut run here)."""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mutants():
    spec = importlib.util.spec_from_file_location("mutants_script", REPO / "scripts" / "mutants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutants_script"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("mutants_script", None)


def test_every_campaign_names_existing_sources_and_tests(mutants):
    packages, conf = mutants.load_config()
    assert {"fever", "pddl", "mbpp_plus", "scienceworld", "aecg_math"} <= set(packages)
    for pkg in packages.values():
        assert pkg.mutate and pkg.tests and 0 < pkg.target <= 1
        # a test entry is a file or a pytest node id in one (file::test)
        assert all((REPO / path.split("::")[0]).is_file() for path in (*pkg.mutate, *pkg.tests)), pkg
    assert "-m" in conf["pytest_args"]  # campaigns keep the slow tier out


def test_select_by_name_or_path_and_refuse_unknown(mutants):
    packages, _ = mutants.load_config()
    assert [p.name for p in mutants.select(packages, ["fever"])] == ["fever"]
    assert [p.name for p in mutants.select(packages, ["aecg_bench/benchmarks/pddl/env.py"])] == ["pddl"]
    # a folder selects every campaign that mutates a file under it, in table order
    assert [p.name for p in mutants.select(packages, ["aecg_bench/benchmarks/pddl"])] == [
        "pddl",
        "benchmark_parsing",
        "pddl_parser",
    ]
    assert len(mutants.select(packages, [])) == len(packages)
    with pytest.raises(SystemExit, match="'nope' is no mutation package"):
        mutants.select(packages, ["nope"])


def test_generated_mutmut_section_is_valid_toml(mutants):
    pkg = mutants.Package("x", ("aecg_bench/a.py",), ("tests/test_a.py",), 0.9)
    text = mutants.mutmut_section(pkg, {"pytest_args": ["-m", "not slow"], "mutmut": {"timeout_multiplier": 3.0}})
    section = tomllib.loads(text)["tool"]["mutmut"]
    assert section["only_mutate"] == ["aecg_bench/a.py"]
    assert section["pytest_add_cli_args_test_selection"] == ["tests/test_a.py"]
    assert section["pytest_add_cli_args"] == ["-m", "not slow"] and section["timeout_multiplier"] == 3.0


def test_score_leaves_out_equivalent_mutants_and_counts_untested_ones_as_alive(mutants, tmp_path, monkeypatch):
    work = tmp_path / "x" / "mutants" / "pkg"
    work.mkdir(parents=True)
    codes = {"m.f__mutmut_1": 1, "m.f__mutmut_2": 0, "m.f__mutmut_3": 33, "m.f__mutmut_4": 0, "m.f__mutmut_5": 36}
    (work / "a.py.meta").write_text(json.dumps({"exit_code_by_key": codes}), encoding="utf-8")
    equivalent = tmp_path / "equivalent.toml"
    equivalent.write_text('[x]\n"m.f__mutmut_4" = "same output"\n"m.f__mutmut_1" = "now killed"\n', encoding="utf-8")
    monkeypatch.setattr(mutants, "WORK", tmp_path)
    monkeypatch.setattr(mutants, "EQUIVALENT_FILE", equivalent)
    score = mutants.score_of(mutants.Package("x", ("a.py",), ("t.py",), 0.9))
    assert score.killed == 2 and score.considered == 4 and score.score == 0.5  # killed + timeout of 4
    assert score.survivors == ["m.f__mutmut_2", "m.f__mutmut_3"]
    assert score.stale_equivalent == ["m.f__mutmut_1"]


def test_a_campaign_over_some_functions_scores_only_their_mutants(mutants, tmp_path, monkeypatch):
    work = tmp_path / "x" / "mutants" / "pkg"
    work.mkdir(parents=True)
    codes = {"m.x_f__mutmut_1": 1, "m.x_f__mutmut_2": 0, "m.x_fg__mutmut_1": 1, "m.x_g__mutmut_1": 0}
    (work / "a.py.meta").write_text(json.dumps({"exit_code_by_key": codes}), encoding="utf-8")
    monkeypatch.setattr(mutants, "WORK", tmp_path)
    monkeypatch.setattr(mutants, "EQUIVALENT_FILE", tmp_path / "none.toml")
    score = mutants.score_of(mutants.Package("x", ("a.py",), ("t.py",), 0.9, only=("m.x_f__*",)))
    assert sorted(score.statuses) == ["m.x_f__mutmut_1", "m.x_f__mutmut_2"]  # not m.x_fg, not m.x_g
    assert score.score == 0.5
    assert mutants.score_of(mutants.Package("x", ("a.py",), ("t.py",), 0.9)).considered == 4
    packages, _ = mutants.load_config()
    assert packages["runner_resume"].owns("aecg_bench.runner.batch.x__restore_state__mutmut_3")
    assert not packages["runner_resume"].owns("aecg_bench.runner.batch.x_summarise__mutmut_3")


def test_a_failing_campaign_does_not_skip_the_ones_after_it(mutants, tmp_path, monkeypatch):
    ran = []

    def fake_run(pkgs, conf, extra):
        ran.append(pkgs[0].name)
        return 1 if pkgs[0].name == "fever" else 0  # the first campaign fails

    monkeypatch.setattr(mutants, "run", fake_run)
    monkeypatch.setattr(mutants, "report", lambda scores, packages: True)
    monkeypatch.setattr(mutants, "WORK", tmp_path)
    assert mutants.main(["run", "fever", "pddl", "mind2web"]) == 1
    assert ran == ["fever", "pddl", "mind2web"]
