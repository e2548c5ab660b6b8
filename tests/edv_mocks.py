"""Scripted pools and a scripted rollout for EDV, Judge and Router unit tests.

`pool_client` builds an LLM client whose models answer EDV's prompts from
regex scripts (one per model), so each test states exactly how each pool
member distils, votes and judges. `ScriptedRollout` stands in for the runner's
rollout: each model succeeds or fails as told, and a rollout that may use
memory issues one recall, as a framework would, so tests can see which bank
the acting model reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryMethod, MemoryServices, Rollout
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.types import Action, Episode, Observation, Outcome, RecallQuery, Score, Step, Task, Trajectory

DISTILL_REPLY = (
    "Analysis: candidate 1 checked the order status first; candidate 3 cancelled a shipped order.\n"
    "Best: 1\n"
    "Assessment: 1=success; 2=success; 3=failure; 4=failure\n"
    "# Memory Item 1\n## Title Alpha rule\n## Description Check the status first.\n"
    "## Content When asked to cancel (context), shipped orders cannot be cancelled (risk); read the status first "
    "(action).\n"
    "# Memory Item 2\n## Title Beta rule\n## Description Verify the name.\n"
    "## Content When looking up orders (context), lookups fail without a verified name (risk); ask first (action).\n"
    "# Memory Item 3\n## Title Gamma rule\n## Description Be careful.\n## Content Always be careful."
)
DISTILL = {"match": "strict third-party evaluator", "reply": DISTILL_REPLY}
APPROVE = "Rationale: grounded in candidate 1, act 1.\nVerdict: APPROVE"
REJECT = "Rationale: generic, not grounded.\nVerdict: REJECT"


def verdicts(approve: tuple[str, ...]) -> list[dict[str, str]]:
    """Script rules: approve the items whose titles are listed, reject the others."""
    rules = [{"match": rf"Candidate memory\n{title}", "reply": APPROVE} for title in approve]
    return [*rules, {"match": "Candidate memory", "reply": REJECT}]


def spec(label: str, rules: list[dict[str, str]], temperature: float = 0.0, **options: Any) -> ModelSpec:
    return ModelSpec(
        label=label,
        provider="mock",
        model=f"mock/{label}",
        temperature=temperature,
        options={"policy": "script", "script": [*rules, DISTILL], **options},
    )


# ma approves Alpha and Beta, mb approves Alpha only: Alpha unanimous, Beta partial, Gamma none.
THREE_WAY = {"ma": verdicts(("Alpha rule", "Beta rule")), "mb": verdicts(("Alpha rule",)), "mc": verdicts(())}


def pool_client(scripts: dict[str, list[dict[str, str]]] | None = None, **temperatures: float) -> LLMClient:
    scripts = scripts if scripts is not None else THREE_WAY
    specs = {label: spec(label, rules, temperatures.get(label, 0.0)) for label, rules in scripts.items()}
    return LLMClient(specs, {"default": next(iter(specs))})


def services(llm: LLMClient | None = None, seed: int = 0) -> MemoryServices:
    return MemoryServices(llm=llm or pool_client(), embedder=Embedder("lexical"), audit=AuditLog(), seed=seed)


INSTRUCTION = "Cancel the pending order of the customer after verifying their name"


def task(task_id: str = "t1", task_type: str = "cancel", instruction: str = INSTRUCTION) -> Task:
    return Task(id=task_id, benchmark="unit", instruction=instruction, task_type=task_type)


@dataclass
class ScriptedRollout(Rollout):
    """Each model succeeds iff listed in `succeeds`; every call is recorded with what it recalled."""

    task: Task
    memory: MemoryMethod
    succeeds: tuple[str, ...] = ("ma",)
    calls: list[dict[str, Any]] = field(default_factory=list)
    opening: str = "A customer writes in."

    def __call__(
        self,
        *,
        model: str | None = None,
        temperature: float | None = None,
        sample_index: int = 0,
        use_memory: bool = True,
        usage_role: str | None = None,
    ) -> tuple[Episode, Score]:
        query = RecallQuery(task=self.task, level="agent", agent="solver", role="actor", context=self.opening)
        recalled = [i.id for i in self.memory.recall(query)] if use_memory else []
        self.calls.append(
            {
                "model": model,
                "temperature": temperature,
                "sample_index": sample_index,
                "use_memory": use_memory,
                "usage_role": usage_role,
                "recalled": recalled,
            }
        )
        ok = model in self.succeeds
        traj = Trajectory(task_id=self.task.id, framework="scripted", initial_observation=self.opening)
        act = Action(kind="command", text=f"act of {model} #{sample_index}")
        traj.steps.append(Step(0, act, Observation("done" if ok else "refused")))
        return Episode(self.task, traj, Outcome(success=ok, value=float(ok))), Score(ok, float(ok))
