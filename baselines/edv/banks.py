"""EDV's memory: one shared bank, one private bank per pool model, and hierarchical retrieval
(sec. 4.5, Appendix C.3).

Retrieval for a task solved by model m: the shared bank first (cosine >=
`shared_threshold`, paper 0.80); if that gives fewer than k items (paper: 3,
Appendix A.2), m's private bank fills the rest (cosine >= `private_threshold`,
paper 0.85). Shared items always come before private ones.

What is embedded (`index_text`): the paper does not say. "task" (default)
indexes each item under the instruction of the task it was distilled from, as
ReasoningBank does, because the paper's thresholds are high (0.80/0.85) and
task-to-task similarity is what reaches them; "item" indexes the item's own
text (the official toy code matches queries against item text); "task+item"
both. The thresholds were set for Qwen3-Embedding-4B (2,560 dims); MiniLM and
the lexical backend have other cosine scales, so both thresholds are
parameters (see docs/memory/edv.md).

Items distilled from the task being solved are never returned (same guard as
ReasoningBank), so a second construction epoch, or the online variant, cannot
hand a task its own lesson.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aecg_bench.llm.embeddings import Embedder
from baselines.index import VectorIndex
from baselines.reasoningbank import ReasoningItem

IndexText = Literal["task", "item", "task+item"]


@dataclass(frozen=True)
class Hit:
    item: dict[str, Any]
    score: float
    bank: str  # "shared" | "private:<model>"


def item_text(item: dict[str, Any]) -> str:
    return ReasoningItem(item["title"], item["description"], item["content"]).render()


class Banks:
    def __init__(self, embedder: Embedder, index_text: IndexText = "task") -> None:
        self.embedder = embedder
        self.index_text = index_text
        self.items: dict[str, dict[str, Any]] = {}  # id -> item (insertion order = admission order)
        self._index: VectorIndex | None = None

    @property
    def index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(self.embedder)
            self._index.add_many(list(self.items), [self._key_text(i) for i in self.items.values()])
        return self._index

    def _key_text(self, item: dict[str, Any]) -> str:
        if self.index_text == "task":
            return item["query"]
        if self.index_text == "item":
            return item_text(item)
        return f"{item['query']}\n{item_text(item)}"

    def add(self, item: dict[str, Any]) -> None:
        """Store an admitted item (bank "shared" or "private" with its owners)."""
        if item["id"] in self.items:
            raise ValueError(f"duplicate EDV memory id {item['id']!r}")
        index = self.index
        self.items[item["id"]] = item
        index.add(item["id"], self._key_text(item))

    def retrieve(
        self,
        query: str,
        *,
        task_id: str,
        solver: str | None,
        k: int,
        shared_threshold: float,
        private_threshold: float,
        exclude_same_task: bool = True,
    ) -> list[Hit]:
        """Shared hits (best first), then the solver's private hits if fewer than k."""
        if k <= 0 or not self.items:
            return []
        vec = self.index.embed(query)

        def eligible(iid: str) -> bool:
            return not (exclude_same_task and self.items[iid]["task_id"] == task_id)

        found = self.index.search(
            vec, k, allow=lambda i: self.items[i]["bank"] == "shared" and eligible(i), min_score=shared_threshold
        )
        hits = [Hit(self.items[i], s, "shared") for i, s in found]
        if solver is not None and len(hits) < k:
            found = self.index.search(
                vec,
                k - len(hits),
                allow=lambda i: (
                    self.items[i]["bank"] == "private" and solver in self.items[i]["owners"] and eligible(i)
                ),
                min_score=private_threshold,
            )
            hits += [Hit(self.items[i], s, f"private:{solver}") for i, s in found]
        return hits

    def counts(self) -> dict[str, int]:
        shared = sum(i["bank"] == "shared" for i in self.items.values())
        return {"shared": shared, "private": len(self.items) - shared}

    def state_dict(self) -> list[dict[str, Any]]:
        return [{**i, "owners": list(i["owners"])} for i in self.items.values()]

    def load_state_dict(self, items: list[dict[str, Any]]) -> None:
        self.items = {i["id"]: {**i, "owners": list(i["owners"])} for i in items}
        self._index = None
