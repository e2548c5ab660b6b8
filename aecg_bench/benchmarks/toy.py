"""`toy`: walk to a target cell on a line. A first-class test benchmark, not a paper's.

Each task places the agent on a line of cells and names a target; the actions
are `move left`, `move right` and `stop`. Success = stopping on the target.
It exercises the whole step-wise path (reset, step, invalid actions, step
limit, scoring) in milliseconds, and the `toy_oracle` mock policy solves it,
with a configurable deterministic error rate so memory methods see both
successes and failures.
"""

from __future__ import annotations

import hashlib
import random
import re

from pydantic import Field

from aecg_bench.contracts import Benchmark, EnvContext, Environment, Params
from aecg_bench.llm.mock import last_text, route_reply
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Action, Observation, Sample, Score, Task

ACTIONS = ("move left", "move right", "stop")
_OBS = re.compile(r"You are at cell (\d+)\. The target is cell (\d+)\.")


class ToyParams(Params):
    size: int = Field(12, ge=1, le=10_000, description="number of tasks")
    length: int = Field(8, ge=2, description="cells on the line")
    max_steps: int = Field(12, ge=1)
    train_size: int = Field(6, ge=0, description="tasks in the train split (build protocols)")
    zones: int = Field(
        1, ge=1, le=4, description="task types per direction, by the start cell's zone (1: 'right'/'left')"
    )


class ToyBenchmark(Benchmark):
    name = "toy"
    version = "1"
    Params = ToyParams

    def splits(self) -> list[str]:
        return ["train", "test"]

    def samples(self, split: str = "test") -> list[Sample]:
        p = self.params
        n = p.size if split == "test" else p.train_size
        rng = random.Random(f"toy:{split}")
        out = []
        for i in range(n):
            start, target = rng.randrange(p.length), rng.randrange(p.length)
            family = "right" if target >= start else "left"
            if p.zones > 1:  # e.g. right0, right1: more task types, so more skills (AECG mechanism tests)
                family += str(start * p.zones // p.length)
            task = Task(
                id=f"{split}-{i}",
                benchmark=self.name,
                instruction=f"Walk to the target cell on a line of {p.length} cells, then stop.",
                mode="steps",
                task_type=family,
                action_hint="Actions: move left | move right | stop",
                action_grammar='root ::= "move left" | "move right" | "stop"',
                max_steps=p.max_steps,
                metadata={"difficulty": "easy" if abs(target - start) <= 2 else "hard"},
            )
            out.append(Sample(task=task, gold={"start": start, "target": target, "length": p.length}, split=split))
        return out

    def make_env(self, sample: Sample, ctx: EnvContext) -> Environment:
        return ToyEnv(**sample.gold)


class ToyEnv(Environment):
    def __init__(self, start: int, target: int, length: int) -> None:
        self.start, self.target, self.length = start, target, length
        self.pos = start
        self.stopped = False
        self.steps = 0
        self.invalid = 0

    def _obs_text(self) -> str:
        return f"You are at cell {self.pos}. The target is cell {self.target}."

    def reset(self) -> Observation:
        self.pos, self.stopped, self.steps, self.invalid = self.start, False, 0, 0
        return Observation(self._obs_text())

    def step(self, action: Action) -> Observation:
        self.steps += 1
        cmd = " ".join(action.text.lower().split())
        if cmd not in ACTIONS:
            self.invalid += 1
            return Observation(f"Invalid action {action.text!r}. Valid actions: {', '.join(ACTIONS)}.", valid=False)
        if cmd == "stop":
            self.stopped = True
            return Observation(f"You stopped at cell {self.pos}.", reward=float(self.pos == self.target), done=True)
        self.pos = max(0, self.pos - 1) if cmd == "move left" else min(self.length - 1, self.pos + 1)
        return Observation(self._obs_text())

    def score(self) -> Score:
        success = self.stopped and self.pos == self.target
        return Score(
            success=success,
            value=float(success),
            metrics={
                "steps": float(self.steps),
                "distance": float(abs(self.pos - self.target)),
                "grounding_accuracy": (self.steps - self.invalid) / self.steps if self.steps else 0.0,
            },
        )


def mock_oracle(request: Request, spec: ModelSpec) -> str:
    """Mock policy: reads the latest position and target and moves toward it.

    `options.error_rate` makes it err on that fraction of decisions (stop too
    early, or step off the target), chosen by a hash of the prompt so it is the
    same on every rerun.
    """
    route = route_reply(request)  # an AgentNet router: the holder keeps the task
    if route is not None:
        return route
    matches = _OBS.findall(last_text(request))
    if not matches:
        return "stop"
    pos, target = (int(x) for x in matches[-1])
    rate = float(spec.options.get("error_rate", 0.0))
    digest = hashlib.sha256(repr(request.messages).encode()).digest()
    wrong = rate > 0 and int.from_bytes(digest[:4], "big") / 2**32 < rate
    if pos == target:
        return ("move left" if pos > 0 else "move right") if wrong else "stop"
    if wrong:
        return "stop"
    return "move right" if target > pos else "move left"
