"""`judge`: EDV's LLM-as-Judge ensemble baseline (arXiv 2606.24428, sec. 5.1: "uses an
LLM-as-Judge strategy for inference-time adjudication over heterogeneous agent outputs").

Per task, one model judges and the other pool models answer independently
(one rollout each, no memory, at their own temperature, accounted under role
`solver`); the judge reads the task and every attempt's trajectory (never the
outcome labels) and names the best; that attempt is the task's result. It
keeps no memory, so `build` does nothing and `observe` learns nothing.

The judge is never a contestant. The paper names neither the judge model nor
its prompt; a judge that also answered would adjudicate its own attempt, the
self-assessment EDV's third-party distiller exists to avoid (sec. 3, 4.3). So,
as EDV draws its distiller from outside the execution group (sec. 5.1), the
judge is drawn per task from the pool with a local RNG seeded by (run seed,
task id), and the other members answer; `judge_model` fixes one judge for
every task instead (a pool member then never answers; a model outside the
pool leaves every member answering). With the paper's three-model pool that
is two attempts per task, EDV's two executors.

Deviations: an unparsable judgement falls back to the first attempt (pool
order) and is recorded in the audit log.
"""

from __future__ import annotations

import random
import re
from typing import Any

from pydantic import Field

from aecg_bench.contracts import MemoryServices, Params, Rollout
from aecg_bench.errors import ConfigError
from aecg_bench.types import Episode, Score, Task
from baselines.edv.pool import Pool
from baselines.edv.prompts import Candidate, judge_grammar, judge_messages
from baselines.llm_calls import ask, stable_seed
from baselines.no_memory import NoMemory

_BEST = re.compile(r"best\s*(?:attempt)?\s*[:=]\s*\**\s*(?:attempt\s*)?#?(\d+)", re.I)


class JudgeParams(Params):
    pool: list[str] | None = Field(
        None, description="the ensemble's model labels (contestants and drawn judges); None = every configured model"
    )
    judge_model: str | None = Field(
        None, description="model label of the judge, never a contestant; None = drawn per task from the pool"
    )
    max_chars_per_candidate: int = Field(
        6000, ge=200, description="each attempt in the judge's prompt (ReasoningBank's extractor: 6000 for its one)"
    )
    judge_max_tokens: int | None = Field(None, ge=16, description="None = the judge model's own max_tokens")


class JudgeEnsemble(NoMemory):
    """Inference-time ensemble with no memory: recall, observe and state are NoMemory's."""

    name = "judge"
    version = "2"  # 2: the judge is never a contestant (drawn per task, or judge_model)
    Params = JudgeParams
    params: JudgeParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        if services.llm is None:
            raise ConfigError("memory 'judge' needs the run's LLM client (its model pool)")
        specs = services.llm.models
        self.pool = Pool(self.params.pool if self.params.pool is not None else list(specs), specs)
        if self.params.judge_model is not None and self.params.judge_model not in specs:
            raise ConfigError(f"judge_model {self.params.judge_model!r} is not a configured model: {', '.join(specs)}")

    def judge_for(self, task: Task) -> str:
        """The task's judge: `judge_model`, else a pool member drawn from (run seed, task id)."""
        if self.params.judge_model is not None:
            return self.params.judge_model
        return random.Random(stable_seed("judge", self.services.seed, task.id)).choice(self.pool.members)

    def solve(self, task: Task, rollout: Rollout) -> tuple[Episode, Score]:
        judge = self.judge_for(task)
        # a one-model pool has no one else to answer: its model answers alone and nobody judges
        contestants = [label for label in self.pool.members if label != judge] or list(self.pool.members)
        results = [
            rollout(model=label, sample_index=self.pool.members.index(label), use_memory=False, usage_role="solver")
            for label in contestants
        ]
        if len(results) == 1:
            return results[0]
        candidates = [Candidate(i + 1, "", ep.trajectory, "") for i, (ep, _) in enumerate(results)]  # no labels shown
        system, user = judge_messages(task, candidates, max_chars=self.params.max_chars_per_candidate)
        assert self.services.llm is not None
        spec = self.services.llm.models[judge]
        reply = ask(
            self,
            system=system,
            user=user,
            purpose="adjudicate",
            role="adjudicator",
            model=judge,
            temperature=0.0,
            max_tokens=self.params.judge_max_tokens or spec.max_tokens,
            grammar=judge_grammar(len(candidates)),
        )
        best = parse_best(reply, len(candidates))
        verdict = {"judge": judge, "attempts": contestants, "best": best, "fallback": best is None}
        self.audit.record("adjudicate", task=task.id, reply=(reply or "")[:800], **verdict)
        chosen = results[(best or 1) - 1]
        # also on the chosen trajectory, so the verdict is visible without the audit log
        chosen[0].trajectory.metadata["adjudication"] = verdict
        return chosen

    def build(self, task: Task, rollout: Rollout) -> None:
        """No memory: nothing to construct."""


def parse_best(reply: str | None, n: int) -> int | None:
    """The attempt the judge named (1-based, last 'Best:' line), or None."""
    found = _BEST.findall(reply or "")
    best = int(found[-1]) if found else None
    return best if best is not None and 1 <= best <= n else None
