"""Where the outcome label a memory method learns from comes from.

- `environment`: the benchmark's own verdict (success and value);
- `llm_judge`: an LLM judge (role `judge`) reads the task and trajectory and
  decides, as ReasoningBank does when no ground truth is available; its prompt
  is strict because a false success pollutes memory more than a false failure;
- `none`: no label (methods that learn without outcomes).

The label is not the only channel for the benchmark's verdict: environments put
rewards and details in their observations (ScienceWorld's per-step reward is
subgoal progress computed from the gold annotation, FEVER's `Finish` reward
and MBPP+'s answer reward are the verdict itself, MBPP+'s `info` holds the
hidden tests' results). `learning_view` is the episode as memory methods and
frameworks may learn from it: unchanged under `environment` (the verdict is
allowed, and so is what the environment said along the way), with every
observation's reward and `info` withheld under the other sources. Stored
trajectories keep them, for scoring and analysis.
"""

from __future__ import annotations

import re
from dataclasses import replace

from aecg_bench.errors import unknown_choice
from aecg_bench.llm.client import LLMClient
from aecg_bench.types import Episode, LabelSource, Outcome, Score, Task, Trajectory

LABEL_SOURCES: tuple[LabelSource, ...] = ("environment", "llm_judge", "none")

JUDGE_SYSTEM = (
    "You are a strict evaluator of an agent's attempt at a task. Decide whether the agent fully "
    "accomplished the task, judging only from the trajectory. A false success is more harmful than a "
    "false failure: if the trajectory does not clearly show the task was completed, answer FAILURE. "
    "Reply with one line 'Thoughts: ...' and then one line 'Status: SUCCESS' or 'Status: FAILURE'."
)
_STATUS = re.compile(r"status\s*:\s*(success|failure)", re.I)
# The reply format JUDGE_SYSTEM asks for, as GBNF: a decoding aid that grammar-capable models (the embedded
# one) follow and other providers drop. Without it SmolLM2-135M never wrote a 'Status:' line (every verdict
# FAILURE by default; docs/benchmarks/procedures.md).
JUDGE_GRAMMAR = 'root ::= "Thoughts: " [^\\n]{0,200} "\\nStatus: " ("SUCCESS" | "FAILURE")'


def render_trajectory(traj: Trajectory, max_chars: int = 6000) -> str:
    lines = [f"Initial observation: {traj.initial_observation}"]
    for s in traj.steps:
        act = s.action.text or ", ".join(f"{c.name}({c.arguments})" for c in s.action.tool_calls)
        lines.append(f"Action {s.index}: {act}\nObservation: {s.observation.text}")
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars // 3] + "\n...\n" + text[-2 * max_chars // 3 :]


def label(source: str, task: Task, traj: Trajectory, score: Score, llm: LLMClient | None) -> Outcome:
    if source == "environment":
        return Outcome(success=score.success, value=score.value, source="environment")
    if source == "none":
        return Outcome(success=None, value=None, source="none")
    if source == "llm_judge":
        assert llm is not None
        reply = llm.complete(
            [
                {"role": "system", "content": JUDGE_SYSTEM},
                {"role": "user", "content": f"Task: {task.instruction}\n\nTrajectory:\n{render_trajectory(traj)}"},
            ],
            role="judge",
            temperature=0.0,
            max_tokens=256,
            grammar=JUDGE_GRAMMAR,
        ).text
        found = _STATUS.findall(reply)
        verdict = bool(found) and found[-1].lower() == "success"
        return Outcome(success=verdict, value=float(verdict), source="llm_judge", rationale=reply[-500:])
    raise unknown_choice("label source", source, LABEL_SOURCES)


def learning_view(episode: Episode) -> Episode:
    """The episode without the environment's rewards and `info` unless its label came from the environment.

    Keyed on the episode's own label source (not the run's), so replay after
    resume, which reads stored episodes, hands out exactly what the live run did.
    """
    if episode.outcome.source == "environment":
        return episode
    traj = episode.trajectory
    steps = [replace(s, observation=replace(s.observation, reward=0.0, info={})) for s in traj.steps]
    return replace(episode, trajectory=replace(traj, steps=steps))
