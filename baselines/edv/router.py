"""`router`: EDV's Router baseline (arXiv 2606.24428, sec. 5.1: "selects the most suitable model
at inference time via an Ability Matrix", citing RouteLLM, Ong et al., 2024).

On the build split every pool model runs each task (`probes_per_model`
rollouts, no memory, accounted under role `executor`) and its outcome label
fills the Ability Matrix; at inference `select_model` routes each task to the
model the matrix ranks first for its task type, and the runner runs it once.
In the online protocol it also learns from the routed model's own outcomes.
No experience memory: `recall` returns nothing.

The matrix is EDV's (ability.py: Beta posterior with a back-off prior, ranked
by a lower confidence bound), so Router and EDV differ only in memory.

Deviation: RouteLLM learns a router from preference data; the EDV paper's
Router is the Ability Matrix lookup described above, which is what is built.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params, Rollout
from aecg_bench.errors import ConfigError
from aecg_bench.types import Episode, MemoryItem, RecallQuery, Task
from baselines.edv.ability import AbilityMatrix, task_type_of
from baselines.edv.pool import Pool
from baselines.trajectory_text import models_used


class RouterParams(Params):
    pool: list[str] | None = Field(None, description="model labels to route between; None = every configured model")
    probes_per_model: int = Field(1, ge=1, description="rollouts per model and build task")
    prior_strength: float = Field(2.0, gt=0, description="Ability Matrix prior pseudo-observations")
    confidence: float = Field(1.0, ge=0, description="Ability Matrix ranks by mean - confidence * sd")


class AbilityRouter(MemoryMethod):
    name = "router"
    paper_protocol = "build_then_freeze"  # sec. 5.1: construct on the train split, evaluate frozen
    version = "1"
    pure_recall = True  # routing only reads the ability matrix (runner/concurrent.py)
    Params = RouterParams
    params: RouterParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        if services.llm is None:
            raise ConfigError("memory 'router' needs the run's LLM client (its model pool)")
        specs = services.llm.models
        self.pool = Pool(self.params.pool if self.params.pool is not None else list(specs), specs)
        self.ability = AbilityMatrix(self.params.prior_strength, self.params.confidence)

    def select_model(self, task: Task) -> str:
        return self.ability.best(task_type_of(task), self.pool.members)

    def build(self, task: Task, rollout: Rollout) -> None:
        """Probe every pool model on the task, then record all outcomes at once."""
        probes = []
        for label in self.pool.members:
            for _ in range(self.params.probes_per_model):
                episode, _ = rollout(model=label, sample_index=len(probes) + 1, use_memory=False, usage_role="executor")
                probes.append((label, episode.outcome.success))
        for label, success in probes:
            self._learn(task, label, success, "probe")

    def observe(self, episode: Episode) -> None:
        """Online protocol: the routed model's own outcome."""
        used = [m for m in models_used(episode.trajectory) if m in self.pool.members]
        if len(used) != 1:
            self.audit.record("skip", purpose="observe", reason="not_one_pool_model", task=episode.task.id, models=used)
            return
        self._learn(episode.task, used[0], episode.outcome.success, "outcome")

    def _learn(self, task: Task, label: str, success: bool | None, source: str) -> None:
        if success is None:
            self.audit.record("skip", purpose=source, reason="no_label", task=task.id, model=label)
            return
        self.ability.update(label, task_type_of(task), bool(success))
        self.audit.record(source, task=task.id, task_type=task_type_of(task), model=label, success=bool(success))

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        return []

    def state_dict(self) -> dict[str, Any]:
        return {"ability": self.ability.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ability.load_state_dict(state["ability"])

    def stats(self) -> dict[str, float]:
        return {"observations": float(sum(n for _, _, _, n in self.ability.state_dict()))}
