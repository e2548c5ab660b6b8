"""Recall over AECG's objects: scope filter, embedding similarity, applicability predicate.

One vector index per (scope key, kind): unconsolidated memories and active
skill versions. Under hard scope the key is the object's level, so a query
only ever scores objects of its own level; under the flat-scope ablation
every object shares one key. Derived state only (rebuilt after loading).
"""

from __future__ import annotations

import numpy as np

from aecg_bench.aecg.index import VectorIndex
from aecg_bench.aecg.objects import Memory, Skill
from aecg_bench.aecg.predicate import normalised
from aecg_bench.llm.embeddings import Embedder

FLAT = "*"


class RecallIndex:
    def __init__(self, embedder: Embedder, flat: bool) -> None:
        self.embedder = embedder
        self.flat = flat
        self._memories: dict[str, VectorIndex] = {}
        self._skills: dict[str, VectorIndex] = {}

    def key(self, level: str) -> str:
        return FLAT if self.flat else level

    def _get(self, table: dict[str, VectorIndex], level: str) -> VectorIndex:
        key = self.key(level)
        if key not in table:
            table[key] = VectorIndex(self.embedder.dim)
        return table[key]

    def memories(self, level: str) -> VectorIndex:
        return self._get(self._memories, level)

    def skills(self, level: str) -> VectorIndex:
        return self._get(self._skills, level)

    def embed(self, text: str) -> np.ndarray:
        return self.embedder.embed_one(text)

    def add_memory(self, mem: Memory, vec: np.ndarray | None = None) -> None:
        self.memories(mem.level).add(mem.id, self.embed(mem.text) if vec is None else vec)

    def remove_memory(self, mem: Memory) -> None:
        self.memories(mem.level).remove(mem.id)

    def add_skill(self, skill: Skill, vec: np.ndarray | None = None) -> None:
        self.skills(skill.level).add(skill.id, self.embed(skill.content.match_text()) if vec is None else vec)

    def remove_skill(self, skill: Skill) -> None:
        self.skills(skill.level).remove(skill.id)

    def rebuild(self, memories: list[Memory], skills: list[Skill]) -> None:
        self._memories.clear()
        self._skills.clear()
        mem_vecs = self.embedder.embed([m.text for m in memories])
        for m, v in zip(memories, mem_vecs, strict=True):
            self.add_memory(m, v)
        skill_vecs = self.embedder.embed([s.content.match_text() for s in skills])
        for s, v in zip(skills, skill_vecs, strict=True):
            self.add_skill(s, v)

    def search_skills(
        self, level: str, vec: np.ndarray, context_text: str, skills: dict[str, Skill], k: int, min_score: float
    ) -> list[tuple[Skill, float]]:
        """Top-k skills of the scope whose predicate admits the decision context (none for k <= 0)."""
        index = self.skills(level)
        norm = normalised(context_text)
        limit: int | None = 4 * k
        while True:
            ranked = index.ranked(vec, min_score, limit)
            out = [(skills[sid], score) for sid, score in ranked if skills[sid].content.predicate.admits(norm)]
            if len(out) >= k or limit is None or len(ranked) < limit:
                return out[:k]
            limit = None  # predicates excluded too many: rank the whole scope once

    def search_memories(self, level: str, vec: np.ndarray, k: int, min_score: float) -> list[tuple[str, float]]:
        return self.memories(level).ranked(vec, min_score, k)
