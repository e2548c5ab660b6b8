"""`recency_window`: remember the latest successful episodes; recall the newest of the same task type.

A small, real memory method to start from: no model calls, no embeddings. It stores the action
sequence of each successful episode (success as the protocol's label source reports it), keeps the
`window` newest, and recalls the `top_k` newest of the asked task type (any type when none
matches). Replace `observe` and `recall` with your method; keep every piece of state in
`state_dict` (the runner snapshots it and resumes from it) and every model call on
`self.services.llm` (accounted, cached, rate-limited).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params
from aecg_bench.types import Action, Episode, MemoryItem, RecallQuery


class RecencyWindowMemoryParams(Params):
    window: int = Field(20, ge=1, description="successful episodes kept, newest first")
    top_k: int = Field(2, ge=0, description="items recalled per query")
    max_steps_shown: int = Field(12, ge=1, description="actions shown per recalled episode")


class RecencyWindowMemory(MemoryMethod):
    name = "recency_window"
    version = "1"
    Params = RecencyWindowMemoryParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.items: list[dict[str, Any]] = []
        self.next_id = 0

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        if self.params.top_k == 0:
            return []
        same = [i for i in self.items if i["task_type"] == query.task.task_type]
        picked = (same or self.items)[-self.params.top_k :][::-1]
        for item in picked:
            self.audit.record("retrieve", memory_id=item["id"], task=query.task.id, level=query.level)
        return [MemoryItem(id=i["id"], text=i["text"], level=query.level, kind="trajectory") for i in picked]

    def observe(self, episode: Episode) -> None:
        if episode.outcome.success is not True:  # unlabelled (None) or failed: nothing to copy
            return
        actions = [_action_text(s.action) for s in episode.trajectory.steps][: self.params.max_steps_shown]
        text = f"A past success on a similar task ({episode.task.instruction[:200]}):\n" + "\n".join(
            f"{n}. {a}" for n, a in enumerate(actions, 1)
        )
        item = {"id": f"r{self.next_id}", "task_type": episode.task.task_type, "text": text}
        self.next_id += 1
        self.items = [*self.items, item][-self.params.window :]
        self.audit.record("admit", memory_id=item["id"], task=episode.task.id)

    def state_dict(self) -> dict[str, Any]:
        return {"items": [dict(i) for i in self.items], "next_id": self.next_id}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.items = [dict(i) for i in state["items"]]
        self.next_id = int(state["next_id"])

    def stats(self) -> dict[str, float]:
        return {"items": float(len(self.items))}


def _action_text(action: Action) -> str:
    if action.kind == "tool":
        return "; ".join(f"{c.name}({c.arguments})" for c in action.tool_calls)
    return action.text
