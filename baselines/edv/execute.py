"""Execute (EDV sec. 4.2): the execution group runs the task, several candidates each.

Each executor runs the task `per_executor` times on fresh environments, at
its own Execute temperature; the paper samples M = 4 candidates per task from
N = 2 executors (Appendix C.1; B.1: "four heterogeneous candidates"), so the
default is 2 per executor.

Rollouts run one after another, in assignment order (executor 1's candidates,
then executor 2's). The paper runs executors in parallel for throughput, but
here the runner records rollouts in the order they finish and replays them in
that order on resume, and EDV's recall must know which executor is acting;
a fixed sequential order keeps both exact. Throughput comes from running
several runs at once (Hydra launchers) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aecg_bench.types import Episode
from baselines.edv.pool import Assignment, Pool
from baselines.edv.prompts import Candidate

# (model label, temperature, sample_index) -> the rollout's episode
RunOnce = Callable[[str, float, int], Episode]


@dataclass(frozen=True)
class Executed:
    candidate: Candidate
    model: str
    episode: Episode
    temperature: float
    sample_index: int

    def to_audit(self) -> dict[str, object]:
        traj = self.episode.trajectory
        return {
            "candidate": self.candidate.number,
            "model": self.model,
            "temperature": self.temperature,
            "sample_index": self.sample_index,
            "outcome": self.candidate.outcome,
            "status": str(traj.status),
            "steps": len(traj.steps),
        }


def outcome_text(episode: Episode) -> str:
    success = episode.outcome.success
    return "unknown" if success is None else ("success" if success else "failure")


def execute(assignment: Assignment, pool: Pool, per_executor: int, run_once: RunOnce) -> list[Executed]:
    """All candidates of one task, in assignment order; sample indexes start at 1 (0 is the
    inference rollout of the online variant)."""
    out: list[Executed] = []
    for e, label in enumerate(assignment.executors):
        temperature = pool.temperature(label, "execute")
        for _ in range(per_executor):
            index = len(out) + 1
            episode = run_once(label, temperature, index)
            cand = Candidate(index, f"executor {e + 1}", episode.trajectory, outcome_text(episode))
            out.append(Executed(cand, label, episode, temperature, index))
    return out
