"""`router`: EDV's Router baseline (arXiv 2606.24428, sec. 5.1: "selects the most suitable model
at inference time via an Ability Matrix", citing RouteLLM, Ong et al., 2024).

At inference `select_model` routes each task to the model the Ability Matrix
ranks first for its task type and the runner runs it once, without memory
(`recall` returns nothing). The matrix is EDV's (ability.py: Beta posterior
with a back-off prior, ranked by a lower confidence bound) and it is learnt
the way EDV learns its own, so Router and EDV differ only in memory:

- on the build split, each task gets EDV's role assignment (pool.py: two
  executors and a third-party distiller drawn from (run seed, task, visit));
  the executors run it `candidates_per_executor` times each, without memory,
  accounted under role `executor` (execute.py);
- `ability_from: distiller` (default): the distiller reads the unlabelled
  candidates with EDV's Distill prompt and its per-candidate assessment
  updates the matrix, EDV's label source (Fig. 3, sec. 4.5; no ground truth
  in construction, sec. 1, 3); the items it also writes are discarded (no
  Verify, no banks). `ability_from: labels`: the run's outcome labels (the
  `router_env` arm pairs it with `protocol.label_source: environment`, as
  `edv_labelled` does for EDV);
- online protocol: the routed model's own episode is assessed by a distiller
  drawn from the other pool members (or its outcome label, under `labels`).

The paper does not say what the Router learns from; learning it as EDV does
keeps the Router-vs-EDV gap of Tables 1-3 a measure of memory alone. RouteLLM
learns a router from preference data; the paper's Router is the Ability Matrix
lookup described above, which is what is built.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params, Rollout
from aecg_bench.errors import ConfigError
from aecg_bench.types import Episode, MemoryItem, RecallQuery, Task
from baselines.edv.ability import AbilityMatrix, task_type_of
from baselines.edv.distill import distill
from baselines.edv.execute import execute
from baselines.edv.method import AbilitySource
from baselines.edv.pool import Pool, StagePlan
from baselines.edv.prompts import Candidate
from baselines.llm_calls import stable_seed
from baselines.trajectory_text import models_used


class RouterParams(Params):
    pool: list[str] | None = Field(None, description="model labels to route between; None = every configured model")
    ability_from: AbilitySource = Field(
        "distiller", description="distiller (its unlabelled assessment, EDV's source) | labels (the run's outcomes)"
    )
    n_executors: int = Field(2, ge=1, description="models probing each build task (EDV's execution group: 2)")
    candidates_per_executor: int = Field(2, ge=1, description="rollouts per executor and build task (EDV: 2)")
    execute_temperature: float | None = Field(None, ge=0, description="None = each model's own (EDV C.1)")
    distill_temperature: float | None = Field(None, ge=0, description="None = each model's own (EDV C.1)")
    distill_max_tokens: int | None = Field(None, ge=32, description="None = the distiller's own max_tokens")
    max_items: int = Field(3, ge=1, description="the Distill prompt's item bound (EDV's; items are discarded)")
    max_chars_per_candidate: int = Field(6000, ge=200, description="each candidate in the distiller's prompt")
    prior_strength: float = Field(2.0, gt=0, description="Ability Matrix prior pseudo-observations")
    confidence: float = Field(1.0, ge=0, description="Ability Matrix ranks by mean - confidence * sd")


class AbilityRouter(MemoryMethod):
    name = "router"
    paper_protocol = "build_then_freeze"  # sec. 5.1: construct on the train split, evaluate frozen
    version = "2"  # 2: learns from EDV's assignment and its distiller's assessment (was: every model, labels)
    pure_recall = True  # routing only reads the ability matrix (runner/concurrent.py)
    Params = RouterParams
    params: RouterParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        p = self.params
        if services.llm is None:
            raise ConfigError("memory 'router' needs the run's LLM client (its model pool)")
        specs = services.llm.models
        self.pool = Pool(
            p.pool if p.pool is not None else list(specs),
            specs,
            execute_temperature=p.execute_temperature,
            distill_temperature=p.distill_temperature,
        )
        # EDV's draw in both modes, so labels and the distiller judge the same executors' candidates
        self.plan = StagePlan(n_executors=p.n_executors)
        self.pool.check(self.plan)
        self.ability = AbilityMatrix(p.prior_strength, p.confidence)
        self.visits: dict[str, int] = {}

    def select_model(self, task: Task) -> str:
        return self.ability.best(task_type_of(task), self.pool.members)

    def build(self, task: Task, rollout: Rollout) -> None:
        """EDV's Execute and its distiller's assessment for one build task; state changes at the end."""
        visit = self.visits.get(task.id, 0)
        assignment = self.pool.assign(self.plan, seed=self.services.seed, task_id=task.id, visit=visit)

        def run_once(label: str, temperature: float, index: int) -> Episode:
            return rollout(
                model=label, temperature=temperature, sample_index=index, use_memory=False, usage_role="executor"
            )[0]

        executed = execute(assignment, self.pool, self.params.candidates_per_executor, run_once)
        probes = [(e.model, e.candidate, e.episode.outcome.success) for e in executed]
        evidence = self._evidence(task, probes, assignment.distiller)
        self.visits[task.id] = visit + 1
        roles = {"executors": list(assignment.executors), "distiller": assignment.distiller}
        self.audit.record("assign", task=task.id, visit=visit, **roles)
        self._learn(task, evidence, "probe")

    def observe(self, episode: Episode) -> None:
        """Online protocol: the routed model's own episode, assessed like a build candidate."""
        used = [m for m in models_used(episode.trajectory) if m in self.pool.members]
        if len(used) != 1:
            self.audit.record("skip", purpose="observe", reason="not_one_pool_model", task=episode.task.id, models=used)
            return
        others = [m for m in self.pool.members if m != used[0]]
        assessor = random.Random(stable_seed("router-assess", self.services.seed, episode.task.id)).choice(others)
        candidate = Candidate(1, "executor 1", episode.trajectory, "")  # no outcome shown
        probe = (used[0], candidate, episode.outcome.success)
        self._learn(episode.task, self._evidence(episode.task, [probe], assessor), "outcome")

    def _evidence(
        self, task: Task, probes: list[tuple[str, Candidate, bool | None]], distiller: str
    ) -> list[tuple[str, bool | None]]:
        """(model, success) per probe (model, candidate, outcome label): the distiller's verdict (None:
        not assessed) or the run's label."""
        if self.params.ability_from == "labels":
            return [(model, label) for model, _, label in probes]
        p = self.params
        assessed = distill(
            self,
            task,
            [candidate for _, candidate, _ in probes],
            distiller=distiller,
            temperature=self.pool.temperature(distiller, "distill"),
            max_items=p.max_items,
            max_chars=p.max_chars_per_candidate,
            max_tokens=p.distill_max_tokens or self.pool.specs[distiller].max_tokens,
        ).assessed
        return [(model, assessed.get(candidate.number)) for model, candidate, _ in probes]

    def _learn(self, task: Task, evidence: list[tuple[str, bool | None]], event: str) -> None:
        source = self.params.ability_from
        for label, success in evidence:
            if success is None:
                self.audit.record("skip", purpose=event, reason="no_label", task=task.id, model=label, source=source)
                continue
            self.ability.update(label, task_type_of(task), success)
            self.audit.record(
                event, task=task.id, task_type=task_type_of(task), model=label, success=success, source=source
            )

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        return []

    def state_dict(self) -> dict[str, Any]:
        return {"ability": self.ability.state_dict(), "visits": dict(sorted(self.visits.items()))}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ability.load_state_dict(state["ability"])
        self.visits = {str(k): int(v) for k, v in state["visits"].items()}

    def stats(self) -> dict[str, float]:
        return {"observations": float(sum(n for _, _, _, n in self.ability.state_dict()))}
