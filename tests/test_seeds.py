"""What a seed varies: the sample order (protocol.order=shuffled) joins framework randomness and the
provider seed; the given order never depends on the seed; a shuffled run resumes exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import crash_then_resume

from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.runner.records import RunDir, latest_by_position

TOY = ["benchmark=toy", "benchmark.params.size=8", "memory=recorder"]


def _order(summary: dict) -> list[str]:
    latest = latest_by_position(RunDir(results_dir_of(summary)).records())
    return [latest[p]["sample_id"] for p in sorted(latest)]


def _outcomes(summary: dict) -> list[tuple]:
    latest = latest_by_position(RunDir(results_dir_of(summary)).records())
    keys = ("position", "sample_id", "seed", "status", "success", "steps", "recalled_memory_ids", "memory_stats")
    return [tuple(json.dumps(latest[p][k], sort_keys=True) for k in keys) for p in sorted(latest)]


def test_shuffled_order_differs_by_seed_and_reruns_identically(make_config):
    runs = {
        (seed, exp): run_from_config(
            make_config(*TOY, "protocol.order=shuffled", f"seed={seed}", f"experiment_name={exp}")
        )
        for seed in (1, 2)
        for exp in ("a", "b")
    }
    given = run_from_config(make_config(*TOY, "experiment_name=given"))
    given_order = _order(given)
    assert _order(runs[1, "a"]) != _order(runs[2, "a"]), "two seeds must give two orders"
    for seed in (1, 2):
        assert sorted(_order(runs[seed, "a"])) == sorted(given_order), "the same samples, only reordered"
        assert _order(runs[seed, "a"]) != given_order
        assert _outcomes(runs[seed, "a"]) == _outcomes(runs[seed, "b"]), "a rerun of one seed is identical"
        assert runs[seed, "a"]["seed_effects"]["sample_order"] is True
        assert runs[seed, "a"]["identity"]["hash"] != given["identity"]["hash"]
    assert given["seed_effects"]["sample_order"] is False
    assert given["seed_effects"]["provider_seed"] == {"mock": False}
    assert given["seed_effects"]["framework_randomness"] == []


def test_given_order_does_not_depend_on_the_seed(make_config):
    from aecg_bench import registry

    toy = registry.build("benchmark", "toy", {"size": 8})
    benchmark_order = [s.id for s in toy.samples("test")]
    for seed in (0, 3):
        assert _order(run_from_config(make_config(*TOY, f"seed={seed}"))) == benchmark_order


def test_a_shuffled_run_is_a_different_run_in_the_same_directory(make_config):
    from aecg_bench.errors import ConfigError

    run_from_config(make_config(*TOY))
    with pytest.raises(ConfigError, match="different configuration"):
        run_from_config(make_config(*TOY, "protocol.order=shuffled"))


def test_phases_keep_their_samples_and_shuffle_within(make_config):
    """Warm-up and eval sets are cut in the given order, so every seed is scored on the same samples."""
    args = [*TOY, "protocol.warmup_fraction=0.5", "protocol.order=shuffled"]
    runs = [run_from_config(make_config(*args, f"seed={s}")) for s in (1, 2)]
    given = run_from_config(make_config(*TOY, "protocol.warmup_fraction=0.5", "experiment_name=given"))

    def phases(summary: dict) -> dict[str, list[str]]:
        latest = latest_by_position(RunDir(results_dir_of(summary)).records())
        out: dict[str, list[str]] = {}
        for p in sorted(latest):
            out.setdefault(latest[p]["phase"], []).append(latest[p]["sample_id"])
        return out

    ref = phases(given)
    for run in runs:
        got = phases(run)
        assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in ref.items()}
        assert list(got) == ["warmup", "eval"], "the warm-up still comes first"
    assert phases(runs[0]) != phases(runs[1])


def test_crash_then_resume_with_shuffled_order_is_exact(make_config, monkeypatch):

    args = [
        "framework=agentnet",
        "benchmark.params.size=10",
        "memory=recorder",
        "protocol.order=shuffled",
        "protocol.snapshot_every=3",
        "seed=5",
        "+model.models.mock.options.error_rate=0.3",
    ]
    clean, resumed = crash_then_resume(make_config, monkeypatch, args, after=6)

    def final_state(summary: dict) -> dict:
        snaps = sorted(RunDir(results_dir_of(summary)).memory_dir.glob("snapshot-*.json"))
        return json.loads(Path(snaps[-1]).read_text())["state"]

    assert _order(resumed) == _order(clean) != sorted(_order(clean))
    assert _outcomes(resumed) == _outcomes(clean)
    assert final_state(resumed) == final_state(clean)
    assert resumed["eval"] == clean["eval"]
    assert resumed["seed_effects"]["framework_randomness"], "AgentNet's tie-break is recorded"


def test_framework_randomness_names_what_the_sample_rng_or_run_seed_decides():
    from frameworks.agentnet import AgentNetFramework
    from frameworks.autogen import AutoGenFramework
    from frameworks.macnet import MacNetFramework

    # the default topology is random, drawn once per run
    assert MacNetFramework().randomness() == ["the random graph's edges (one per run)"]
    assert MacNetFramework({"graph_draw": "task"}).randomness() == ["the random graph's edges (one per task)"]
    assert MacNetFramework({"topology": "layered"}).randomness() == []
    assert AgentNetFramework().randomness() and AutoGenFramework().randomness() == []
