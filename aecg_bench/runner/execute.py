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
from aecg_bench.runner.labels import label
from aecg_bench.types import (
    Episode,
    Sample,
    Score,
    Status,
    Trajectory,
    episode_from_dict,
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
    learn_in_eval: bool = True  # online: observe eval samples; build_then_freeze: False


@dataclass
class Services:
    """Long-lived components shared by every item of a run."""

    benchmark: Benchmark
    framework: Framework
    memory: MemoryMethod
    llm: LLMClient
    protocol: Protocol
    env_cache_dir: Path | None = None


@dataclass
class ItemResult:
    status: Status
    episodes: list[tuple[Episode, Score]] = field(default_factory=list)
    final: tuple[Episode, Score] | None = None
    error: str = ""
    learned: bool = False  # the memory method observed or built from this item
    seconds: float = 0.0


class NoRecall(MemoryMethod):
    """Stands in for the memory when a rollout asks to run without it."""

    name = "no_recall"
    version = "1"

    def recall(self, query: Any) -> list:
        return []

    def observe(self, episode: Episode) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class EnvRollout(Rollout):
    """Runs the item's task once more on a fresh environment and labels the result."""

    def __init__(self, services: Services, item: StreamItem, seed: int, llm: LLMClient) -> None:
        self.s = services
        self.item = item
        self.seed = seed
        self.llm = llm
        self.episodes: list[tuple[Episode, Score]] = []

    def __call__(
        self,
        *,
        model: str | None = None,
        temperature: float | None = None,
        sample_index: int = 0,
        use_memory: bool = True,
    ) -> tuple[Episode, Score]:
        s, task = self.s, self.item.sample.task
        run_seed = self.seed + sample_index
        agent_llm = self.llm.with_context(sample_index=sample_index, temperature=temperature)
        env = s.benchmark.make_env(
            self.item.sample,
            EnvContext(
                llm=self.llm.with_context(scope="user_simulator", sample_index=sample_index),
                seed=run_seed,
                cache_dir=s.env_cache_dir,
            ),
        )
        traj = Trajectory(task_id=task.id, framework=s.framework.name)
        memory = s.memory if use_memory else NoRecall(services=s.memory.services)
        ctx = AgentContext(
            llm=agent_llm,
            memory=memory,
            trajectory=traj,
            rng=random.Random(run_seed),
            seed=run_seed,
            retrieval=s.protocol.retrieval,
            max_invalid_actions=s.protocol.max_invalid_actions,
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
        result = (Episode(task=task, trajectory=traj, outcome=outcome, seed=run_seed), score)
        self.episodes.append(result)
        return result


class ReplayRollout(Rollout):
    """Hands back the episodes an item's rollouts produced when it first ran (resume replay)."""

    def __init__(self, stored: list[tuple[Episode, Score]]) -> None:
        self.stored = list(stored)
        self.episodes: list[tuple[Episode, Score]] = []

    def __call__(self, **_: Any) -> tuple[Episode, Score]:
        if len(self.episodes) >= len(self.stored):
            raise RuntimeError("replay asked for more rollouts than the original run made")
        result = self.stored[len(self.episodes)]
        self.episodes.append(result)
        return result


def apply_item(
    memory: MemoryMethod, item: StreamItem, rollout: Rollout, protocol: Protocol
) -> tuple[Episode, Score] | None:
    """The memory-visible part of an item: build, or solve (default: one rollout) and maybe observe.

    Used both for live execution and for replay after resume, so both follow
    exactly the same path.
    """
    task = item.sample.task
    if item.phase == "build":
        memory.build(task, rollout)
        return rollout.episodes[0] if getattr(rollout, "episodes", None) else None  # type: ignore[attr-defined]
    result = memory.solve(task, rollout)
    if result is None:
        result = rollout(model=memory.select_model(task))
    if item.phase == "warmup" or protocol.learn_in_eval:
        memory.observe(result[0])
    return result


def learns(item: StreamItem, protocol: Protocol) -> bool:
    return item.phase in ("build", "warmup") or protocol.learn_in_eval


def execute_item(services: Services, item: StreamItem, seed: int, llm: LLMClient) -> ItemResult:
    """Run one item; every failure that is not fatal for the run becomes a status."""
    start = time.perf_counter()
    rollout = EnvRollout(services, item, seed, llm)
    try:
        final = apply_item(services.memory, item, rollout, services.protocol)
    except InfraError as exc:
        return ItemResult(Status.INFRA_ERROR, rollout.episodes, None, str(exc), False, time.perf_counter() - start)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        if is_fatal(exc):
            raise
        tb = traceback.format_exc(limit=6)
        return ItemResult(
            Status.INFRA_ERROR,
            rollout.episodes,
            None,
            f"{type(exc).__name__}: {exc}\n{tb}",
            False,
            time.perf_counter() - start,
        )
    status = final[0].trajectory.status if final else Status.OK
    return ItemResult(
        status,
        rollout.episodes,
        final,
        final[0].trajectory.error if final else "",
        learns(item, services.protocol),
        time.perf_counter() - start,
    )


def is_fatal(exc: Exception) -> bool:
    from aecg_bench.errors import CacheMissError, ConfigError, DataError
    from aecg_bench.llm.providers import FatalProviderError

    return isinstance(exc, CacheMissError | ConfigError | DataError | FatalProviderError)


def episodes_to_json(episodes: list[tuple[Episode, Score]]) -> list[dict[str, Any]]:
    return [{"episode": to_jsonable(e), "score": to_jsonable(s)} for e, s in episodes]


def episodes_from_json(rows: list[dict[str, Any]]) -> list[tuple[Episode, Score]]:
    return [(episode_from_dict(r["episode"]), Score(**r["score"])) for r in rows]
