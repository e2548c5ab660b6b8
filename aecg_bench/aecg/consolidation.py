"""Promotion of supported memories into skills, in two phases (draft with the LLM, then commit).

`draft` makes the abstraction calls for the queued seeds without touching
state; `commit` applies the drafts (new skill, equivalence link or a failed
attempt; a seed that evidence made ineligible in between is dropped) and
`queue` adds newly eligible seeds. Splitting them is what lets
`observe` and `maintain` make every LLM call before any mutation, so an
infra error leaves the memory exactly as it was. The price is a one-update
delay: a seed queued by one update is promoted by the next one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aecg_bench.aecg import beliefs as B
from aecg_bench.aecg import prompts
from aecg_bench.aecg.formation import abstraction_payload, eligible, parse_skill
from aecg_bench.aecg.objects import ACTIVE, Memory, Skill, SkillContent, to_dict

if TYPE_CHECKING:
    from aecg_bench.aecg.method import AECGMemory


@dataclass(frozen=True)
class Draft:
    seed_id: str
    neighbours: tuple[str, ...]
    content: SkillContent | None
    reason: str  # why there is no content
    reply: str  # excerpt of the model reply, for the audit
    called: bool  # an abstraction call was made (a failed one uses up an attempt)


def neighbours(mem: AECGMemory, seed: Memory) -> list[Memory]:
    f = mem.p.formation
    if f.neighbours <= 0:
        return []
    index = mem.index.memories(seed.level)
    vec = index.vector(seed.id) if seed.id in index else mem.index.embed(seed.text)
    hits = index.ranked(vec, f.neighbour_min_similarity, f.neighbours + 1)
    return [mem.store.memories[i] for i, _ in hits if i != seed.id][: f.neighbours]


def draft(mem: AECGMemory) -> list[Draft]:
    out: list[Draft] = []
    p = mem.p
    for seed_id in mem.store.pending_promotions[: p.formation.max_promotions_per_update]:
        seed = mem.store.memories.get(seed_id)
        if seed is None or not eligible(seed, p.formation, p.beliefs):
            out.append(Draft(seed_id, (), None, "seed is no longer eligible", "", False))
            continue
        near = neighbours(mem, seed)
        grammar = prompts.skill_grammar(p.formation.grammar_max_chars, p.formation.grammar_max_steps)
        reply = mem.llm_call(prompts.SKILL_ABSTRACTION, abstraction_payload(seed, near), grammar=grammar)
        content, why = parse_skill(reply)
        out.append(Draft(seed_id, tuple(n.id for n in near), content, why, reply[:300], True))
    return out


def commit(mem: AECGMemory, drafts: list[Draft]) -> set[str]:
    """Apply drafts; returns seeds whose attempt failed (they may be queued again)."""
    retry: set[str] = set()
    for d in drafts:
        mem.store.pending_promotions.remove(d.seed_id)
        seed = mem.store.memories.get(d.seed_id)
        if seed is None:
            continue
        if d.content is not None and not eligible(seed, mem.p.formation, mem.p.beliefs):
            mem.audit.record(
                "promotion_dropped",
                memory=seed.id,
                level=seed.level,
                pos=seed.pos,
                neg=seed.neg,
                reason="evidence admitted since the draft made the seed ineligible",
            )
            continue
        if d.content is None:
            if d.called:
                seed.promotion_attempts += 1
                retry.add(seed.id)
            mem.audit.record("promotion_failed", memory=seed.id, level=seed.level, reason=d.reason, reply=d.reply)
            continue
        vec = mem.index.embed(d.content.match_text())
        same = mem.index.skills(seed.level).ranked(vec, mem.p.formation.equivalence_similarity, 1)
        if same:
            _link(mem, seed, mem.store.skills[same[0][0]], same[0][1], d)
        else:
            _promote(mem, seed, d, vec)
    return retry


def _link(mem: AECGMemory, seed: Memory, skill: Skill, similarity: float, d: Draft) -> None:
    seed.consolidated_into = skill.id
    root = mem.store.union(skill.family, seed.family)
    mem.index.remove_memory(seed)
    mem.store.counters.links += 1
    mem.audit.record(
        "link_equivalent",
        memory=seed.id,
        skill=skill.id,
        lineage=skill.lineage,
        similarity=round(similarity, 4),
        family=root,
        evidence_moved=False,
        note="equivalent skill already active: seed linked, its evidence is not transferred again",
    )


def _promote(mem: AECGMemory, seed: Memory, d: Draft, vec: object) -> None:
    p = mem.p
    lineage = mem.store.new_lineage()
    near = [mem.store.memories[i] for i in d.neighbours if i in mem.store.memories]
    assert d.content is not None
    skill = Skill(
        id=f"{lineage}.v1",
        lineage=lineage,
        version=1,
        level=seed.level,
        family=seed.family,
        status=ACTIVE,
        content=d.content,
        belief=B.inherit(seed.pos, seed.neg, p.formation.inherit_fraction, mem.prior, p.beliefs.window),
        seed=seed.id,
        neighbours=[n.id for n in near],
        success_fixtures=[seed.fixture, *(n.fixture for n in near)][-p.intervention.fixture_history :],
    )
    mem.store.skills[skill.id] = skill
    seed.consolidated_into = skill.id
    mem.index.remove_memory(seed)
    mem.index.add_skill(skill, vec)  # type: ignore[arg-type]
    mem.store.counters.promotions += 1
    mem.audit.record(
        "promotion",
        skill=skill.id,
        lineage=lineage,
        level=skill.level,
        seed=seed.id,
        neighbours=skill.neighbours,
        seed_evidence={"pos": seed.pos, "neg": seed.neg, "support": seed.support},
        inherit_fraction=p.formation.inherit_fraction,
        belief=to_dict(skill.belief),
        content=to_dict(skill.content),
    )


def queue(mem: AECGMemory, ids: Iterable[str]) -> None:
    p = mem.p
    for mid in ids:
        m = mem.store.memories.get(mid)
        if m is None or mid in mem.store.pending_promotions or not eligible(m, p.formation, p.beliefs):
            continue
        mem.store.pending_promotions.append(mid)
        mem.audit.record("promotion_queued", memory=mid, level=m.level, support=m.support, pos=m.pos, neg=m.neg)
