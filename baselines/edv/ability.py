"""The Ability Matrix: which model of the pool handles which task type (EDV sec. 4.5, 5.5.2).

EDV fills it from the executors' outcomes in the Distill stage and routes each
inference task to the model it ranks first; the Router baseline uses the same
matrix without memory.

The paper gives no formula. The official reference code
(github.com/shidingz/EDV, src/edv/ability.py) ranks by the raw success rate
with 0.5 for untried pairs, so one lucky success (1/1 = 1.0) beats a long good
record (9/10). Here every (model, task type) cell is a Beta posterior:

- prior: centred on the model's record on the *other* task types (back-off),
  with `prior_strength` pseudo-observations, so an untried pair inherits what
  the model showed elsewhere; a model never tried anywhere gets Beta(1, 1);
- score: posterior mean minus `confidence` posterior standard deviations (a
  lower confidence bound); `confidence=0` ranks by the posterior mean.

With the defaults (strength 2, confidence 1): 1/1 scores 0.43, 7/10 scores
0.54 and 9/10 scores 0.73, while an untried model (0.21) still beats one with
a bad record (1/4 scores 0.16). Ties go to the model with more attempts, then
to pool order, so rankings never depend on dict order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from aecg_bench.types import Task


class AbilityMatrix:
    def __init__(self, prior_strength: float = 2.0, confidence: float = 1.0) -> None:
        if prior_strength <= 0 or confidence < 0:
            raise ValueError(f"prior_strength must be > 0 and confidence >= 0; got {prior_strength}, {confidence}")
        self.prior_strength = prior_strength
        self.confidence = confidence
        self.cells: dict[tuple[str, str], list[int]] = {}  # (task_type, model) -> [successes, attempts]

    def update(self, model: str, task_type: str, success: bool) -> None:
        cell = self.cells.setdefault((task_type, model), [0, 0])
        cell[0] += int(success)
        cell[1] += 1

    def record(self, model: str, task_type: str) -> tuple[int, int]:
        s, n = self.cells.get((task_type, model), (0, 0))
        return s, n

    def pooled(self, model: str, *, except_type: str | None = None) -> tuple[int, int]:
        """(successes, attempts) of a model over all task types (optionally but one)."""
        s = n = 0
        for (task_type, m), (cs, cn) in self.cells.items():
            if m == model and task_type != except_type:
                s, n = s + cs, n + cn
        return s, n

    def posterior(self, model: str, task_type: str) -> tuple[float, float]:
        """Beta(alpha, beta) of the model's success rate on this task type."""
        s_other, n_other = self.pooled(model, except_type=task_type)
        centre = (s_other + 1) / (n_other + 2)
        s, n = self.record(model, task_type)
        return self.prior_strength * centre + s, self.prior_strength * (1 - centre) + n - s

    def score(self, model: str, task_type: str) -> float:
        return _lower_bound(*self.posterior(model, task_type), self.confidence)

    def rank(self, task_type: str, models: Sequence[str]) -> list[tuple[str, float]]:
        """Models best first: score, then attempts on this type, then pool order."""
        keyed = [(m, self.score(m, task_type), self.record(m, task_type)[1], i) for i, m in enumerate(models)]
        keyed.sort(key=lambda row: (-row[1], -row[2], row[3]))
        return [(m, score) for m, score, _, _ in keyed]

    def best(self, task_type: str, models: Sequence[str]) -> str:
        if not models:
            raise ValueError("the Ability Matrix needs at least one model to rank")
        return self.rank(task_type, models)[0][0]

    def best_overall(self, models: Sequence[str]) -> str:
        """The best single model over all task types (EDV-Fixed, Table 5)."""
        if not models:
            raise ValueError("the Ability Matrix needs at least one model to rank")

        def key(item: tuple[int, str]) -> tuple[float, int, int]:
            i, m = item
            s, n = self.pooled(m)
            return (-_lower_bound(1 + s, 1 + n - s, self.confidence), -n, i)

        return min(enumerate(models), key=key)[1]

    def snapshot(self, models: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
        """task type -> model -> record and score, for the audit log and analysis."""
        types = sorted({t for t, _ in self.cells})
        return {
            t: {
                m: {"successes": s, "attempts": n, "score": round(self.score(m, t), 4)}
                for m in models
                for s, n in [self.record(m, t)]
            }
            for t in types
        }

    def state_dict(self) -> list[list[Any]]:
        return [[t, m, s, n] for (t, m), (s, n) in sorted(self.cells.items())]

    def load_state_dict(self, rows: list[list[Any]]) -> None:
        self.cells = {(str(t), str(m)): [int(s), int(n)] for t, m, s, n in rows}


def _lower_bound(alpha: float, beta: float, z: float) -> float:
    total = alpha + beta
    mean = alpha / total
    sd = math.sqrt(alpha * beta / (total * total * (total + 1)))
    return mean - z * sd


def task_type_of(task: Task) -> str:
    """The matrix row of a task: its family (PDDL domain, ...), else its benchmark."""
    return task.task_type or task.benchmark
