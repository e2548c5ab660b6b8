"""The contracts between benchmarks, frameworks, memory methods and the runner.

Benchmarks never import frameworks and frameworks never import benchmarks:
both receive the LLM client and the memory by injection through the context
objects below. Memory methods see `Task`s, trajectories and outcomes, never a
`Sample`'s gold data.

Every component is built from its registered name and a parameter dict that is
validated against the component's `Params` model, so a typo in a config fails
with one line naming the valid parameters.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from aecg_bench.params import validate_params
from aecg_bench.types import (
    Action,
    Episode,
    MemoryItem,
    Observation,
    RecallQuery,
    Sample,
    Score,
    Task,
    Trajectory,
)

if TYPE_CHECKING:
    from aecg_bench.audit import AuditLog
    from aecg_bench.llm.client import LLMClient
    from aecg_bench.llm.embeddings import Embedder


class Params(BaseModel):
    """Base of every component's parameter model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Component:
    """Registered name, version and validated parameters."""

    name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[Params]] = Params
    group: ClassVar[str] = "component"

    def __init__(self, params: dict[str, Any] | Params | None = None) -> None:
        if isinstance(params, Params):
            self.params = params
        else:
            self.params = validate_params(f"{self.group} {self.name!r}", self.Params, params or {})

    def describe(self) -> dict[str, Any]:
        """Identity written into run.json."""
        return {"name": self.name, "version": self.version, "params": self.params.model_dump()}


# ---------------------------------------------------------------------------
# Benchmarks


@dataclass
class EnvContext:
    """What an environment may use: the LLM (user simulators), a seed, a cache dir."""

    llm: LLMClient | None
    seed: int
    cache_dir: Path | None = None


class Environment(ABC):
    """One task's interactive environment (a one-answer task is a one-step env)."""

    @abstractmethod
    def reset(self) -> Observation: ...

    @abstractmethod
    def step(self, action: Action) -> Observation: ...

    @abstractmethod
    def score(self) -> Score: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release simulator resources; default has none."""


class Benchmark(Component, ABC):
    group = "benchmark"

    def __init__(self, params: dict[str, Any] | Params | None = None, *, data_dir: Path | None = None):
        super().__init__(params)
        self.data_dir = data_dir

    @abstractmethod
    def samples(self, split: str = "test") -> list[Sample]:
        """The ordered samples of a split (order is part of the run's identity)."""

    @abstractmethod
    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment: ...

    def splits(self) -> list[str]:
        return ["test"]

    def data_hashes(self) -> dict[str, str]:
        """sha256 of each data file the samples came from (recorded in run.json)."""
        return {}

    def describe_backends(self) -> dict[str, Any]:
        """Extra facts about how the benchmark ran (tool backends, simulator versions)."""
        return {}

    def close(self) -> None:
        """Release resources shared across samples (simulator processes)."""


# ---------------------------------------------------------------------------
# Memory methods


@dataclass
class MemoryServices:
    """What a memory method may use: the LLM (memory-side roles), embeddings, the audit log."""

    llm: LLMClient | None
    embedder: Embedder | None
    audit: AuditLog
    seed: int = 0


class Rollout(ABC):
    """Runs the current task once more through the framework (EDV, Judge, Router).

    A memory method that constructs experience from several executions, or
    adjudicates between them, calls this instead of seeing a single episode.
    Each call makes a fresh environment, so rollouts never share state.
    `usage_role` names the role the rollout's agent calls are accounted under
    (EDV: "executor" while constructing, "solver" at inference), so records
    split agent tokens by purpose; None keeps the framework's own roles.
    """

    @abstractmethod
    def __call__(
        self,
        *,
        model: str | None = None,
        temperature: float | None = None,
        sample_index: int = 0,
        use_memory: bool = True,
        usage_role: str | None = None,
    ) -> tuple[Episode, Score]: ...


class MemoryMethod(Component, ABC):
    """Cross-task memory. All state must round-trip through state_dict exactly."""

    group = "memory"
    # The protocol the method's paper evaluates it under; run under another, its results label says so.
    paper_protocol: ClassVar[str] = "online"
    # True when recall, solve and select_model leave state_dict unchanged: the samples of a phase that
    # does not learn (a frozen test phase) are then independent, and the runner may run them at once,
    # each worker on its own replica (runner/concurrent.py). False (the default) keeps them sequential.
    pure_recall: ClassVar[bool] = False
    # True when the method keeps no cross-task state at all (observe, build and maintain change nothing):
    # then even an online protocol's samples are independent (No-Memory).
    learns_nothing: ClassVar[bool] = False

    def __init__(self, params: dict[str, Any] | Params | None = None, *, services: MemoryServices) -> None:
        super().__init__(params)
        self.services = services

    @property
    def audit(self) -> AuditLog:
        return self.services.audit

    @abstractmethod
    def recall(self, query: RecallQuery) -> list[MemoryItem]: ...

    @abstractmethod
    def observe(self, episode: Episode) -> None:
        """Learn from a finished task. Do LLM calls before mutating state, so an
        infra error leaves the memory as it was."""

    def maintain(self, round_index: int) -> None:
        """Periodic consolidation (merging, review, forgetting); default none."""

    def label_source(self, protocol_default: str) -> str:
        """Where the outcome labels this method learns from come from. Default: the protocol's
        `label_source`; a method whose paper fixes its own (ReasoningBank's LLM judge) overrides."""
        return protocol_default

    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def select_model(self, task: Task) -> str | None:
        """Model (by config label) that should serve the agents on this task; None = default."""
        return None

    def solve(self, task: Task, rollout: Rollout) -> tuple[Episode, Score] | None:
        """Take over how a task is executed (several rollouts, adjudication); None = run once."""
        return None

    def build(self, task: Task, rollout: Rollout) -> None:
        """Construct experience for a task of the build split; default runs once and observes."""
        episode, _ = rollout()
        self.observe(episode)

    def stats(self) -> dict[str, float]:
        """Small numeric summary recorded per sample (e.g. number of stored items)."""
        return {}


# ---------------------------------------------------------------------------
# Frameworks


@dataclass
class AgentContext:
    """What a framework receives for one task.

    The runner creates the trajectory and the framework fills it in place, so
    a sample cut short by a provider failure still leaves its partial record.
    """

    llm: LLMClient
    memory: MemoryMethod
    trajectory: Trajectory
    rng: random.Random
    seed: int
    run_seed: int = 0  # the run's seed, the same for every sample (what a framework draws once per run)
    retrieval: str = "per_task"  # per_task | per_decision
    max_invalid_actions: int = 3
    max_steps: int | None = None  # protocol-wide cap below each task's own step limit (smoke presets)
    model: str | None = None  # agent model chosen by the memory method (router), if any
    on_step: Callable[[int], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Framework(Component, ABC):
    """Runs one task with a team of agents. Frameworks that adapt across tasks (AgentNet's
    abilities and edge weights) learn only in `observe`, from finished episodes, so the
    runner can snapshot their state beside the memory and rebuild it on resume."""

    group = "framework"

    @abstractmethod
    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory: ...

    def observe(self, episode: Episode) -> None:
        """Learn from a finished, labelled episode; default: the framework does not adapt."""

    def randomness(self) -> list[str]:
        """What the sample's seeded rng (`AgentContext.rng`) or the run seed (`AgentContext.run_seed`) decides in
        this configuration, for run.json's `seed_effects`; default: nothing."""
        return []

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore cross-task state; default has none."""
