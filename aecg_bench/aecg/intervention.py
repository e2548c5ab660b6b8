"""Evidence-routed intervention (AECG sec. 3.4.2, appendix D).

Routing uses the failure modes the judges agreed on in the BadCases
admitted against the reviewed version:
- more (or as many) "applicability" than "procedure" verdicts -> context narrowing,
- more "procedure" verdicts -> procedural repair,
- no qualified verdict with a mode -> no change.
The symmetric-admission ablation routes the same way: its judges still
diagnose (their agreed mode), only their agreement no longer gates admission.

Constraints the paper's prompts state are also enforced in code, so a model
that ignores them cannot break them:
- narrowing changes only applicability, triggers and the predicate (the
  procedure and avoidance are copied from the parent); the predicate is
  bounded to `max_predicate_terms` new terms and is added to the parent's;
- repair changes only procedure and avoidance, must change something, and
  is rejected if it quotes a BadCase's task id or any `hardcode_ngram`
  consecutive words of a BadCase that the parent did not already contain.
A proposal that breaks a constraint, an abstention or an unparsable reply
means no change. Accepted proposals become inactive versioned candidates
(see `method`); only the replay gate activates them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aecg_bench.aecg import llm_json
from aecg_bench.aecg.objects import Fixture, Skill, SkillContent
from aecg_bench.aecg.predicate import Predicate, clean_terms, words

NARROWING, REPAIR, NO_CHANGE = "narrowing", "repair", "none"


def route(failure_modes: list[str]) -> tuple[str, str]:
    counts = Counter(failure_modes)
    app, proc = counts["applicability"], counts["procedure"]
    if app == 0 and proc == 0:
        return NO_CHANGE, "no qualified failure carries a diagnosis"
    if app >= proc:
        return NARROWING, f"{app} applicability vs {proc} procedure verdicts"
    return REPAIR, f"{proc} procedure vs {app} applicability verdicts"


def fixture_payload(f: Fixture) -> dict[str, Any]:
    return {
        "task_type": f.task_type,
        "task": f.instruction,
        "level": f.level,
        "role": f.role,
        "agent": f.agent,
        "observation": f.context,
        "behaviour": f.behaviour,
        "outcome": "success" if f.success else "failure",
        "context_text": f.text(),
    }


def skill_payload(skill: Skill) -> dict[str, Any]:
    c = skill.content
    return {
        "id": skill.id,
        "scope": skill.level,
        "name": c.name,
        "applicability": c.applicability,
        "triggers": c.triggers,
        "procedure": c.procedure,
        "avoidance": c.avoidance,
        "predicate": {"all_of": c.predicate.all_of, "none_of": c.predicate.none_of},
    }


def intervention_payload(
    skill: Skill, failures: list[Fixture], successes: list[Fixture], max_terms: int
) -> dict[str, Any]:
    return {
        "skill": skill_payload(skill),
        "bad_cases": [fixture_payload(f) for f in failures],
        "supported_successes": [fixture_payload(f) for f in successes],
        "max_terms": max_terms,
    }


def parse_narrowing(text: str, parent: SkillContent, max_terms: int) -> tuple[SkillContent | None, str]:
    obj = llm_json.parse_object(text)
    if obj is None:
        return None, "unparsable reply"
    if llm_json.as_bool(obj.get("abstain", False)):
        return None, "abstained: " + llm_json.as_str(obj.get("reason"))
    raw = obj.get("predicate") if isinstance(obj.get("predicate"), dict) else {}
    all_of = clean_terms(raw.get("all_of"), max_terms)
    none_of = clean_terms(raw.get("none_of"), max_terms - len(all_of))
    if not all_of and not none_of:
        return None, "no usable predicate"
    merged = Predicate(
        all_of=[*parent.predicate.all_of, *(t for t in all_of if t not in parent.predicate.all_of)],
        none_of=[*parent.predicate.none_of, *(t for t in none_of if t not in parent.predicate.none_of)],
    )
    if merged == parent.predicate:
        return None, "predicate adds nothing"
    return (
        SkillContent(
            name=parent.name,
            applicability=llm_json.as_str(obj.get("applicability"), 600) or parent.applicability,
            triggers=llm_json.as_str_list(obj.get("triggers"), 6) or list(parent.triggers),
            procedure=list(parent.procedure),
            avoidance=list(parent.avoidance),
            evidence_summary=parent.evidence_summary,
            predicate=merged,
        ),
        llm_json.as_str(obj.get("reason")),
    )


def hardcoded(new_lines: list[str], parent: SkillContent, failures: list[Fixture], n: int) -> str | None:
    """Why a repair hard-codes a BadCase, or None."""
    new_text = " ".join(new_lines)
    new_norm = f" {' '.join(words(new_text))} "
    parent_norm = f" {' '.join(words(' '.join([*parent.procedure, *parent.avoidance])))} "
    for f in failures:
        tid = " ".join(words(f.task_id))
        if len(tid) >= 3 and f" {tid} " in new_norm and f" {tid} " not in parent_norm:
            return f"quotes the task id {f.task_id!r}"
        ws = words(" ".join([f.instruction, f.context, f.behaviour]))
        for i in range(len(ws) - n + 1):
            gram = f" {' '.join(ws[i : i + n])} "
            if gram in new_norm and gram not in parent_norm:
                return f"quotes a bad case verbatim ({gram.strip()!r})"
    return None


def parse_repair(
    text: str, parent: SkillContent, failures: list[Fixture], ngram: int
) -> tuple[SkillContent | None, str]:
    obj = llm_json.parse_object(text)
    if obj is None:
        return None, "unparsable reply"
    if llm_json.as_bool(obj.get("abstain", False)):
        return None, "abstained: " + llm_json.as_str(obj.get("reason"))
    procedure = llm_json.as_str_list(obj.get("procedure"), 10)
    if not procedure:
        return None, "no procedure in the repair"
    avoidance = llm_json.as_str_list(obj.get("avoidance"), 6) if "avoidance" in obj else list(parent.avoidance)
    if procedure == parent.procedure and avoidance == parent.avoidance:
        return None, "repair changes nothing"
    why = hardcoded([*procedure, *avoidance], parent, failures, ngram)
    if why:
        return None, f"rejected: {why}"
    return (
        SkillContent(
            name=parent.name,
            applicability=parent.applicability,
            triggers=list(parent.triggers),
            procedure=procedure,
            avoidance=avoidance,
            evidence_summary=parent.evidence_summary,
            predicate=Predicate(list(parent.predicate.all_of), list(parent.predicate.none_of)),
        ),
        llm_json.as_str(obj.get("reason")),
    )
