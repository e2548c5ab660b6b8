"""Reading an episode's decision graph: who recalled what, where, seeing what, doing what.

Everything AECG learns is derived from the `Episode` alone (never from what
`recall` saw at run time), so replaying stored episodes after a resume
rebuilds exactly the same memory.

The decision context of a node is what recall matched for it (the node's
`recall_context`: e.g. the task text for AgentNet's routers, the current
observation for executors), so a fixture stores the context its skill was
recalled against. Older trajectories without it fall back to the observation
of the step just before the node's step (or the initial observation). A
fixture also keeps that observation itself (what the decision saw), which is
what the replay gate re-executes the decision on: a router's skill is recalled
against the task text, but its decision was made on the current observation.
"""

from __future__ import annotations

from dataclasses import dataclass

from aecg_bench.aecg.objects import Fixture
from aecg_bench.types import DecisionNode, Episode, Level, Trajectory

OUTPUT_CHARS = 240
INSTRUCTION_CHARS = 500  # task text kept in fixtures and matched by recall


def clip(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def tail(text: str, n: int) -> str:
    """The last n characters: what recall and fixtures both match on (the latest part of an observation)."""
    return text[-n:] if n > 0 else ""


def decision_context(traj: Trajectory, node: DecisionNode) -> str:
    if node.recall_context:  # what recall matched: predicates are checked against the same text
        return node.recall_context
    return observation_before(traj, node)


def observation_before(traj: Trajectory, node: DecisionNode) -> str:
    """The environment's latest observation when the decision was made (what replay re-executes on)."""
    if node.step is not None and 0 < node.step <= len(traj.steps):
        return traj.steps[node.step - 1].observation.text
    return traj.initial_observation


def behaviour(node: DecisionNode) -> str:
    if node.action is not None and node.action.text:
        return node.action.text
    if node.action is not None and node.action.tool_calls:
        return "; ".join(c.name for c in node.action.tool_calls)
    return node.output


def fixture_for(episode: Episode, node: DecisionNode, context_chars: int) -> Fixture:
    task, traj = episode.task, episode.trajectory
    return Fixture(
        task_id=task.id,
        task_type=task.task_type,
        instruction=clip(task.instruction, INSTRUCTION_CHARS),
        level=node.level,
        agent=node.agent,
        role=node.role,
        context=tail(decision_context(traj, node), context_chars),
        behaviour=clip(behaviour(node), OUTPUT_CHARS),
        success=bool(episode.outcome.success),
        value=episode.outcome.value,
        observation=tail(observation_before(traj, node), context_chars),
    )


@dataclass(frozen=True)
class Use:
    """Where one recalled object was used in an episode."""

    object_id: str
    nodes: tuple[DecisionNode, ...]


def uses(traj: Trajectory) -> list[Use]:
    """Recalled objects in first-use order, with every decision that recalled them."""
    by_id: dict[str, list[DecisionNode]] = {}
    for node in traj.decisions:
        for mid in dict.fromkeys(node.recalled_memory_ids):
            by_id.setdefault(mid, []).append(node)
    return [Use(mid, tuple(nodes)) for mid, nodes in by_id.items()]


def nodes_by_level(traj: Trajectory) -> dict[Level, list[DecisionNode]]:
    out: dict[Level, list[DecisionNode]] = {}
    for node in traj.decisions:
        out.setdefault(node.level, []).append(node)
    return out


def trace_summary(traj: Trajectory, limit: int) -> list[dict[str, object]]:
    """Decisions as a judge sees them: scope, inputs recalled, output, what the environment said."""
    obs_after = {s.decision_id: s.observation.text for s in traj.steps if s.decision_id}
    rows: list[dict[str, object]] = []
    decisions = traj.decisions[-limit:]  # all of them when there are no more than `limit`
    for node in decisions:
        rows.append(
            {
                "id": node.id,
                "level": node.level,
                "agent": node.agent,
                "role": node.role,
                "parents": list(node.parents),
                "recalled": list(node.recalled_memory_ids),
                "output": clip(behaviour(node), OUTPUT_CHARS),
                "observation_after": clip(obs_after.get(node.id, ""), 200),
            }
        )
    return rows


def memory_text(episode: Episode, level: Level, nodes: list[DecisionNode]) -> str:
    """A success at one level, phrased for reuse at that level (no LLM)."""
    task = episode.task
    roles = sorted({n.role for n in nodes})
    actions = [clip(behaviour(n), 80) for n in nodes[:12]]
    more = f" (+{len(nodes) - 12} more)" if len(nodes) > 12 else ""
    return (
        f"Task type: {task.task_type or 'general'}\n"
        f"Task: {clip(task.instruction, 300)}\n"
        f"Level: {level}; roles: {', '.join(roles)}\n"
        f"What worked: {' ; '.join(actions)}{more}"
    )
