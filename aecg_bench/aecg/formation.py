"""Skill formation (AECG sec. 3.2.3, B.1, appendix D "skill abstraction").

A memory becomes a promotion seed when it is unconsolidated, has been
supported by at least `min_support` successes at its scope (its own, merged
near-duplicates, successful uses), its evidence mean is at least
`min_reliability`, and it has abstraction attempts left. The abstraction
prompt gets the seed as primary evidence and up to `neighbours` nearby
same-scope memories as supplementary context; only the seed's evidence is
inherited (see `beliefs.inherit`). A new skill keeps the seed's level.

Equivalence: when the abstracted skill is at least `equivalence_similarity`
similar to an active skill of the same scope, no new skill is made; the seed
is linked to that skill (consolidated into it, families merged) and no
evidence moves, so evidence that already reached the skill through use is
never counted again.
"""

from __future__ import annotations

from typing import Any

from aecg_bench.aecg import llm_json
from aecg_bench.aecg.objects import Memory, SkillContent
from aecg_bench.aecg.params import BeliefParams, FormationParams


def eligible(mem: Memory, formation: FormationParams, beliefs: BeliefParams) -> bool:
    if mem.consolidated_into is not None or mem.promotion_attempts >= formation.max_attempts:
        return False
    mean = (mem.pos + beliefs.prior_alpha) / (mem.pos + mem.neg + beliefs.prior_alpha + beliefs.prior_beta)
    return mem.support >= formation.min_support and mean >= formation.min_reliability


def _memory_payload(mem: Memory) -> dict[str, Any]:
    return {"id": mem.id, "text": mem.text, "support": mem.support}


def abstraction_payload(seed: Memory, neighbours: list[Memory]) -> dict[str, Any]:
    return {
        "scope": seed.level,
        "seed": _memory_payload(seed),
        "auxiliary": [_memory_payload(m) for m in neighbours],
    }


def parse_skill(text: str) -> tuple[SkillContent | None, str]:
    """The abstracted skill, or None and why not (no applicability or no procedure is no skill)."""
    obj = llm_json.parse_object(text)
    if obj is None:
        return None, "unparsable reply"
    applicability = llm_json.as_str(obj.get("applicability"), 600)
    procedure = llm_json.as_str_list(obj.get("procedure"), 10)
    if not applicability or not procedure:
        return None, "reply lacks applicability or procedure"
    name = llm_json.as_str(obj.get("name"), 80) or applicability[:60]
    return (
        SkillContent(
            name=name,
            applicability=applicability,
            triggers=llm_json.as_str_list(obj.get("triggers"), 6),
            procedure=procedure,
            avoidance=llm_json.as_str_list(obj.get("avoidance"), 6),
            evidence_summary=llm_json.as_str(obj.get("evidence_summary"), 400),
        ),
        "",
    )
