"""What the baselines read out of a trajectory: step text, agents' utterances, the final solution.

Every baseline turns the same `Trajectory` into text the same way, so a
difference between methods is never a difference in how the run was shown to
the memory-side LLM. Renderings are bounded (head and tail kept) so memory
prompts fit small context windows.
"""

from __future__ import annotations

from typing import Any

from aecg_bench.types import Action, DecisionNode, Trajectory


def clip(text: str, max_chars: int) -> str:
    """At most max_chars characters, keeping the head and the (more informative) tail; a budget too small
    for the marker and a tail (under 8) keeps the tail alone."""
    text = text.strip()
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = max_chars // 3
    tail = max_chars - head - 5
    if tail <= 0:
        return text[-max_chars:].lstrip()
    return text[:head].rstrip() + "\n...\n" + text[-tail:].lstrip()


def one_line(text: str, max_chars: int = 0) -> str:
    """Whitespace collapsed; at most max_chars characters (0: no limit), a cut marked "..." when it fits."""
    line = " ".join(text.split())
    if max_chars <= 0 or len(line) <= max_chars:
        return line
    return line[: max_chars - 3].rstrip() + "..." if max_chars >= 3 else line[:max_chars]


def action_text(action: Action | None) -> str:
    if action is None:
        return ""
    if action.kind == "tool":
        return "; ".join(f"{c.name}({_args(c.arguments)})" for c in action.tool_calls)
    return action.text


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(arguments.items()))


def render_trajectory(
    traj: Trajectory,
    *,
    max_chars: int = 6000,
    with_agents: bool = True,
    utterance_chars: int = 300,
    skip_negative_reward: bool = False,
) -> str:
    """Numbered actions and observations; with_agents adds what the other agents said: decisions
    tied to no step (plans, routing) after the initial observation, and under each step the
    decisions at that step that did not act themselves."""
    by_step: dict[int | None, list[DecisionNode]] = {}
    if with_agents:
        for d in traj.decisions:
            by_step.setdefault(d.step, []).append(d)
    lines = [f"Initial observation: {traj.initial_observation.strip()}"] if traj.initial_observation else []
    lines += [
        f"  [{d.agent}/{d.role}] {one_line(d.output, utterance_chars)}"
        for d in by_step.get(None, ())
        if d.output.strip()
    ]
    for s in traj.steps:
        if skip_negative_reward and s.observation.reward < 0:
            continue
        for d in by_step.get(s.index, ()):
            if d.id != s.decision_id and d.output.strip():
                lines.append(f"  [{d.agent}/{d.role}] {one_line(d.output, utterance_chars)}")
        lines.append(f"Act {s.index + 1}: {action_text(s.action)}")
        lines.append(f"Obs {s.index + 1}: {s.observation.text.strip()}")
    if traj.status != "ok" and traj.error:
        lines.append(f"(ended: {traj.status}: {one_line(traj.error, 200)})")
    return clip("\n".join(lines), max_chars)


def final_solution(traj: Trajectory, max_chars: int = 1500) -> str:
    """What the team finally produced: the last answer, else the executed actions in order."""
    actions = [s.action for s in traj.steps]
    answers = [a.text for a in actions if a.kind == "answer" and a.text.strip()]
    if answers:
        return clip(answers[-1], max_chars)
    return clip("\n".join(f"{i + 1}. {action_text(a)}" for i, a in enumerate(actions)), max_chars)


def interaction_graph(traj: Trajectory, output_chars: int = 300) -> dict[str, Any]:
    """The decision graph as plain data: utterance nodes and who-consumed-whom edges."""
    nodes = [
        {
            "id": d.id,
            "agent": d.agent,
            "role": d.role,
            "level": d.level,
            "step": d.step,
            "output": one_line(d.output, output_chars),
        }
        for d in traj.decisions
    ]
    known = {d.id for d in traj.decisions}
    edges = [[p, d.id] for d in traj.decisions for p in d.parents if p in known]
    return {"nodes": nodes, "edges": edges}


def has_agent_output(traj: Trajectory) -> bool:
    return any(d.output.strip() for d in traj.decisions) or any(action_text(s.action).strip() for s in traj.steps)


def models_used(traj: Trajectory) -> list[str]:
    return sorted({d.model for d in traj.decisions if d.model})
