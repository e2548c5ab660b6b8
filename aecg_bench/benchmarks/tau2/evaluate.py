"""tau2's reward, component by component (src/tau2/evaluator/*.py at 37199f36).

- DB: a fresh DB gets the task's initial state and the gold actions (failing ones
  are skipped, as tau2 only logs them); its hash must equal the hash of the DB the
  conversation left behind.
- ENV_ASSERTION: each assertion function run on the final DB returns its `assert_value`.
- ACTION: every gold action is matched by some tool call of the conversation
  (same name, equal arguments on `compare_args`).
- COMMUNICATE: every `communicate_info` string occurs, case-insensitively, in some
  agent text message with its commas removed.
- NL_ASSERTION: judged by an LLM in tau2; no task of this release puts it in its
  reward basis, so it is not computed here (a task that did would be refused).

reward = product of the components in the task's `reward_basis` (default DB and
COMMUNICATE); 0 when the conversation ended by hitting max steps or max errors
(tau2 then skips the evaluation; the components are still computed here, for
inspection only); 1 when the task has no evaluation criteria.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aecg_bench.benchmarks.tau2.tasks import EnvAssertion, RewardType, Tau2Task
from aecg_bench.benchmarks.tau2.world import World

PREMATURE = ("max_steps", "too_many_errors")


@dataclass(frozen=True)
class Call:
    """A tool call made during the conversation (by the agent, or by the user in telecom)."""

    name: str
    arguments: dict[str, Any]
    requestor: str = "assistant"


@dataclass
class Reward:
    reward: float
    components: dict[str, float] = field(default_factory=dict)  # every component, in basis or not
    basis: tuple[str, ...] = ()
    checks: dict[str, list[bool]] = field(default_factory=dict)
    note: str = ""


def replay_gold(task: Tau2Task, fresh: Callable[[], World]) -> World:
    """A fresh environment with the task's initial state and its gold actions applied.

    As tau2's EnvironmentEvaluator: each gold action is a plain tool call for its
    requestor with no sync in between, and a failing one is skipped.
    """
    world = fresh()
    criteria = task.evaluation_criteria
    for action in (criteria.actions if criteria else None) or []:
        try:
            world.make_tool_call(action.name, action.arguments, action.requestor)
        except Exception:  # tau2 logs a failing gold action and goes on
            continue
    return world


def assertion_holds(world: World, assertion: EnvAssertion) -> bool:
    """An assertion about an object the final DB does not hold (the domain function raises, e.g.
    "Task task_2 not found" when the agent never created it) does not hold. tau2 lets that error
    escape its evaluator; here it is the task's failure, never an infra error that would be redone."""
    try:
        result = world.run_function(assertion.env_type, assertion.func_name, assertion.arguments)
    except ValueError:
        return False
    if not isinstance(result, bool):
        raise ValueError(f"assertion {assertion.func_name} returned {type(result).__name__}, not bool")
    return result == assertion.assert_value


def communicated(info: str, agent_texts: Sequence[str]) -> bool:
    return any(info.lower() in text.lower().replace(",", "") for text in agent_texts)


def evaluate(
    task: Tau2Task,
    *,
    final: World,
    gold_hashes: tuple[str, str | None],
    calls: Sequence[Call],
    agent_texts: Sequence[str],
    termination: str,
) -> Reward:
    """tau2's `evaluate_simulation(..., EvaluationType.ALL)` over one finished conversation.

    `gold_hashes` are the agent and user DB hashes of `replay_gold(task, ...)` (computed once
    per task by the caller); the DB check needs both to match, as in tau2.
    """
    criteria = task.evaluation_criteria
    if criteria is None:
        return Reward(1.0, note="no evaluation criteria")
    basis = tuple(str(b) for b in criteria.reward_basis)
    if RewardType.NL_ASSERTION in criteria.reward_basis:
        raise ValueError(f"task {task.id}: NL_ASSERTION rewards are not implemented")
    checks: dict[str, list[bool]] = {}
    if criteria.actions is None and criteria.env_assertions is None:
        db, env = 1.0, 1.0
    else:
        db = float(gold_hashes == (final.db_hash(), final.user_db_hash()))
        checks["env_assertions"] = [assertion_holds(final, a) for a in criteria.env_assertions or []]
        env = float(all(checks["env_assertions"]))
    gold_actions = criteria.actions or []
    checks["actions"] = [any(g.matches(c.name, c.arguments) for c in calls) for g in gold_actions]
    action = float(all(checks["actions"]))
    checks["communicate"] = [communicated(info, agent_texts) for info in criteria.communicate_info or []]
    communicate = float(all(checks["communicate"]))
    components = {"DB": db, "ENV_ASSERTION": env, "ACTION": action, "COMMUNICATE": communicate}
    reward = 1.0
    for name in basis:
        reward *= components[name]
    if termination in PREMATURE:  # tau2 scores 0 without evaluating; the components are kept for inspection
        return Reward(0.0, components, basis, checks, note=f"terminated prematurely: {termination}")
    return Reward(reward, components, basis, checks)
