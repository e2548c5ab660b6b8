"""Execute one stream item: run the task (through the memory method's hooks), label it, learn.

Nothing here writes files; `batch` turns the returned `ItemResult` into
records. Failures become statuses, never exceptions, except the ones that
make every later sample fail the same way (bad key, read-only cache miss,
config errors), which stop the run.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aecg_bench.contracts import (
    AgentContext,
    Benchmark,
    EnvContext,
    Framework,
    MemoryMethod,
    Rollout,
)
from aecg_bench.errors import InfraError
from aecg_bench.llm.client import LLMClient
from aecg_bench.llm.providers import ContextLimitError
from aecg_bench.runner.labels import label, learning_view
from aecg_bench.types import (
    Episode,
    MemoryItem,
    RecallQuery,
    Sample,
    Score,
    Status,
    Trajectory,
    episode_from_dict,
    task_from_dict,
    to_jsonable,
)

Phase = Literal["build", "warmup", "eval"]


@dataclass(frozen=True)
class StreamItem:
    position: int
    phase: Phase
    sample: Sample
    epoch: int = 0


@dataclass(frozen=True)
class Protocol:
    label_source: str = "environment"
    retrieval: str = "per_task"
    max_invalid_actions: int = 3
    max_steps: int | None = None
    learn_in_eval: bool = True  # online: observe eval samples; build_then_freeze: False
    framework_learning: str = "training"  # training: the framework observes build and warm-up items only; all


@dataclass
class Services:
    """Long-lived components shared by every item of a run."""

    benchmark: Benchmark
    framework: Framework
    memory: MemoryMethod
    llm: LLMClient
    protocol: Protocol
    env_cache_dir: Path | None = None
    run_seed: int = 0


@dataclass
class ItemResult:
    status: Status
    rollouts: list[RolloutRecord] = field(default_factory=list)
    final: tuple[Episode, Score] | None = None
    error: str = ""
    learned: bool = False  # the memory method observed or built from this item
    seconds: float = 0.0


class RecallLog(MemoryMethod):
    """What a framework sees as memory during one rollout: forwards recalls and logs each query.

    Recall may change a method's state (MemoryBank reinforces what it recalls),
    so replay after resume must re-issue the same queries in the same order;
    this log is what makes that possible. With `enabled=False` it stands in for
    a rollout that runs without memory.
    """

    name = "recall_log"
    version = "1"

    def __init__(self, inner: MemoryMethod, *, enabled: bool = True) -> None:
        super().__init__(services=inner.services)
        self.inner = inner
        self.enabled = enabled
        self.queries: list[RecallQuery] = []
        self.items: dict[str, MemoryItem] = {}  # what memory put in front of the agents (the run viewer shows it)

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        if not self.enabled:
            return []
        self.queries.append(query)
        found = self.inner.recall(query)
        for item in found:
            self.items.setdefault(item.id, item)
        return found

    def observe(self, episode: Episode) -> None:
        raise RuntimeError("frameworks never call observe; the runner does")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


@dataclass(frozen=True)
class RolloutRecord:
    """One rollout as stored: the labelled episode, its score, and the recalls it issued."""

    episode: Episode
    score: Score
    recalls: tuple[RecallQuery, ...] = ()
    recalled_items: tuple[MemoryItem, ...] = ()  # each recalled item once, as first shown (for reading, not replay)


class EnvRollout(Rollout):
    """Runs the item's task once more on a fresh environment and labels the result."""

    def __init__(self, services: Services, item: StreamItem, seed: int, llm: LLMClient) -> None:
        self.s = services
        self.item = item
        self.seed = seed
        self.llm = llm
        self.records: list[RolloutRecord] = []

    def __call__(
        self,
        *,
        model: str | None = None,
        temperature: float | None = None,
        sample_index: int = 0,
        use_memory: bool = True,
        usage_role: str | None = None,
    ) -> tuple[Episode, Score]:
        s, task = self.s, self.item.sample.task
        run_seed = self.seed + sample_index
        agent_llm = self.llm.with_context(sample_index=sample_index, temperature=temperature, usage_role=usage_role)
        env = s.benchmark.make_env(
            self.item.sample,
            EnvContext(
                llm=self.llm.with_context(scope="user_simulator", sample_index=sample_index),
                seed=run_seed,
                cache_dir=s.env_cache_dir,
            ),
        )
        traj = Trajectory(task_id=task.id, framework=s.framework.name)
        memory = RecallLog(s.memory, enabled=use_memory)
        ctx = AgentContext(
            llm=agent_llm,
            memory=memory,
            trajectory=traj,
            rng=random.Random(run_seed),
            seed=run_seed,
            run_seed=s.run_seed,
            retrieval=s.protocol.retrieval,
            max_invalid_actions=s.protocol.max_invalid_actions,
            max_steps=s.protocol.max_steps,
            model=model,
        )
        try:
            try:
                s.framework.run(task, env, ctx)
            except ContextLimitError as exc:
                traj.status, traj.error = Status.LIMIT_EXCEEDED, f"context window exceeded: {str(exc)[:300]}"
            except InfraError as exc:
                traj.status, traj.error = Status.INFRA_ERROR, str(exc)
                raise
            score = env.score()
        finally:
            env.close()
        outcome = label(s.protocol.label_source, task, traj, score, self.llm)
        episode = Episode(task=task, trajectory=traj, outcome=outcome, seed=run_seed)
        self.records.append(RolloutRecord(episode, score, tuple(memory.queries), tuple(memory.items.values())))
        return learning_view(episode), score


