"""The AECG paper preset's task sets (issue 15, fix 6): ScienceWorld 88, MBPP-Plus 122, full sets one
override away, and the table says which set its cells come from."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from omegaconf import OmegaConf

from aecg_bench.analysis.paper import task_set_notes
from aecg_bench.benchmarks.mbpp_plus import MbppPlusBenchmark
from aecg_bench.benchmarks.scienceworld import ScienceWorldBenchmark
from aecg_bench.run import CONF_DIR

NON_TRAIN = {"identify-life-stages-1_6", "identify-life-stages-1_7"}


def test_the_paper_preset_runs_88_scienceworld_and_122_mbpp_plus_tasks_and_the_full_sets_are_one_override_away(
    make_config, shared_data
):
    counts = {}
    for choice in ("scienceworld_aecg", "scienceworld", "mbpp_plus_aecg", "mbpp_plus"):
        cfg = make_config(f"benchmark={choice}")
        cls = ScienceWorldBenchmark if cfg["benchmark"]["name"] == "scienceworld" else MbppPlusBenchmark
        params = {**cfg["benchmark"]["params"], "download": False}
        ids = [s.id for s in cls(params, data_dir=shared_data / cfg["benchmark"]["name"]).samples()]
        counts[choice] = ids
        assert (cfg["benchmark"].get("label") or cfg["benchmark"]["name"]) == cfg["benchmark"]["name"]
    assert len(counts["scienceworld_aecg"]) == 88 and len(counts["scienceworld"]) == 90
    assert set(counts["scienceworld"]) - set(counts["scienceworld_aecg"]) == NON_TRAIN
    assert len(counts["mbpp_plus_aecg"]) == 122 and len(counts["mbpp_plus"]) == 378
    assert counts["mbpp_plus_aecg"] == counts["mbpp_plus"][:122]
    assert (counts["mbpp_plus_aecg"][0], counts["mbpp_plus_aecg"][-1]) == ("Mbpp/2", "Mbpp/257")


@pytest.mark.parametrize("experiment", ["aecg_rq2_scope", "aecg_rq3_drift", "aecg_rq4_triage"])
def test_mechanism_experiments_default_to_the_88_scienceworld_tasks(make_config, experiment):
    cfg = make_config(f"experiment={experiment}")
    assert cfg["benchmark"]["name"] == "scienceworld"
    assert set(cfg["benchmark"]["params"]["exclude"]) == NON_TRAIN


@pytest.mark.parametrize("experiment", ["aecg_table1", "aecg_table2"])
def test_table_sweeps_default_to_the_paper_task_sets(experiment):
    cfg = OmegaConf.load(CONF_DIR / "experiment" / f"{experiment}.yaml")
    sweep = [b.strip() for b in cfg.hydra.sweeper.params.benchmark.split(",")]
    assert "scienceworld_aecg" in sweep and "mbpp_plus_aecg" in sweep
    assert "scienceworld" not in sweep and "mbpp_plus" not in sweep


def test_the_table_says_whether_its_cells_are_on_the_papers_task_sets():
    df = pd.DataFrame({"benchmark": ["scienceworld", "mbpp_plus", "pddl"], "n_eval_expected": [88, 378, 60]})
    notes = task_set_notes(df)
    assert len(notes) == 2
    assert (
        notes[0].startswith("SciWorld: 88 tasks per run = the paper's count") and "benchmark=scienceworld" in notes[0]
    )
    assert notes[1].startswith("MBPP+: 378 tasks per run, NOT the paper's 122")


@pytest.mark.slow
def test_the_two_left_out_scienceworld_tasks_are_exactly_the_non_train_variations(shared_data):
    """What conf/benchmark/scienceworld_aecg.yaml rests on, measured on the simulator (JVM)."""
    sw = pytest.importorskip("scienceworld")
    if shutil.which("java") is None:
        pytest.skip("no Java")
    rows = [json.loads(line) for line in (shared_data / "scienceworld" / "test.jsonl").read_text().splitlines() if line]
    env = sw.ScienceWorldEnv("", envStepLimit=100)
    try:
        train: dict[str, set[int]] = {}
        for name in {r["additional_info"]["env_name"] for r in rows}:
            env.load(name, 0, "")
            train[name] = set(env.get_variations_train())
    finally:
        env.close()
    outside = {
        f"{r['additional_info']['env_name']}_{r['additional_info']['var']}"
        for r in rows
        if r["additional_info"]["var"] not in train[r["additional_info"]["env_name"]]
    }
    assert outside == NON_TRAIN
