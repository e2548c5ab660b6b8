"""`macnet_m`: MacNet's memory made cross-task, the "MacNet-M" baseline of AECG's Table 1.

Source: Qian et al., "Scaling Large-Language-Model-based Multi-Agent Collaboration"
(arXiv 2406.07155, ICLR 2025; code: github.com/OpenBMB/ChatDev, branch macnet). No
public MacNet-M class exists; this module follows the reading below.

Reading of the paper. MacNet places agents on a directed acyclic graph:
nodes are actors that produce an artifact (a solution), edges are
instructor-assistant interactions in which one agent critiques and the other
refines. Agents run in topological order. To keep contexts from exploding,
MacNet's memory control discards the dialogue of each interaction once it
ends and propagates only the artifact, the refined solution, together with the
critique that shaped it, to the successors; a node with several predecessors
aggregates their solutions. Memory in MacNet is therefore "solutions and
critiques passed along the graph within a task". That part belongs to the
MacNet framework (frameworks/macnet.py), which shows upstream artifacts to
each node. MacNet-M adds cross-task persistence of the same kind of object:

What is stored: after each task, the team's final solution (the last answer,
else the executed actions in order) and the last critique in the trajectory
(the output of the latest decision whose role names a critic, reviewer,
instructor, judge or verifier), with the task text and the outcome label. No
LLM is involved: MacNet's memory is the artifact itself, not a summary of it.

When and how it is recalled: at every recall the task text plus the current
context (the observation that opens the task under per-task retrieval) is
embedded and the `top_k` stored solutions of the most similar earlier tasks
are returned, phrased as upstream artifacts ("a solution to a similar earlier
task ... critique received"), the way a MacNet node receives its
predecessors' solutions. The same task never recalls its own solution.

How it learns from outcomes: only through the label; by default only
solutions of successful tasks are recalled (`recall_failures: false`), since
MacNet propagates the artifacts that survive refinement; with
`recall_failures: true` failed solutions are recalled too, marked as failed.

Hyperparameters: top_k 2 (a MacNet node typically aggregates a small number of
predecessors; chosen here, there is no published value), max_solution_chars
1500 and critique_chars 400 (bounds on prompt growth, MacNet's own motivation).

Coordination with the MacNet framework: critiques are found by decision
role names, so the framework should give its critic/instructor decisions a
role containing one of: critic, review, instruct, judge, verif.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params
from aecg_bench.types import Episode, MemoryItem, RecallQuery, Trajectory
from baselines.index import VectorIndex, embedder_of
from baselines.trajectory_text import final_solution, one_line

CRITIC_ROLES = re.compile(r"critic|review|instruct|judge|verif", re.I)


class MacNetMemoryParams(Params):
    top_k: int = Field(2, ge=0, description="solutions of similar earlier tasks recalled per query")
    recall_failures: bool = Field(False, description="also recall solutions of failed tasks (marked as failed)")
    context_chars: int = Field(500, ge=0, description="characters of the opening observation / context embedded")
    max_solution_chars: int = Field(1500, ge=50)
    critique_chars: int = Field(400, ge=0)


class MacNetMemory(MemoryMethod):
    name = "macnet_m"
    version = "1"
    pure_recall = True  # recall only reads the solutions (runner/concurrent.py)
    Params = MacNetMemoryParams
    params: MacNetMemoryParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.solutions: dict[str, dict[str, Any]] = {}
        self.next_id = 0
        self._index: VectorIndex | None = None

    @property
    def index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(embedder_of(self.services))
            self._index.add_many(list(self.solutions), [s["key"] for s in self.solutions.values()])
        return self._index

    def _key(self, instruction: str, context: str) -> str:
        return f"{instruction.strip()}\n{context.strip()[: self.params.context_chars]}".strip()

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        task_id = query.task.id

        def allowed(sid: str) -> bool:
            s = self.solutions[sid]
            return s["task_id"] != task_id and (s["success"] is True or self.params.recall_failures)

        hits = self.index.search(self._key(query.task.instruction, query.context), self.params.top_k, allow=allowed)
        return [self._item(self.solutions[sid], score, query) for sid, score in hits]

    def _item(self, s: dict[str, Any], score: float, query: RecallQuery) -> MemoryItem:
        status = "" if s["success"] else " (this solution FAILED)"
        text = f"Solution to a similar earlier task ({one_line(s['instruction'], 200)}){status}:\n{s['solution']}"
        if s["critique"]:
            text += f"\nCritique it received: {s['critique']}"
        return MemoryItem(
            id=s["id"],
            text=text,
            level=query.level,
            kind="solution",
            score=score,
            metadata={"source_task": s["task_id"], "success": s["success"]},
        )

    def observe(self, episode: Episode) -> None:
        traj = episode.trajectory
        solution = final_solution(traj, self.params.max_solution_chars)
        if not solution.strip():
            self.audit.record("skip", purpose="store", reason="no_solution", task=episode.task.id)
            return
        index = self.index
        sid = f"mn-{self.next_id}"
        self.next_id += 1
        s = {
            "id": sid,
            "task_id": episode.task.id,
            "instruction": episode.task.instruction,
            "key": self._key(episode.task.instruction, traj.initial_observation),
            "solution": solution,
            "critique": last_critique(traj, self.params.critique_chars),
            "success": episode.outcome.success,
        }
        self.solutions[sid] = s
        index.add(sid, s["key"])
        self.audit.record("admit", memory_id=sid, task=episode.task.id, success=s["success"])

    def state_dict(self) -> dict[str, Any]:
        return {"next_id": self.next_id, "solutions": [dict(s) for s in self.solutions.values()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.next_id = int(state["next_id"])
        self.solutions = {s["id"]: dict(s) for s in state["solutions"]}
        self._index = None

    def stats(self) -> dict[str, float]:
        return {"solutions": float(len(self.solutions))}


def last_critique(traj: Trajectory, max_chars: int) -> str:
    """The output of the latest critic-like decision (see CRITIC_ROLES); empty when there is none."""
    if max_chars <= 0:
        return ""
    for d in reversed(traj.decisions):
        if CRITIC_ROLES.search(d.role) and d.output.strip():
            return one_line(d.output, max_chars)
    return ""
