"""`edv`: Execute-Distill-Verify experience construction over a heterogeneous model pool
(Zhu et al., "Escaping the Self-Confirmation Trap: An Execute-Distill-Verify Paradigm for
Agentic Experience Learning", arXiv 2606.24428; reference code github.com/shidingz/EDV).

Construction (`build`, on the build split under protocol.mode=build_then_freeze):
per task, a role assignment drawn from (seed, task, visit) (`pool`); the
executors run the task, `candidates_per_executor` rollouts each (`execute`);
the distiller compares the candidates and writes memory items (`distill`);
every verifier votes on every item and the votes route it to the shared bank,
the approvers' private banks, or nowhere (`verify`). The distiller's
assessment of each candidate updates the Ability Matrix (`ability`); no
outcome label reaches construction unless `show_outcomes` / `ability_from:
labels` ask for it (the `edv_labelled` variant). Nothing changes until every LLM call of
the task has returned: the state and the audit events (assignment, every
candidate, the distiller's selection, every vote with its rationale, every
admission and discard) are committed together at the end, so a provider
failure leaves the memory as it was.

Inference (`solve`): the Ability Matrix routes the task to a pool model; the
framework runs it with that model and recalls through hierarchical retrieval
(`banks`): shared bank first (cos >= 0.80), then the solver's private bank
(cos >= 0.85) if fewer than k = 3 items.

Online variant (protocol.mode=online): each task is first solved with the
memory so far, then constructed from (`observe` runs the construction with the
task's rollout handle), so a task never benefits from its own experience.

Token accounting (sec. 5.6): executor rollouts are accounted under role
`executor`, inference rollouts under `solver`, the distiller's and verifiers'
calls under `distiller` and `verifier` (records' usage.by_role).

Hyperparameters (defaults and sources):
- pool: every model of the run's model config; the paper's three are in
  conf/model/edv_pool_paper.yaml (sec. 5.1).
- n_executors 2 (sec. 5.1, C.1 N=2); candidates_per_executor 2 (C.1: M=4
  candidates per task; B.1: "four heterogeneous candidates"); third-party
  distiller outside the execution group (sec. 5.1); verifiers = executors
  (sec. 4.4).
- temperatures (C.1): Execute and Distill at each model's own temperature from
  the model config, Verify at 0.0.
- max_items 3 (ReasoningBank's bound; the paper: "a small set").
- top_k 3 (A.2), shared_threshold 0.80 and private_threshold 0.85 (C.3; tuned
  for Qwen3-Embedding-4B: see banks.py).
- Ability Matrix: Beta posterior with back-off prior, ranked by a lower
  confidence bound (prior_strength 2, confidence 1; our choice, see ability.py).

Executors read memory while constructing (`execute_with_memory`, default
true): the shared bank and their own private bank, never their task's own
items. The paper learns iteratively from its own memory (A.1: EDV is "more
capable of distilling and utilizing complex experiences during the iterative
learning process"; sec. 1, 3 and Fig. 1: experience is "reinforced through
later retrieval and reuse"), and so does ReasoningBank, its baseline, whose
rollouts read memory on the build split too; so a construction epoch
(`protocol.build_epochs`, Fig. 4) means the same for both: a pass over the
build split whose rollouts read what earlier tasks and epochs stored. The
official toy code (src/edv/pipeline.py) constructs once per task with
`memories=()`; `execute_with_memory: false` reproduces it.

Deviations (details in docs/memory/edv.md): executors run sequentially, not in
parallel (execute.py); what retrieval embeds is unspecified (banks.py); the
Distill and Verify prompts are rewritten from Appendix B's description.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params, Rollout
from aecg_bench.errors import ConfigError
from aecg_bench.types import Episode, MemoryItem, RecallQuery, Score, Task
from baselines.edv.ability import AbilityMatrix, task_type_of
from baselines.edv.banks import Banks, IndexText, item_text
from baselines.edv.distill import distill
from baselines.edv.execute import Executed, execute
from baselines.edv.pool import Assignment, DistillBy, Pool, StagePlan, VerifyBy
from baselines.edv.verify import BankMode, Verdict, verify_items
from baselines.index import RetrievalKey, embedder_of, task_key

Routing = Literal["ability", "fixed", "best_overall"]
AbilitySource = Literal["distiller", "labels"]


class EDVParams(Params):
    pool: list[str] | None = Field(None, description="model labels of the pool; None = every configured model")
    # construction (Table 4's knobs)
    n_executors: int = Field(2, ge=1, description="execution group size (paper: 2)")
    candidates_per_executor: int = Field(2, ge=1, description="rollouts per executor (paper: M=4 over 2 executors)")
    rotate_roles: bool = Field(True, description="draw roles per task; False = executors start at fixed_model")
    fixed_model: str | None = Field(None, description="pool model for fixed roles/routing; None = first of the pool")
    distill_by: DistillBy = Field("third_party", description="third_party (outside the group) | executor (self)")
    verify_by: VerifyBy = Field("executors", description="executors | distiller | external | none")
    execute_with_memory: bool = Field(
        True, description="executors recall while constructing (paper A.1; the official toy code: no)"
    )
    show_outcomes: bool = Field(
        False, description="show the run's outcome label of each candidate to distiller/verifiers (paper: no)"
    )
    ability_from: AbilitySource = Field(
        "distiller", description="what updates the Ability Matrix: distiller (its assessment; paper) | labels"
    )
    max_items: int = Field(3, ge=1, description="memory items per distillation")
    # temperatures (None = each model's own temperature from the model config)
    execute_temperature: float | None = Field(None, ge=0)
    distill_temperature: float | None = Field(None, ge=0)
    verify_temperature: float | None = Field(0.0, ge=0)
    solve_temperature: float | None = Field(None, ge=0)
    distill_max_tokens: int | None = Field(None, ge=32, description="None = the model's own max_tokens")
    verify_max_tokens: int | None = Field(None, ge=16, description="None = the model's own max_tokens")
    max_chars_per_candidate: int = Field(
        6000, ge=200, description="each candidate trajectory in each prompt (ReasoningBank's extractor: 6000)"
    )
    # storage, routing and retrieval (Table 5's knobs)
    banks: BankMode = Field("hierarchical", description="hierarchical | shared_only | private_only")
    routing: Routing = Field("ability", description="ability (matrix per task type) | fixed | best_overall")
    top_k: int = Field(3, ge=0, description="items recalled per query (paper: 3)")
    shared_threshold: float = Field(0.80, ge=-1, le=1, description="cosine for the shared bank (paper: 0.80)")
    private_threshold: float = Field(0.85, ge=-1, le=1, description="cosine for private banks (paper: 0.85)")
    index_text: IndexText = Field("task", description="what is embedded per item: task | item | task+item")
    retrieval_key: RetrievalKey = Field(
        "instruction+observation",
        description="a task's key: instruction + opening (stored) / current (recalled) observation | instruction",
    )
    exclude_same_task: bool = Field(True, description="never recall items distilled from the task being solved")
    prior_strength: float = Field(2.0, gt=0, description="Ability Matrix prior pseudo-observations")
    confidence: float = Field(1.0, ge=0, description="Ability Matrix ranks by mean - confidence * sd")


class EDVMemory(MemoryMethod):
    name = "edv"
    paper_protocol = "build_then_freeze"  # sec. 5.1: construct on the train split, evaluate frozen
    version = "2"  # 2: executors read memory while constructing by default (epochs as ReasoningBank's)
    pure_recall = True  # recall reads the banks; solve's per-task attributes are per replica (runner/concurrent.py)
    Params = EDVParams
    params: EDVParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        p = self.params
        if services.llm is None:
            raise ConfigError("memory 'edv' needs the run's LLM client (its model pool)")
        specs = services.llm.models
        self.pool = Pool(
            p.pool if p.pool is not None else list(specs),
            specs,
            execute_temperature=p.execute_temperature,
            distill_temperature=p.distill_temperature,
            verify_temperature=p.verify_temperature,
            solve_temperature=p.solve_temperature,
        )
        self.plan = StagePlan(
            n_executors=p.n_executors,
            rotate=p.rotate_roles,
            fixed=p.fixed_model or self.pool.members[0],
            distill_by=p.distill_by,
            verify_by=p.verify_by,
        )
        self.pool.check(self.plan)
        self.banks = Banks(embedder_of(services), p.index_text)
        self.ability = AbilityMatrix(p.prior_strength, p.confidence)
        self.visits: dict[str, int] = {}
        self.next_id = 0
        self.discarded = 0
        self._acting: str | None = None  # pool model whose rollout is running (its private bank is recalled)
        self._pending: tuple[str, Rollout] | None = None  # online variant: the last solved task's rollout

    # -- inference -------------------------------------------------------------

    def select_model(self, task: Task) -> str:
        members = self.pool.members
        if self.params.routing == "fixed":
            return self.plan.fixed
        if self.params.routing == "best_overall":
            return self.ability.best_overall(members)
        return self.ability.best(task_type_of(task), members)

    def solve(self, task: Task, rollout: Rollout) -> tuple[Episode, Score]:
        solver = self.select_model(task)
        result = self._run(
            rollout, solver, self.pool.temperature(solver, "solve"), sample_index=0, memory=True, role="solver"
        )
        self._pending = (task.id, rollout)
        return result

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        p = self.params
        hits = self.banks.retrieve(
            task_key(query.task, query.context, p.retrieval_key),
            task_id=query.task.id,
            solver=self._acting,
            k=p.top_k,
            shared_threshold=p.shared_threshold,
            private_threshold=p.private_threshold,
            exclude_same_task=p.exclude_same_task,
        )
        return [
            MemoryItem(
                id=h.item["id"],
                text=item_text(h.item),
                level=query.level,
                kind="experience",
                score=h.score,
                metadata={"bank": h.bank, "source_task": h.item["task_id"]},
            )
            for h in hits
        ]

    # -- construction ----------------------------------------------------------

    def build(self, task: Task, rollout: Rollout) -> None:
        self._construct(task, rollout)

    def observe(self, episode: Episode) -> None:
        """Online variant: construct from the task just solved, with its rollout handle."""
        pending, self._pending = self._pending, None
        if pending is None or pending[0] != episode.task.id:
            self.audit.record("skip", purpose="construct", reason="no_rollout", task=episode.task.id)
            return
        self._construct(episode.task, pending[1])

    def _construct(self, task: Task, rollout: Rollout) -> None:
        p = self.params
        visit = self.visits.get(task.id, 0)
        assignment = self.pool.assign(self.plan, seed=self.services.seed, task_id=task.id, visit=visit)
        events: list[tuple[str, dict[str, Any]]] = [
            ("assign", {"task": task.id, "visit": visit, **assignment.to_dict(), "pool": self.pool.describe()})
        ]

        def run_once(label: str, temperature: float, index: int) -> Episode:
            return self._run(rollout, label, temperature, index, memory=p.execute_with_memory, role="executor")[0]

        executed = execute(assignment, self.pool, p.candidates_per_executor, run_once)
        events += [("execute", {"task": task.id, **e.to_audit()}) for e in executed]
        candidates = [e.candidate for e in executed]
        distilled = distill(
            self,
            task,
            candidates,
            distiller=assignment.distiller,
            temperature=self.pool.temperature(assignment.distiller, "distill"),
            max_items=p.max_items,
            max_chars=p.max_chars_per_candidate,
            max_tokens=self._max_tokens(assignment.distiller, p.distill_max_tokens),
            show_outcome=p.show_outcomes,
        )
        events.append(
            (
                "distill",
                {
                    "task": task.id,
                    "distiller": assignment.distiller,
                    "best": distilled.best,
                    "assessment": {str(k): v for k, v in sorted(distilled.assessed.items())},
                    "n_items": len(distilled.items),
                    "analysis": distilled.analysis,
                    **({} if distilled.items else {"reason": "unparsable", "reply": (distilled.reply or "")[:500]}),
                },
            )
        )
        verdicts = verify_items(
            self,
            task,
            candidates,
            distilled.items,
            verifiers=assignment.verifiers,
            executors=assignment.executors,
            mode=p.banks,
            temperature=lambda v: self.pool.temperature(v, "verify"),
            max_tokens=lambda v: self._max_tokens(v, p.verify_max_tokens),
            max_chars=p.max_chars_per_candidate,
            show_outcome=p.show_outcomes,
        )
        assessed = self._ability_evidence(executed, distilled.assessed)
        opening = executed[0].episode.trajectory.initial_observation if executed else ""
        self._commit(task, visit, assignment, assessed, distilled.best, verdicts, events, opening)

    def _ability_evidence(self, executed: list[Executed], assessed: dict[int, bool]) -> list[tuple[str, bool]]:
        """(model, success) pairs the Ability Matrix learns from: the distiller's assessment of each
        candidate (paper), or the run's outcome labels (`ability_from: labels`)."""
        if self.params.ability_from == "labels":
            return [
                (e.model, bool(e.episode.outcome.success)) for e in executed if e.episode.outcome.success is not None
            ]
        return [(e.model, assessed[e.candidate.number]) for e in executed if e.candidate.number in assessed]

    def _commit(
        self,
        task: Task,
        visit: int,
        assignment: Assignment,
        assessed: list[tuple[str, bool]],
        best: int | None,
        verdicts: list[Verdict],
        events: list[tuple[str, dict[str, Any]]],
        opening: str,
    ) -> None:
        """Every state change and audit event of one construction, after all its LLM calls."""
        task_type = task_type_of(task)
        for model, success in assessed:
            self.ability.update(model, task_type, success)
        events.append(
            (
                "ability",
                {
                    "task_type": task_type,
                    "source": self.params.ability_from,
                    "evidence": [[m, s] for m, s in assessed],
                    "matrix": self.ability.snapshot(self.pool.members),
                },
            )
        )
        for n, verdict in enumerate(verdicts):
            item_id = f"edv-{self.next_id}"
            self.next_id += 1
            for v in verdict.votes:
                vote_data = {"verifier": v.verifier, "approve": v.approve, "parsed": v.parsed, "rationale": v.rationale}
                events.append(("vote", {"memory_id": item_id, **vote_data}))
            item = verdict.item
            record = {
                "memory_id": item_id,
                "task": task.id,
                "title": item.title,
                "destination": verdict.destination,
                "owners": list(verdict.owners),
                "approvals": f"{len(verdict.approvers)}/{len(verdict.voters)}",
                "verified": bool(verdict.votes),
            }
            if verdict.destination == "discard":
                self.discarded += 1
                events.append(("discard", record))
                continue
            self.banks.add(
                {
                    "id": item_id,
                    "title": item.title,
                    "description": item.description,
                    "content": item.content,
                    "task_id": task.id,
                    "task_type": task_type,
                    "query": task_key(task, opening, self.params.retrieval_key),
                    "bank": verdict.destination,
                    "owners": list(verdict.owners),
                    "distiller": assignment.distiller,
                    "best_candidate": best,
                    "item_index": n,
                    "visit": visit,
                }
            )
            events.append(("admit", record))
        self.visits[task.id] = visit + 1
        for event, data in events:
            self.audit.record(event, **data)

    # -- helpers ---------------------------------------------------------------

    def _run(
        self, rollout: Rollout, label: str, temperature: float, sample_index: int, *, memory: bool, role: str
    ) -> tuple[Episode, Score]:
        with self._acting_as(label):
            return rollout(
                model=label, temperature=temperature, sample_index=sample_index, use_memory=memory, usage_role=role
            )

    @contextmanager
    def _acting_as(self, label: str) -> Iterator[None]:
        self._acting = label
        try:
            yield
        finally:
            self._acting = None

    def _max_tokens(self, label: str, override: int | None) -> int:
        return self.pool.specs[label].max_tokens if override is None else override

    # -- state -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "items": self.banks.state_dict(),
            "ability": self.ability.state_dict(),
            "visits": dict(sorted(self.visits.items())),
            "next_id": self.next_id,
            "discarded": self.discarded,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.banks.load_state_dict(state["items"])
        self.ability.load_state_dict(state["ability"])
        self.visits = {str(k): int(v) for k, v in state["visits"].items()}
        self.next_id = int(state["next_id"])
        self.discarded = int(state["discarded"])
        self._pending = None

    def stats(self) -> dict[str, float]:
        counts = self.banks.counts()
        return {
            "items": float(len(self.banks.items)),
            "shared": float(counts["shared"]),
            "private": float(counts["private"]),
            "discarded": float(self.discarded),
            "constructions": float(sum(self.visits.values())),
        }
