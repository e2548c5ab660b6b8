"""AECG's persistent state: memories, skill versions, BadCases, provenance families, queues.

Everything here round-trips exactly through `to_dict`/`from_dict` (JSON
types only). Derived state (embeddings, the recall index) lives in
`method` and is rebuilt after loading.

Provenance families are a union-find over family ids without path
compression, so the stored parent map is exactly what unions produced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aecg_bench.aecg.objects import (
    ACTIVE,
    BadCase,
    Memory,
    Skill,
    badcase_from,
    memory_from,
    skill_from,
    to_dict,
)

STATE_VERSION = 1


@dataclass
class Counters:
    memories: int = 0
    skills: int = 0
    badcases: int = 0
    decisions_with_recall: int = 0
    recalled_uses: int = 0
    cross_scope_uses: int = 0
    admitted_failures: int = 0
    unresolved_failures: int = 0
    promotions: int = 0
    links: int = 0
    reviews: int = 0
    activations: int = 0
    isolations: int = 0
    monitored: int = 0


@dataclass
class Store:
    memories: dict[str, Memory] = field(default_factory=dict)
    skills: dict[str, Skill] = field(default_factory=dict)
    badcases: dict[str, BadCase] = field(default_factory=dict)
    family_parent: dict[str, str] = field(default_factory=dict)
    pending_promotions: list[str] = field(default_factory=list)
    counters: Counters = field(default_factory=Counters)

    # -- ids -------------------------------------------------------------------

    def new_memory_id(self) -> str:
        self.counters.memories += 1
        return f"m{self.counters.memories}"

    def new_lineage(self) -> str:
        self.counters.skills += 1
        return f"s{self.counters.skills}"

    def new_badcase_id(self) -> str:
        self.counters.badcases += 1
        return f"b{self.counters.badcases}"

    # -- families --------------------------------------------------------------

    def family(self, fam: str) -> str:
        seen = 0
        while fam in self.family_parent and seen <= len(self.family_parent):
            fam = self.family_parent[fam]
            seen += 1
        return fam

    def union(self, a: str, b: str) -> str:
        """Merge two families; the older root (smaller creation order) stays the root."""
        ra, rb = self.family(a), self.family(b)
        if ra == rb:
            return ra
        keep, drop = sorted((ra, rb), key=_family_order)
        self.family_parent[drop] = keep
        return keep

    def family_of(self, oid: str) -> str:
        obj = self.memories.get(oid) or self.skills.get(oid)
        if obj is None:
            raise KeyError(oid)
        return self.family(obj.family)

    # -- queries -----------------------------------------------------------------

    def get(self, oid: str) -> Memory | Skill | None:
        return self.memories.get(oid) or self.skills.get(oid)

    def active_skills(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.status == ACTIVE]

    # -- JSON --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "memories": [to_dict(m) for m in self.memories.values()],
            "skills": [to_dict(s) for s in self.skills.values()],
            "badcases": [to_dict(b) for b in self.badcases.values()],
            "family_parent": dict(self.family_parent),
            "pending_promotions": list(self.pending_promotions),
            "counters": to_dict(self.counters),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Store:
        if d.get("version") != STATE_VERSION:
            raise ValueError(f"AECG state version {d.get('version')!r} is not {STATE_VERSION}")
        return cls(
            memories={m["id"]: memory_from(m) for m in d["memories"]},
            skills={s["id"]: skill_from(s) for s in d["skills"]},
            badcases={b["id"]: badcase_from(b) for b in d["badcases"]},
            family_parent=dict(d["family_parent"]),
            pending_promotions=list(d["pending_promotions"]),
            counters=Counters(**d["counters"]),
        )


def _family_order(fam: str) -> tuple[str, int]:
    """Family ids are object ids (m12, s3): order by kind letter, then number."""
    head, digits = fam[:1], fam[1:]
    return head, int(digits) if digits.isdigit() else 0
