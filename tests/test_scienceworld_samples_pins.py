"""Pins of what a ScienceWorld sample is scored against (`scienceworld/benchmark.py`: the task's env name,
variation and subgoals read from AgentBoard's file, the excluded tasks, the simplifications the simulator is
loaded with), written against the mutants of `make mutants PATHS=scienceworld_samples` (docs/quality.md).

A file in AgentBoard's schema is written under tmp_path and handed to the benchmark in place of the pinned one
(the hash check is test_scienceworld.py's); a scripted simulator stands in for the JVM. No network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aecg_bench.benchmarks.scienceworld import ScienceWorldBenchmark
from aecg_bench.benchmarks.scienceworld import benchmark as swbench
from aecg_bench.benchmarks.scienceworld.prompt import ACTION_GRAMMAR, ACTION_HINT
from aecg_bench.contracts import EnvContext
from aecg_bench.errors import ConfigError, DataError


def _row(env: str, var: int, goal: str = "Do it.", subgoals: tuple[str, ...] = ("You see a cup.",)) -> str:
    info = {"env_name": env, "var": var}
    return json.dumps({"goal": goal, "subgoals": list(subgoals), "difficulty": "easy", "additional_info": info})


@pytest.fixture
def data_file(tmp_path: Path, monkeypatch):
    """Point the benchmark's data fetch at a file written here; returns the writer."""
    path = tmp_path / "test.jsonl"

    def write(*lines: str) -> Path:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def fetch(data_dir, spec, download):
        write.downloads.append(download)
        return path

    write.downloads = []  # type: ignore[attr-defined]
    monkeypatch.setattr(swbench, "fetch", fetch)
    return write


def test_a_task_is_keyed_by_env_and_variation_and_carries_its_subgoals(data_file):
    data_file("", _row("boil", 3, "Boil water.", ("You heat the pot.", "water boils")), "   ", _row("melt", 0))
    a, b = ScienceWorldBenchmark({"max_steps": 7}).samples()
    assert a.id == "boil_3" and a.gold == {
        "env_name": "boil",
        "var": 3,
        "subgoals": ["You heat the pot.", "water boils"],
    }
    assert a.task.instruction == "Boil water." and a.task.task_type == "boil" and a.task.max_steps == 7
    assert a.task.benchmark == "scienceworld" and a.task.mode == "steps"
    assert a.task.action_hint == ACTION_HINT and a.task.action_grammar == ACTION_GRAMMAR
    assert a.task.metadata == {"difficulty": "easy", "env_name": "boil", "variation": 3, "index": 1}
    assert b.id == "melt_0" and b.task.metadata["index"] == 3  # blank lines are skipped but counted
    assert a.split == "test"


def test_a_variation_given_as_text_is_read_as_a_number(data_file):
    data_file(
        json.dumps({"goal": "g", "subgoals": ["x"], "difficulty": 1, "additional_info": {"env_name": 5, "var": "2"}})
    )
    (s,) = ScienceWorldBenchmark().samples()
    assert s.id == "5_2" and s.gold["var"] == 2 and s.gold["env_name"] == "5" and s.task.metadata["difficulty"] == "1"


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        json.dumps({"goal": "g", "subgoals": [], "difficulty": "x"}),
        json.dumps({"goal": "g", "subgoals": [], "difficulty": "x", "additional_info": {"env_name": "e", "var": "v"}}),
        json.dumps({"goal": "g", "subgoals": 3, "difficulty": "x", "additional_info": {"env_name": "e", "var": 1}}),
        json.dumps(
            {"goal": "g", "subgoals": ["(unclosed"], "difficulty": "x", "additional_info": {"env_name": "e", "var": 1}}
        ),
        json.dumps({"subgoals": [], "difficulty": "x", "additional_info": {"env_name": "e", "var": 1}}),
    ],
)
def test_a_line_that_is_not_a_task_is_one_clear_error_naming_the_line(data_file, bad):
    path = data_file(_row("boil", 1), "", bad)
    with pytest.raises(DataError, match=rf"^{path}: line 3 is not an AgentBoard ScienceWorld task \(.+\)$"):
        ScienceWorldBenchmark().samples()


def test_excluded_tasks_are_left_out_and_an_unknown_one_is_named(data_file):
    data_file(_row("boil", 1), _row("boil", 2), _row("melt", 1))
    assert [s.id for s in ScienceWorldBenchmark({"exclude": ["boil_2", "melt_1"]}).samples()] == ["boil_1"]
    with pytest.raises(
        ConfigError, match=r"^scienceworld exclude names unknown task ids \['a_1', 'z_9'\]; ids look like 'boil_1'$"
    ):
        ScienceWorldBenchmark({"exclude": ["z_9", "boil_1", "a_1"]}).samples()


def test_the_only_split_is_test():
    with pytest.raises(ConfigError, match=r"^scienceworld has no split 'train'; valid splits: test$"):
        ScienceWorldBenchmark().samples("train")


class _Sim:
    def __init__(self) -> None:
        self.loads: list[tuple[Any, ...]] = []

    def load(self, task, variation, simplifications, gold_path=False):
        self.loads.append((task, variation, simplifications, gold_path))

    def reset(self):
        return "A room."

    def inventory(self):
        return "Nothing."


class _Pool:
    def __init__(self, sim: _Sim) -> None:
        self.sim = sim

    def acquire(self) -> _Sim:
        return self.sim

    def release(self, sim: _Sim) -> None:
        pass


def test_the_environment_loads_the_samples_task_with_the_benchmarks_simplifications(data_file):
    data_file(_row("boil", 4, subgoals=("You see a cup.",)))
    bench = ScienceWorldBenchmark({"simplifications": "openDoors"})
    sim = _Sim()
    bench._pool = _Pool(sim)  # the JVM pool's seam: a scripted simulator instead of a JVM
    (sample,) = bench.samples()
    env = bench.make_env(sample, EnvContext(llm=None, seed=0))
    env.reset()
    assert sim.loads == [("boil", 4, "openDoors", False)]
    assert env.subgoals == ["You see a cup."]


def test_the_download_switch_reaches_the_fetch(data_file):
    data_file(_row("boil", 1))
    ScienceWorldBenchmark({"download": False}).samples()
    ScienceWorldBenchmark({"download": True}).samples()
    assert data_file.downloads == [False, True]
