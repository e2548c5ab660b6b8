"""ScienceWorld without a JVM: data loading and hashes, subgoal scoring, the environment's logic.

The environment is driven here by a scripted stand-in for the simulator
process, so every rule of AgentBoard's setup (initial observation, `check
valid actions`, subgoal matching, grounding, native score) is checked in
milliseconds. tests/test_scienceworld_sim.py runs the real simulator.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from aecg_bench import registry
from aecg_bench.benchmarks.scienceworld import ScienceWorldBenchmark
from aecg_bench.benchmarks.scienceworld.benchmark import TEST_FILE
from aecg_bench.benchmarks.scienceworld.env import CHECK_REPLY_PREFIX, ScienceWorldEnvironment
from aecg_bench.benchmarks.scienceworld.prompt import ACTION_GRAMMAR
from aecg_bench.benchmarks.scienceworld.subgoals import SubgoalTracker, compile_subgoals
from aecg_bench.errors import ConfigError, DataError
from aecg_bench.types import Action, to_jsonable

TEMPERATURE = "the thermometer measures a temperature of (-?[0-9]|-?[1-9][0-9]|-?[1-9][0-9]{2}) degrees celsius"


@pytest.fixture
def bench(shared_data: Path) -> ScienceWorldBenchmark:
    return ScienceWorldBenchmark(data_dir=shared_data / "scienceworld")


# -- data -----------------------------------------------------------------------------------------


def test_loads_the_90_agentboard_tasks_in_file_order(bench, shared_data):
    samples = bench.samples()
    rows = [json.loads(line) for line in (shared_data / "scienceworld" / "test.jsonl").read_text().splitlines()]
    assert len(samples) == 90 and len({s.id for s in samples}) == 90
    for sample, row in zip(samples, rows, strict=True):
        info = row["additional_info"]
        assert sample.id == f"{info['env_name']}_{info['var']}"
        assert sample.task.instruction == row["goal"]
        assert sample.gold == {"env_name": info["env_name"], "var": info["var"], "subgoals": row["subgoals"]}
        assert sample.task.mode == "steps" and sample.task.max_steps == 30
        assert sample.task.metadata["difficulty"] == row["difficulty"]
    assert sum(s.task.metadata["difficulty"] == "hard" for s in samples) == 56


def test_no_subgoal_text_reaches_any_task_field(bench):
    for sample in bench.samples():
        public = json.dumps(to_jsonable(sample.task), ensure_ascii=False)
        fields = [str(v) for v in to_jsonable(sample.task).values()] + [public]
        for subgoal in sample.gold["subgoals"]:
            assert all(subgoal not in text for text in fields), (sample.id, subgoal)
        assert "subgoal" not in public.lower()


def test_tampered_file_is_refused_naming_both_hashes(tmp_path, shared_data):
    data = tmp_path / "scienceworld"
    data.mkdir()
    shutil.copy(shared_data / "scienceworld" / "test.jsonl", data / "test.jsonl")
    (data / "test.jsonl").chmod(0o644)
    with (data / "test.jsonl").open("a") as fh:
        fh.write("\n")
    with pytest.raises(DataError) as err:
        ScienceWorldBenchmark(data_dir=data).samples()
    assert TEST_FILE.sha256 in str(err.value) and "differs from the pinned" in str(err.value)
    assert "hkust-nlp/agentboard" in str(err.value)


def test_missing_file_says_where_to_get_it(tmp_path):
    with pytest.raises(DataError, match=r"missing data file .*huggingface\.co/datasets/hkust-nlp/agentboard"):
        ScienceWorldBenchmark({"download": False}, data_dir=tmp_path).samples()


def test_exclude_drops_tasks_and_rejects_unknown_ids(shared_data):
    data = shared_data / "scienceworld"
    ids = [s.id for s in ScienceWorldBenchmark(data_dir=data).samples()]
    kept = ScienceWorldBenchmark({"exclude": [ids[3]]}, data_dir=data).samples()
    assert [s.id for s in kept] == ids[:3] + ids[4:]
    with pytest.raises(ConfigError, match="unknown task ids \\['nope_1'\\]"):
        ScienceWorldBenchmark({"exclude": ["nope_1"]}, data_dir=data).samples()


def test_unknown_param_and_split_fail_with_one_line():
    with pytest.raises(ConfigError, match="max_step"):
        ScienceWorldBenchmark({"max_step": 3})
    with pytest.raises(ConfigError, match="valid splits: test"):
        ScienceWorldBenchmark().samples("train")


def test_registered_and_composed_from_config(make_config):
    assert registry.resolve("benchmark", "scienceworld") is ScienceWorldBenchmark
    cfg = make_config("benchmark=scienceworld")
    assert cfg["benchmark"]["name"] == "scienceworld"
    bench = ScienceWorldBenchmark(cfg["benchmark"]["params"])
    assert bench.params.max_steps == 30 and bench.params.heap_mb == 512
    assert bench.params.simplifications == "selfWateringFlowerPots,openContainers,openDoors,noElectricalAction"


def test_action_grammar_compiles():
    llama_cpp = pytest.importorskip("llama_cpp")
    assert llama_cpp.LlamaGrammar.from_string(ACTION_GRAMMAR, verbose=False) is not None


# -- subgoal scoring ------------------------------------------------------------------------------


def test_subgoals_are_regular_expressions_searched_anywhere():
    t = SubgoalTracker(["You move to the kitchen.", TEMPERATURE, "solid apple juice"])
    assert t.observe("You move to the kitchen!") == 1  # '.' is a regex wildcard, as in AgentBoard
    assert t.observe("the thermometer measures a temperature of 105 degrees celsius") == 1
    assert t.progress == pytest.approx(2 / 3) and not t.complete
    assert t.observe("the thermometer measures a temperature of 1000 degrees celsius") == 0
    assert t.observe("a substance called solid apple juice") == 1
    assert t.complete and t.progress == 1.0


def test_progress_never_decreases_and_each_subgoal_counts_once():
    t = SubgoalTracker(["You focus on the giant tortoise egg.", "You move to the outside."])
    assert t.observe("You move to the outside.") == 1
    assert t.observe("You move to the outside.") == 0
    assert t.observe("You move to the kitchen.") == 0
    assert (t.matched, t.total, t.progress) == (1, 2, 0.5)


def test_case_matters_as_in_re_search():
    t = SubgoalTracker(["You move to the outside."])
    assert t.observe("you move to the outside.") == 0 and t.matched == 0


def test_bad_subgoals_are_rejected_naming_the_pattern():
    with pytest.raises(ValueError, match="at least one"):
        compile_subgoals([])
    with pytest.raises(ValueError, match=r"subgoal 1 '\(unclosed' is not a valid regular expression"):
        compile_subgoals(["ok", "(unclosed"])


def test_every_annotated_subgoal_compiles(bench):
    for sample in bench.samples():
        assert len(compile_subgoals(sample.gold["subgoals"])) == len(sample.gold["subgoals"])


# -- the environment's rules, on a scripted simulator ---------------------------------------------


@dataclasses.dataclass
class ScriptedSim:
    """Stands in for a Simulator: replies from a table, scores from a table."""

    replies: dict[str, tuple[str, int, bool]]
    valid: tuple[str, ...] = ()
    alive: bool = True
    loads: list = dataclasses.field(default_factory=list)
    stepped: list = dataclasses.field(default_factory=list)

    def load(self, task, variation, simplifications, gold_path=False):
        self.loads.append((task, variation, simplifications, gold_path))

    def reset(self):
        return "This room is called the kitchen."

    def inventory(self):
        return "In your inventory, you see:\n\tan orange"

    def action_templates(self):
        return ["look around", "focus on OBJ", "reset task", "wait1"]

    def valid_actions(self):
        return list(self.valid)

    def step(self, command):
        self.stepped.append(command)
        return self.replies.get(command, ("No known action matches that input.", 0, False))


class OnePool:
    def __init__(self, sim):
        self.sim, self.released = sim, 0

    def acquire(self):
        return self.sim

    def release(self, sim):
        self.released += 1


SUBGOALS = ("You move to the outside.", "You focus on the crocodile egg.")


def make_env(sim, subgoals=SUBGOALS, pool=None):
    gold = {"env_name": "lifespan-longest-lived", "var": 5, "subgoals": list(subgoals)}
    return ScienceWorldEnvironment(gold, pool or OnePool(sim), "openDoors")


def cmd(text):
    return Action(kind="command", text=text)


def test_reset_shows_look_around_then_inventory_and_loads_the_variation():
    sim = ScriptedSim({})
    env = make_env(sim)
    obs = env.reset()
    assert obs.text == "This room is called the kitchen.\nIn your inventory, you see:\n\tan orange"
    assert sim.loads == [("lifespan-longest-lived", 5, "openDoors", False)]
    assert env.score().value == 0.0 and env.score().metrics["steps"] == 0.0


def test_subgoals_end_the_episode_and_score_progress():
    sim = ScriptedSim(
        {
            "go to outside": ("You move to the outside.", 50, False),
            "focus on crocodile egg": ("You focus on the crocodile egg.", 100, True),
        },
        valid=("go to outside", "focus on crocodile egg"),
    )
    env = make_env(sim)
    env.reset()
    first = env.step(cmd("  Go  to outside "))
    assert sim.stepped == ["go to outside"]  # normalised before the simulator sees it
    assert (first.reward, first.done, first.valid) == (0.5, False, True)
    assert env.score().value == 0.5 and not env.score().success
    last = env.step(cmd("focus on crocodile egg"))
    assert last.done and last.reward == 0.5 and last.text == "You focus on the crocodile egg."
    score = env.score()
    assert score.success and score.value == 1.0
    assert score.metrics["native_score"] == 100.0 and score.metrics["native_completed"] == 1.0
    assert score.metrics["grounding_accuracy"] == 1.0 and score.metrics["steps"] == 2.0


def test_check_valid_actions_lists_templates_costs_a_step_and_matches_nothing():
    sim = ScriptedSim({})
    env = make_env(sim, subgoals=("look around",))  # a subgoal the reply itself would match
    env.reset()
    obs = env.step(cmd("check valid actions"))
    assert obs.text == CHECK_REPLY_PREFIX + "look around, focus on OBJ, wait1, check valid actions"
    assert sim.stepped == [] and not obs.done
    score = env.score()
    assert score.value == 0.0 and score.metrics["steps"] == 1.0 and score.metrics["check_valid_actions"] == 1.0
    assert score.metrics["grounding_accuracy"] == 1.0


def test_grounding_uses_the_state_before_the_step_and_parser_rejections_are_invalid():
    sim = ScriptedSim({"go to kitchen": ("You move to the kitchen.", 0, False)}, valid=("go to kitchen",))
    env = make_env(sim)
    env.reset()
    assert env.step(cmd("go to kitchen")).valid
    rejected = env.step(cmd("fly away"))
    assert not rejected.valid and rejected.text == "No known action matches that input."
    assert env.score().metrics["grounding_accuracy"] == 0.5


def test_native_failure_is_reported_as_zero_and_flagged():
    sim = ScriptedSim({"focus on chair": ("You focus on the chair.", -100, True)}, valid=("focus on chair",))
    env = make_env(sim)
    env.reset()
    obs = env.step(cmd("focus on chair"))
    assert not obs.done  # the simulator's own end does not end an AgentBoard episode
    metrics = env.score().metrics
    assert metrics["native_score"] == 0.0 and metrics["native_failed"] == 1.0


def test_observations_never_name_subgoals_beyond_the_simulator_text():
    sim = ScriptedSim({"go to outside": ("You move to the outside.", 50, False)})
    env = make_env(sim)
    texts = [env.reset().text, env.step(cmd("go to outside")).text, env.step(cmd("check valid actions")).text]
    assert texts[1] == "You move to the outside."  # the simulator's own words, nothing added
    assert all(SUBGOALS[1] not in t for t in texts)


def test_close_returns_the_simulator_once():
    sim = ScriptedSim({})
    pool = OnePool(sim)
    env = make_env(sim, pool=pool)
    env.reset()
    env.close()
    env.close()
    assert pool.released == 1


def test_step_before_reset_is_a_programming_error():
    env = make_env(ScriptedSim({}))
    with pytest.raises(RuntimeError, match="before a successful reset"):
        env.step(cmd("look around"))


class QueuePool:
    """Hands out the given simulators in turn and records what comes back."""

    def __init__(self, *sims):
        self.sims, self.released = list(sims), []

    def acquire(self):
        return self.sims.pop(0)

    def release(self, sim):
        self.released.append(sim)


def test_reset_after_a_simulator_failure_leases_a_fresh_simulator():
    dead, fresh = ScriptedSim({}), ScriptedSim({})
    pool = QueuePool(dead, fresh)
    env = make_env(None, pool=pool)
    env.reset()
    dead.alive = False  # what a crash or timeout leaves behind
    env.reset()
    assert pool.released == [dead] and env.simulator is fresh and len(fresh.loads) == 1
