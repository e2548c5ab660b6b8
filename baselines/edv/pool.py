"""The heterogeneous model pool: members, stage temperatures, and per-task role assignment.

Pool members are model labels of the run's model config (`conf/model/*.yaml`);
by default every configured model is a member, in config order. Each member
samples with its own temperature in Execute and Distill and at 0.0 in Verify,
which is the paper's schedule T = (T1, T2, T3) (Appendix C.1: GLM-4.7 and
MiniMax-M2.1 (1.0, 1.0, 0.0), MiMo-V2-Flash (0.3, 0.3, 0.0)): the model
config carries each member's temperature, and a stage temperature set in
EDV's params overrides it for every member.

Role assignment per construction task (sec. 5.1: "randomly samples two models
to form the execution group and assigns another model as the distillation
agent") is a pure function of (run seed, task id, visit), drawn with a local
RNG. It is fixed before any rollout starts, so it is identical across reruns
and resumes and cannot depend on thread scheduling (Appendix C.4: "model
indices for each step are pre-allocated deterministically"). `visit` counts
earlier constructions from the same task (construction epochs), so each
epoch draws a fresh group.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aecg_bench.errors import ConfigError, unknown_choice
from aecg_bench.llm.spec import ModelSpec
from baselines.llm_calls import stable_seed

POOL_HINT = "configure a pool: model=edv_pool_paper, edv_pool_local or edv_pool_mock, or memory.params.pool"
DistillBy = Literal["third_party", "executor"]
VerifyBy = Literal["executors", "distiller", "external", "none"]


@dataclass(frozen=True)
class Assignment:
    """Who does what for one construction task."""

    executors: tuple[str, ...]
    distiller: str
    verifiers: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"executors": list(self.executors), "distiller": self.distiller, "verifiers": list(self.verifiers)}


@dataclass(frozen=True)
class StagePlan:
    """How roles are drawn: the knobs of the paper's progressive ablation (Table 4)."""

    n_executors: int = 2
    rotate: bool = True  # random role rotation per task; False = executors start at `fixed`
    fixed: str = ""  # pool member used when roles do not rotate (and by routing="fixed")
    distill_by: DistillBy = "third_party"
    verify_by: VerifyBy = "executors"


class Pool:
    def __init__(
        self,
        members: Sequence[str],
        specs: dict[str, ModelSpec],
        *,
        execute_temperature: float | None = None,
        distill_temperature: float | None = None,
        verify_temperature: float | None = 0.0,
        solve_temperature: float | None = None,
    ) -> None:
        if not members:
            raise ConfigError("the EDV model pool is empty; list model labels in `pool` or configure models")
        for label in members:
            if label not in specs:
                raise unknown_choice("pool model", label, specs)
        if len(set(members)) != len(members):
            raise ConfigError(f"the EDV model pool lists a model twice: {list(members)}")
        self.members = tuple(members)
        self.specs = specs
        self._overrides = {
            "execute": execute_temperature,
            "distill": distill_temperature,
            "verify": verify_temperature,
            "solve": solve_temperature,
        }

    def temperature(self, label: str, stage: Literal["execute", "distill", "verify", "solve"]) -> float:
        override = self._overrides[stage]
        return self.specs[label].temperature if override is None else override

    def describe(self) -> dict[str, dict[str, object]]:
        """Each member's model id and stage temperatures (audit log: says plainly when the
        pool is one model under several sampling settings)."""
        return {
            label: {
                "model": self.specs[label].model,
                "temperatures": [self.temperature(label, s) for s in ("execute", "distill", "verify")],
            }
            for label in self.members
        }

    def check(self, plan: StagePlan) -> None:
        """Fail at start-up, not mid-run, when the pool cannot staff the plan."""
        n = len(self.members)
        if plan.fixed and plan.fixed not in self.members:
            raise unknown_choice("fixed pool model", plan.fixed, self.members)
        if not 1 <= plan.n_executors <= n:
            raise ConfigError(
                f"n_executors={plan.n_executors} needs as many pool models; the pool has {n} ({POOL_HINT})"
            )
        outsiders = n - plan.n_executors - (1 if plan.distill_by == "third_party" else 0)
        if outsiders < 0:
            raise ConfigError(
                f"third-party distillation needs a pool model outside the {plan.n_executors} executors; "
                f"the pool has {n}: {', '.join(self.members)} ({POOL_HINT})"
            )
        if plan.verify_by == "external" and outsiders < 1:
            raise ConfigError(
                f"an external verifier needs a pool model outside the executors and the distiller; "
                f"the pool has {n}: {', '.join(self.members)} ({POOL_HINT})"
            )

    def assign(self, plan: StagePlan, *, seed: int, task_id: str, visit: int) -> Assignment:
        """The roles for one construction task: a pure function of (seed, task, visit)."""
        rng = random.Random(stable_seed("edv-assign", seed, task_id, visit))
        members = list(self.members)
        if plan.rotate:
            executors = rng.sample(members, plan.n_executors)
        else:
            start = members.index(plan.fixed or members[0])
            executors = [members[(start + i) % len(members)] for i in range(plan.n_executors)]
        if plan.distill_by == "third_party":
            distiller = rng.choice([m for m in members if m not in executors])
        else:
            distiller = rng.choice(executors)
        if plan.verify_by == "executors":
            verifiers = list(executors)
        elif plan.verify_by == "distiller":
            verifiers = [distiller]
        elif plan.verify_by == "external":
            verifiers = [rng.choice([m for m in members if m not in executors and m != distiller])]
        else:
            verifiers = []
        return Assignment(tuple(executors), distiller, tuple(verifiers))
