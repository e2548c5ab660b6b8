"""A protocol other than the method's paper protocol is part of the results label (EDV issue, fix 9)."""

from __future__ import annotations

from aecg_bench.run import run_from_config
from aecg_bench.runner.build import memory_label
from aecg_bench.runner.config import parse_run_config
from aecg_bench.runner.identity import results_dir_of

EDV_ONLINE = ("benchmark=toy_tools", "benchmark.params.size=1", "memory=edv", "model=edv_pool_mock")


def _label(make_config, *overrides: str) -> str:
    return memory_label(parse_run_config(make_config(*overrides)))


def test_edv_run_online_is_labelled_online_and_its_paper_protocol_is_not(make_config):
    assert _label(make_config, *EDV_ONLINE, "protocol.mode=online") == "edv_online"
    assert _label(make_config, *EDV_ONLINE, "protocol.mode=build_then_freeze") == "edv"
    assert _label(make_config, "memory=edv_fixed", "model=edv_pool_mock", "protocol.mode=online") == "edv_fixed_online"
    assert _label(make_config, "memory=no_memory", "protocol.mode=online") == "no_memory"
    assert _label(make_config, "memory=no_memory", "protocol.mode=build_then_freeze") == "no_memory_build_then_freeze"


def test_the_online_experiment_defaults_to_the_papers_three_model_pool(make_config):
    cfg = make_config("experiment=edv_online")
    assert cfg["model"]["label"] != "edv-pool-local-ONE-MODEL-smollm2-135m-x3-temperatures"
    assert len(cfg["model"]["models"]) == 3 and memory_label(parse_run_config(cfg)) == "edv_online"


def test_an_online_edv_run_lands_under_its_online_label(make_config):
    final = run_from_config(make_config(*EDV_ONLINE))
    assert final["status"] == "complete"
    assert results_dir_of(final).parts[-3] == "edv_online"