class ReplayRollout(Rollout):
    """Replays an item's stored rollouts after resume: re-issues their recalls, returns their episodes."""

    def __init__(self, memory: MemoryMethod, stored: list[RolloutRecord]) -> None:
        self.memory = memory
        self.stored = list(stored)
        self.records: list[RolloutRecord] = []

    def __call__(self, **_: Any) -> tuple[Episode, Score]:
        if len(self.records) >= len(self.stored):
            raise RuntimeError("replay asked for more rollouts than the original run made")
        rec = self.stored[len(self.records)]
        for query in rec.recalls:
            self.memory.recall(query)
        self.records.append(rec)
        return learning_view(rec.episode), rec.score


def apply_item(
    memory: MemoryMethod,
    framework: Framework,
    item: StreamItem,
    rollout: EnvRollout | ReplayRollout,
    protocol: Protocol,
) -> tuple[Episode, Score] | None:
    """The state-changing part of an item: build, or solve (default: one rollout) and maybe
    observe; then the framework observes every rollout the item made (AgentNet evolves) when the
    protocol lets it learn from the item's phase (`framework_learns`).
    Memory and framework see each episode's `learning_view` (gold-derived rewards withheld unless
    the label source is the environment); the stored rollouts keep everything.

    Used both for live execution and for replay after resume, so both follow
    exactly the same path.
    """
    task = item.sample.task
    if item.phase == "build":
        memory.build(task, rollout)
        result = (learning_view(rollout.records[0].episode), rollout.records[0].score) if rollout.records else None
    else:
        result = memory.solve(task, rollout)
        if result is None:
            result = rollout(model=memory.select_model(task))
        if item.phase == "warmup" or protocol.learn_in_eval:
            memory.observe(result[0])
    if framework_learns(item, protocol):
        for rec in rollout.records:
            framework.observe(learning_view(rec.episode))
    return result


def learns(item: StreamItem, protocol: Protocol) -> bool:
    return item.phase in ("build", "warmup") or protocol.learn_in_eval


def framework_learns(item: StreamItem, protocol: Protocol) -> bool:
    """Whether the framework's own cross-task state (AgentNet's evolution) learns from this item: on the
    training part of the stream (build and warm-up items; AgentNet's `fit` on its train split, `evaluate`
    frozen) by default, on every item with `protocol.framework_learning=all`."""
    return item.phase in ("build", "warmup") or protocol.framework_learning == "all"


def execute_item(services: Services, item: StreamItem, seed: int, llm: LLMClient) -> ItemResult:
    """Run one item; every failure that is not fatal for the run becomes a status."""
    start = time.perf_counter()
    rollout = EnvRollout(services, item, seed, llm)
    try:
        final = apply_item(services.memory, services.framework, item, rollout, services.protocol)
    except InfraError as exc:
        return ItemResult(Status.INFRA_ERROR, rollout.records, None, str(exc), False, time.perf_counter() - start)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        if is_fatal(exc):
            raise
        tb = traceback.format_exc(limit=6)
        return ItemResult(
            Status.INFRA_ERROR,
            rollout.records,
            None,
            f"{type(exc).__name__}: {exc}\n{tb}",
            False,
            time.perf_counter() - start,
        )
    status = final[0].trajectory.status if final else Status.OK
    return ItemResult(
        status,
        rollout.records,
        final,
        final[0].trajectory.error if final else "",
        learns(item, services.protocol),
        time.perf_counter() - start,
    )


def is_fatal(exc: Exception) -> bool:
    """Errors every later sample would meet too: they stop the run (recorded as `failed`)."""
    from aecg_bench.errors import (
        DISK_ERRNOS,
        BudgetExceededError,
        CacheMissError,
        ConfigError,
        DataError,
        RunStateError,
    )
    from aecg_bench.llm.providers import FatalProviderError

    if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
        return True
    return isinstance(
        exc, BudgetExceededError | CacheMissError | ConfigError | DataError | FatalProviderError | RunStateError
    )


def rollouts_to_json(rollouts: list[RolloutRecord]) -> list[dict[str, Any]]:
    return [
        {
            "episode": to_jsonable(r.episode),
            "score": to_jsonable(r.score),
            "recalls": to_jsonable(list(r.recalls)),
            "recalled_items": {item.id: to_jsonable(item) for item in r.recalled_items},
        }
        for r in rollouts
    ]


def rollouts_from_json(rows: list[dict[str, Any]]) -> list[RolloutRecord]:
    return [
        RolloutRecord(
            episode=episode_from_dict(r["episode"]),
            score=Score(**r["score"]),
            recalls=tuple(RecallQuery(**{**q, "task": task_from_dict(q["task"])}) for q in r.get("recalls", [])),
        )
        for r in rows
    ]
