"""Gold reaches memory and learning frameworks only through what the label source allows (issue 17).

Environments put rewards and details in their observations (ScienceWorld's per-step subgoal progress, FEVER's
`Finish` reward, MBPP+'s hidden-test results); under `label_source` none or llm_judge the runner withholds them
from every episode a memory method or a framework learns from, live and on resume replay, and keeps them in the
stored trajectories. The toy benchmark's final `stop` is rewarded 1.0 when it lands on the target, so a run with
the oracle mock model shows a non-zero reward wherever the channel is open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aecg_bench.runner.batch import run_plan
from aecg_bench.runner.build import build
from aecg_bench.runner.config import parse_run_config
from aecg_bench.runner.execute import Protocol, ReplayRollout, RolloutRecord, StreamItem, apply_item
from aecg_bench.runner.identity import results_dir_of
from aecg_bench.runner.labels import learning_view
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Action, Episode, Observation, Outcome, Sample, Score, Step, Task, Trajectory

JUDGE_SAYS_SUCCESS = "+model.models.mock.options.script=[{match: 'strict evaluator', reply: 'Status: SUCCESS'}]"


def run_and_capture(make_config, *overrides: str) -> tuple[Any, list[Episode], list[Episode], dict]:
    """Run through the real runner; return (services, episodes memory observed, episodes the framework
    observed, the final header)."""
    # the framework learns on the eval stream too (by default it learns on build and warm-up items only)
    cfg = parse_run_config(make_config("benchmark.params.size=4", "protocol.framework_learning=all", *overrides))
    plan, services, audit = build(cfg)
    seen_by_memory: list[Episode] = []
    seen_by_framework: list[Episode] = []
    memory_observe, framework_observe = services.memory.observe, services.framework.observe

    def memory_spy(episode: Episode) -> None:
        seen_by_memory.append(episode)
        memory_observe(episode)

    def framework_spy(episode: Episode) -> None:
        seen_by_framework.append(episode)
        framework_observe(episode)

    services.memory.observe = memory_spy  # type: ignore[method-assign]
    services.framework.observe = framework_spy  # type: ignore[method-assign]
    final = run_plan(plan, services, audit)
    return services, seen_by_memory, seen_by_framework, final


def rewards(episodes: list[Episode]) -> list[float]:
    return [s.observation.reward for e in episodes for s in e.trajectory.steps]


def stored_rewards(final: dict) -> list[float]:
    rd = RunDir(results_dir_of(final))
    out = []
    for rec in rd.records():
        for rollout in rd.read_trajectory(rec["position"], rec["attempt"])["rollouts"]:
            out += [s["observation"]["reward"] for s in rollout["episode"]["trajectory"]["steps"]]
    return out


@pytest.mark.parametrize(("source", "extra"), [("environment", ()), ("none", ()), ("llm_judge", (JUDGE_SAYS_SUCCESS,))])
def test_memory_and_framework_see_rewards_only_under_environment_labels(make_config, source: str, extra: tuple):
    _, by_memory, by_framework, final = run_and_capture(
        make_config, "memory=recorder", f"protocol.label_source={source}", *extra
    )
    assert len(by_memory) == len(by_framework) == 4
    assert {e.outcome.source for e in by_memory} == {source}
    assert 1.0 in stored_rewards(final)  # the environment did reward; the records keep it
    if source == "environment":
        assert 1.0 in rewards(by_memory) and 1.0 in rewards(by_framework)
    else:
        assert set(rewards(by_memory)) == set(rewards(by_framework)) == {0.0}


def agentnet_state(make_config, source: str, learn_from: str) -> tuple[dict, dict]:
    """(state before, state after) of an evolving AgentNet run on the toy benchmark."""
    overrides = ["framework=agentnet", f"framework.params.learn_from={learn_from}", f"protocol.label_source={source}"]
    overrides.append("protocol.framework_learning=all")  # evolve on the eval stream
    overrides.append(f"experiment_name={source}-{learn_from}")
    if source == "llm_judge":
        overrides.append(JUDGE_SAYS_SUCCESS)
    cfg = parse_run_config(make_config(*overrides, "benchmark.params.size=3"))
    plan, services, audit = build(cfg)
    before = services.framework.state_dict()
    run_plan(plan, services, audit)
    return before, services.framework.state_dict()


def test_agentnet_learns_from_rewards_only_when_labels_come_from_the_environment(make_config):
    before, after = agentnet_state(make_config, "environment", "reward")
    assert after != before  # control: the rewards teach the network
    for source in ("none", "llm_judge"):
        before, after = agentnet_state(make_config, source, "reward")
        assert after == before, source


def test_agentnet_learns_from_the_judge_under_learn_from_outcome(make_config):
    """Withholding rewards does not stop the labelled outcome: the judge's verdict still teaches."""
    before, after = agentnet_state(make_config, "llm_judge", "outcome")
    assert after != before


def episode_with_gold(source: str) -> Episode:
    task = Task(id="t", benchmark="toy", instruction="walk")
    step = Step(0, Action("command", "stop"), Observation("stopped", reward=1.0, done=True, info={"base": "pass"}))
    traj = Trajectory(task_id="t", framework="single", steps=[step])
    success = None if source == "none" else True
    return Episode(task=task, trajectory=traj, outcome=Outcome(success=success, value=None, source=source))  # type: ignore[arg-type]


def test_learning_view_withholds_reward_and_info_and_leaves_the_stored_episode_alone():
    full = episode_with_gold("none")
    view = learning_view(full)
    assert view.trajectory.steps[0].observation == Observation("stopped", reward=0.0, done=True, info={})
    assert full.trajectory.steps[0].observation.reward == 1.0 and full.trajectory.steps[0].observation.info
    assert learning_view(episode_with_gold("environment")) == episode_with_gold("environment")


class _Spy:
    """Just enough of a memory method and a framework for `apply_item`: records what it observes."""

    def __init__(self) -> None:
        self.seen: list[Episode] = []

    def solve(self, task: Task, rollout: Any) -> Any:
        return None

    def select_model(self, task: Task) -> None:
        return None

    def observe(self, episode: Episode) -> None:
        self.seen.append(episode)


@pytest.mark.parametrize("source", ["none", "llm_judge"])
def test_resume_replay_withholds_the_stored_rewards_too(tmp_path: Path, source: str):
    stored = episode_with_gold(source)
    memory, framework = _Spy(), _Spy()
    item = StreamItem(0, "eval", Sample(task=stored.task))
    replay = ReplayRollout(memory, [RolloutRecord(stored, Score(True, 1.0))])  # type: ignore[arg-type]
    protocol = Protocol(label_source=source, framework_learning="all")
    apply_item(memory, framework, item, replay, protocol)  # type: ignore[arg-type]
    assert rewards(memory.seen) == rewards(framework.seen) == [0.0]
    assert replay.records[0].episode.trajectory.steps[0].observation.reward == 1.0
