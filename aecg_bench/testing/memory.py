"""Components for tests and wiring checks, registered like real ones but never in a paper table.

`recorder` is a memory method that remembers every episode it observes and
recalls the latest ones of the same task type at the asked scope. It records
every call it receives, so tests can assert what frameworks asked for
(levels, agents, roles) and that resume replays exactly what the original
run did.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, Params
from aecg_bench.types import Episode, MemoryItem, RecallQuery


class RecorderParams(Params):
    k: int = Field(2, ge=0)


class RecorderMemory(MemoryMethod):
    name = "recorder"
    version = "1"
    Params = RecorderParams

    def __init__(self, params: Any = None, *, services: Any) -> None:
        super().__init__(params, services=services)
        self.items: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.rounds: list[int] = []

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        self.calls.append(
            {"op": "recall", "task": query.task.id, "level": query.level, "agent": query.agent, "role": query.role}
        )
        same = [i for i in self.items if i["task_type"] == query.task.task_type and i["level"] == query.level]
        picked = same[-self.params.k :] if self.params.k else []
        return [MemoryItem(id=i["id"], text=i["text"], level=i["level"], kind="episode") for i in picked]

    def observe(self, episode: Episode) -> None:
        self.calls.append({"op": "observe", "task": episode.task.id, "success": episode.outcome.success})
        levels = sorted({d.level for d in episode.trajectory.decisions}) or ["agent"]
        for level in levels:
            item = {
                "id": f"m{len(self.items)}",
                "task_type": episode.task.task_type,
                "level": level,
                "text": f"task {episode.task.id} ({episode.task.task_type}) ended "
                f"{'in success' if episode.outcome.success else 'in failure'} after {len(episode.trajectory.steps)} steps",
            }
            self.items.append(item)
            self.audit.record("admit", memory_id=item["id"], task=episode.task.id, success=episode.outcome.success)

    def maintain(self, round_index: int) -> None:
        self.rounds.append(round_index)
        self.audit.record("maintain", round=round_index, size=len(self.items))

    def state_dict(self) -> dict[str, Any]:
        return {"items": self.items, "calls": self.calls, "rounds": self.rounds}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.items = [dict(i) for i in state["items"]]
        self.calls = [dict(c) for c in state["calls"]]
        self.rounds = list(state["rounds"])

    def stats(self) -> dict[str, float]:
        return {"items": float(len(self.items))}
