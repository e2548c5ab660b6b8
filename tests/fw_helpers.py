"""Helpers shared by the framework adapter tests: direct runs, scripted mock policies, graph checks."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aecg_bench.audit import AuditLog
from aecg_bench.contracts import AgentContext, Environment, Framework, MemoryMethod, MemoryServices
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import ProviderResult, Request
from aecg_bench.llm.spec import RetryPolicy
from aecg_bench.testing import RecorderMemory
from aecg_bench.types import LEVELS, Action, Episode, Observation, Outcome, Score, Task, Trajectory
from baselines.no_memory import NoMemory

_names = itertools.count()


def scripted_llm(policy: Callable[[Request, ModelSpec], str | ProviderResult], **options: Any) -> LLMClient:
    """A mock-model client answering with `policy`."""
    name = f"test_policy_{next(_names)}"
    register_mock_policy(name, policy)
    return _client({**options, "policy": name})


def oracle_llm(**options: Any) -> LLMClient:
    """The mock `oracle` (solves the toy benchmarks; `default` answers everything else)."""
    return _client({**options, "policy": "oracle"})


def _client(options: dict[str, Any]) -> LLMClient:
    """One attempt per call and no backoff sleeps, so provider-failure tests are instant."""
    spec = ModelSpec(label="mock", provider="mock", model="mock/test", options=options)
    return LLMClient(
        {"mock": spec},
        {"default": "mock"},
        ResponseCache(None, "off"),
        RetryPolicy(max_attempts=1),
        sleep=lambda _: None,
    )


def system_of(request: Request) -> str:
    return str(request.messages[0]["content"]) if request.messages else ""


def memory(kind: str = "none", tmp: Path | None = None) -> MemoryMethod:
    services = MemoryServices(llm=None, embedder=None, audit=AuditLog(tmp / "audit.jsonl" if tmp else None))
    return RecorderMemory(services=services) if kind == "recorder" else NoMemory(services=services)


def run_task(
    framework: Framework,
    task: Task,
    env: Environment,
    llm: LLMClient,
    mem: MemoryMethod | None = None,
    seed: int = 0,
    **ctx: Any,
) -> Trajectory:
    """Run one task the way the runner does: run, score, then let the framework observe the episode."""
    traj = Trajectory(task_id=task.id, framework=framework.name)
    context = AgentContext(llm=llm, memory=mem or memory(), trajectory=traj, rng=random.Random(seed), seed=seed, **ctx)
    framework.run(task, env, context)
    score = env.score()
    framework.observe(Episode(task=task, trajectory=traj, outcome=Outcome(success=score.success, value=score.value)))
    return traj


def check_graph(traj: Trajectory) -> None:
    """Invariants of every decision graph: acyclic by id order, known levels, steps tied to acting nodes."""
    ids = [d.id for d in traj.decisions]
    assert ids == [f"d{i}" for i in range(len(ids))]
    position = {d.id: i for i, d in enumerate(traj.decisions)}
    for i, d in enumerate(traj.decisions):
        assert d.level in LEVELS
        assert d.agent and d.role
        assert all(p in position and position[p] < i for p in d.parents), (d.id, d.parents)
        assert len(set(d.parents)) == len(d.parents)
    by_id = {d.id: d for d in traj.decisions}
    for step in traj.steps:
        assert step.decision_id in by_id
        assert by_id[step.decision_id].action == step.action


ANSWER_TASK = Task(
    id="answer-0",
    benchmark="test",
    instruction="Claim: the sky is blue. Does the evidence support it?",
    mode="answer",
    task_type="fact",
    action_hint="Answer with exactly one of: SUPPORTS, REFUTES, NOT ENOUGH INFO.",
    max_steps=1,
)


class AnswerEnv(Environment):
    """A one-answer environment: correct when the answer is SUPPORTS (reward in the observation)."""

    def __init__(self) -> None:
        self.answer: str | None = None

    def reset(self) -> Observation:
        return Observation("Give your verdict on the claim.")

    def step(self, action: Action) -> Observation:
        self.answer = action.text.strip()
        ok = self.answer == "SUPPORTS"
        return Observation(f"Answer recorded: {self.answer}.", reward=float(ok), done=True)

    def score(self) -> Score:
        ok = self.answer == "SUPPORTS"
        return Score(success=ok, value=float(ok))
