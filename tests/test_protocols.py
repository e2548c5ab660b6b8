"""Protocols: online vs build-then-freeze, warm-up split, label sources, seeds."""

from __future__ import annotations

import pytest

from aecg_bench.errors import ConfigError
from aecg_bench.run import run_from_config
from aecg_bench.runner.identity import derive_seed, results_dir_of
from aecg_bench.runner.records import RunDir


def _records(final: dict) -> list[dict]:
    return RunDir(results_dir_of(final)).records()


def test_build_then_freeze_learns_only_on_the_build_split(make_config):
    final = run_from_config(
        make_config(
            "memory=recorder",
            "protocol.mode=build_then_freeze",
            "protocol.build_epochs=2",
            "benchmark.params.train_size=3",
            "benchmark.params.size=4",
        )
    )
    records = _records(final)
    phases = [r["phase"] for r in records]
    assert phases == ["build"] * 6 + ["eval"] * 4
    assert [r["epoch"] for r in records[:6]] == [0, 0, 0, 1, 1, 1]
    assert all(r["learned"] for r in records[:6]) and not any(r["learned"] for r in records[6:])
    sizes = [r["memory_stats"]["items"] for r in records]
    assert sizes[5] == sizes[-1] == 6  # frozen after the build phase
    assert final["protocol"]["mode"] == "build_then_freeze" and final["eval"]["n"] == 4
    assert any(r["recalled_memory_ids"] for r in records[6:]), "frozen memory is still recalled"


def test_warmup_fraction_splits_the_eval_stream(make_config):
    final = run_from_config(make_config("memory=recorder", "protocol.warmup_fraction=0.6", "benchmark.params.size=10"))
    phases = [r["phase"] for r in _records(final)]
    assert phases == ["warmup"] * 6 + ["eval"] * 4
    assert final["eval"]["n"] == 4


def test_llm_judge_labels_what_memory_learns_from(make_config):
    # The agent solves every task, but the (mock) judge calls every attempt a failure.
    final = run_from_config(
        make_config(
            "memory=recorder",
            "benchmark.params.size=3",
            "protocol.label_source=llm_judge",
            "+model.models.mock.options.script=[{match: 'strict evaluator', reply: 'Thoughts: unclear. Status: FAILURE'}]",
        )
    )
    records = _records(final)
    assert all(r["success"] for r in records)  # the environment's score is untouched
    assert all(r["label"] == {"success": False, "source": "llm_judge"} for r in records)
    assert records[0]["usage"]["by_role"]["judge"]["calls"] == 1


def test_sample_seeds_depend_on_run_seed_and_sample_not_on_order(make_config):
    a = _records(run_from_config(make_config("seed=3", "benchmark.params.size=4")))
    b = _records(run_from_config(make_config("seed=4", "benchmark.params.size=4")))
    assert [r["seed"] for r in a] == [derive_seed(3, "toy", r["sample_id"], "eval", 0) for r in a]
    assert not {r["seed"] for r in a} & {r["seed"] for r in b}
    assert derive_seed(3, "toy", "test-1", "eval", 0) == derive_seed(3, "toy", "test-1", "eval", 0)


def test_build_split_equal_to_the_evaluated_split_is_refused(make_config):
    cfg = make_config("protocol.mode=build_then_freeze", "protocol.build_split=test", "protocol.split=test")
    with pytest.raises(ConfigError, match=r"build_split and protocol\.split are both 'test'"):
        run_from_config(cfg)
