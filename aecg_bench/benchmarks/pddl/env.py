"""One PDDL problem as a text environment, behaving as AgentBoard's `pddl_env.py`.

Per step (AgentBoard's `PDDL.step`):
- an action containing "check" lists the currently valid actions, in words,
  then the meta-actions: "Valid actions are: a, b, ..., check valid actions"
  (plus "look around" in barman and tyreworld, the domains where AgentBoard
  advertises it);
- an action containing "look around" shows the whole state (handled in every
  domain, as AgentBoard's step does, though only advertised in two);
- otherwise the text is parsed into an action (`text.parse_action`). No action
  name recognised, or too few objects: "...Please check valid actions."; an
  action that does not apply or leaves the state unchanged: "...Please remember
  to satisfy the restriction of actions. You can also check valid actions."
  Either way the state is unchanged and the step counts as invalid;
- a valid action moves the state; the observation is the whole new state
  (gripper, blockworld) or only the facts the action made true (barman,
  tyreworld), with " The goal is satisfied." appended once every goal atom holds,
  which ends the episode.

Metrics (AgentBoard's `EvalPddl`): progress rate = running maximum of the
fraction of goal atoms true, updated after each valid action (so, as in
AgentBoard, it starts at 0 even if some goal atoms hold initially); success =
every goal atom holds; grounding accuracy = valid steps / steps, where the
meta-actions count as valid steps.

Deviations, none of which changes a state or a score: AgentBoard lists valid
actions in the iteration order of a Python set (which changes from process to
process) and `look around` facts unsorted; here both are sorted, so a run
replays exactly.
"""

from __future__ import annotations

from aecg_bench.benchmarks.pddl.engine import State, World
from aecg_bench.benchmarks.pddl.text import parse_action, render, render_facts
from aecg_bench.contracts import Environment
from aecg_bench.types import Action, Observation, Score

DIFF_DOMAINS = frozenset({"barman", "tyreworld"})
CHECK = "check valid actions"
LOOK = "look around"
UNPARSED = "The action is not valid and therefore takes no effect. Please check valid actions."
INAPPLICABLE = (
    "The action is not valid and therefore takes no effect. Please remember to satisfy the restriction of "
    "actions. You can also check valid actions."
)
GOAL_REACHED = " The goal is satisfied."


def meta_actions(domain: str) -> list[str]:
    return [CHECK, LOOK] if domain in DIFF_DOMAINS else [CHECK]


class PddlEnv(Environment):
    def __init__(self, world: World, domain: str) -> None:
        self.world = world
        self.domain = domain
        self._objects = set(world.problem.objects)
        self.reset()

    def reset(self) -> Observation:
        self.state: State = self.world.init
        self.progress = 0.0
        self.steps = 0
        self.valid_steps = 0
        self.done = False
        return Observation(render_facts(self.state), info={"progress_rate": 0.0})

    def valid_actions(self) -> list[str]:
        """The currently applicable actions in words, then the meta-actions."""
        return [render(a.name, a.args) for a in self.world.applicable(self.state)] + meta_actions(self.domain)

    def step(self, action: Action) -> Observation:
        if self.done:
            return self._obs("The task is already finished.", valid=False)
        self.steps += 1
        text = action.text.lower()
        if "check" in text:
            return self._valid("Valid actions are: " + ", ".join(self.valid_actions()))
        if LOOK in text:
            return self._valid(render_facts(self.state))
        applicable = self.world.applicable(self.state)
        parsed = parse_action(text, {a.name for a in applicable}, self.world.arity, self._objects)
        if parsed is None:
            return self._obs(UNPARSED, valid=False)
        ground = self.world.lookup(*parsed)
        if ground is None or not ground.pre <= self.state:
            return self._obs(INAPPLICABLE, valid=False)
        new = self.world.successor(self.state, ground)
        if new == self.state:
            return self._obs(INAPPLICABLE, valid=False)
        shown = new - self.state if self.domain in DIFF_DOMAINS else new
        self.state = new
        self.progress = max(self.progress, self.world.goal_fraction(new))
        self.done = self.world.satisfied(new)
        return self._valid(render_facts(shown) + (GOAL_REACHED if self.done else ""))

    def _valid(self, text: str) -> Observation:
        self.valid_steps += 1
        return self._obs(text, valid=True)

    def _obs(self, text: str, *, valid: bool) -> Observation:
        return Observation(
            text,
            reward=1.0 if self.done else 0.0,
            done=self.done,
            valid=valid,
            info={"progress_rate": self.progress},
        )

    def score(self) -> Score:
        success = self.world.satisfied(self.state)
        return Score(
            success=success,
            value=self.progress,
            metrics={
                "progress_rate": self.progress,
                "grounding_accuracy": self.valid_steps / self.steps if self.steps else 0.0,
                "steps": float(self.steps),
                "invalid_actions": float(self.steps - self.valid_steps),
            },
        )
