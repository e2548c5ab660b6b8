"""One ScienceWorld task as an Environment, behaving like AgentBoard's ScienceWorld env.

- reset: load (task, variation) with the benchmark's simplifications, reset, and
  show the `look around` text followed by the inventory (AgentBoard's initial
  observation).
- step: the command (whitespace-normalised) goes to the simulator unchanged;
  its reply is the observation. AgentBoard's meta-action `check valid actions`
  answers "Choose an action from these valid actions: ..." with the action
  templates and does not advance the simulator; it still costs a step.
- progress and success come from the annotated subgoals (`subgoals.py`); the
  episode ends when all are matched, else at the framework's step limit. The
  simulator's own completion does not end it (as in AgentBoard).
- grounding accuracy: the share of steps whose command was one of the
  simulator's valid action-object combinations (or `check valid actions`).
  Checked against the state *before* the step; AgentBoard checks the state
  after it, which marks e.g. a successful `go to kitchen` as ungrounded.
- `Observation.valid` is False only when the simulator could not parse the
  command at all; grounding is the stricter, AgentBoard measure.
- ScienceWorld's native score (0-100) is recorded per step in `info` and in
  the final metrics; a negative native score (the simulator's "task failed",
  e.g. focusing on the wrong object) is reported as 0 with `native_failed` = 1.

Observations are only the simulator's text: no feedback message ever names a
subgoal (G-Memory's feedback does, which leaks the gold annotation).
"""

from __future__ import annotations

from typing import Any

from aecg_bench.benchmarks.scienceworld.pool import SimulatorPool
from aecg_bench.benchmarks.scienceworld.simulator import Simulator
from aecg_bench.benchmarks.scienceworld.subgoals import SubgoalTracker
from aecg_bench.contracts import Environment
from aecg_bench.types import Action, Observation, Score

CHECK_VALID_ACTIONS = "check valid actions"
CHECK_REPLY_PREFIX = "Choose an action from these valid actions: "
# The simulator's replies to a command it cannot parse at all (the step's `valid` is False).
PARSER_REJECTIONS = ("No known action matches that input.", "Unknown action.")


def normalize_command(text: str) -> str:
    """One line, single spaces, lower case (the simulator ignores case)."""
    return " ".join(text.split()).lower()


class ScienceWorldEnvironment(Environment):
    def __init__(self, gold: dict[str, Any], pool: SimulatorPool, simplifications: str) -> None:
        self.env_name = str(gold["env_name"])
        self.variation = int(gold["var"])
        self.subgoals = list(gold["subgoals"])
        self.simplifications = simplifications
        self._pool = pool
        self._sim: Simulator | None = None
        self._loaded = False
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._tracker = SubgoalTracker(self.subgoals)
        self.steps = 0
        self.grounded = 0
        self.checks = 0
        self.native_score = 0
        self.native_completed = False
        self.native_failed = False

    @property
    def simulator(self) -> Simulator | None:
        """The leased simulator process, if any (diagnostics and tests)."""
        return self._sim

    def reset(self) -> Observation:
        if self._sim is not None and not self._sim.alive:  # failed earlier: hand it back, lease a fresh one
            self.close()
        if self._sim is None:
            self._sim = self._pool.acquire()
        sim, self._loaded = self._sim, False
        self._reset_counters()
        sim.load(self.env_name, self.variation, self.simplifications)
        look = sim.reset()
        self._loaded = True
        return Observation(f"{look}\n{sim.inventory()}", info={"native_score": 0})

    def step(self, action: Action) -> Observation:
        if self._sim is None or not self._loaded:
            raise RuntimeError("ScienceWorldEnvironment.step() before a successful reset()")
        sim = self._sim
        command = normalize_command(action.text)
        self.steps += 1
        if command == CHECK_VALID_ACTIONS:
            self.checks += 1
            self.grounded += 1
            templates = [t for t in sim.action_templates() if "reset" not in t]
            reply = CHECK_REPLY_PREFIX + ", ".join([*templates, CHECK_VALID_ACTIONS])
            return Observation(reply, info={"native_score": self.native_score})
        if not command:
            return Observation("Empty action: reply with one command.", valid=False)
        grounded = command in set(sim.valid_actions())
        text, native, completed = sim.step(command)
        before = self._tracker.progress
        self._tracker.observe(text)
        self.grounded += grounded
        self.native_failed = self.native_failed or native < 0
        self.native_score = max(native, 0)
        self.native_completed = completed
        return Observation(
            text,
            reward=self._tracker.progress - before,
            done=self._tracker.complete,
            valid=not text.startswith(PARSER_REJECTIONS),
            info={"native_score": self.native_score},
        )

    def score(self) -> Score:
        t = self._tracker
        return Score(
            success=t.complete,
            value=t.progress,
            metrics={
                "progress_rate": t.progress,
                "subgoals_matched": float(t.matched),
                "subgoals_total": float(t.total),
                "native_score": float(self.native_score),
                "native_completed": float(self.native_completed),
                "native_failed": float(self.native_failed),
                "grounding_accuracy": self.grounded / self.steps if self.steps else 0.0,
                "steps": float(self.steps),
                "check_valid_actions": float(self.checks),
            },
        )

    def close(self) -> None:
        if self._sim is not None:
            sim, self._sim, self._loaded = self._sim, None, False
            self._pool.release(sim)
