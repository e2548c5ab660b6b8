"""ConMem's serialisation per agent role within a token budget (serializer.py in ConMemCode).

Cards are taken by admission score, at most `max_cards` of them. Each becomes
a hint: when to use it (its triggers), what to do (its sections in the order
the agent's role favours, evaluation excluded, at most two), what to check
(evaluation) and what to avoid (evaluation of failure cards). A hint that does
not fit the remaining budget is re-rendered compactly (shorter fields, one
section) or skipped. The hint text goes through the shared memory formatter
like every other method's items; ConMem's own XML wrapper is not used.
"""

from __future__ import annotations

from typing import Any, Protocol

from baselines.conmem.cards import SECTIONS

ROLE_ALLOCATION = {
    "planner": {"state": 0.35, "plan": 0.35, "exec": 0.10, "eval": 0.20},
    "executor": {"state": 0.15, "plan": 0.20, "exec": 0.40, "eval": 0.25},
    "evaluator": {"state": 0.20, "plan": 0.15, "exec": 0.30, "eval": 0.35},
    "default": {"state": 0.25, "plan": 0.25, "exec": 0.25, "eval": 0.25},
}
FULL = {"card": 450, "sections": 2, "when": 180, "trigger": 160, "check": 220}
COMPACT = {"card": 240, "sections": 1, "when": 120, "trigger": 100, "check": 140}
HEADER_TOKENS = 40  # the wrapper and the "hints are optional" rule ConMem counts against the budget
NEGATIVE = ("failure", "fail", "avoid", "do not", "incorrect", "bug", "error", "recovery")


class RenderParams(Protocol):
    token_budget: int
    max_cards: int


def normalize_role(role: str) -> str:
    """ConMem's role keys from free-form role names."""
    role = role.lower()
    if any(k in role for k in ("plan", "proxy", "strategist", "requirement")):
        return "planner"
    if any(k in role for k in ("actor", "exec", "coder", "developer", "tool", "implement")):
        return "executor"
    if any(k in role for k in ("critic", "eval", "judge", "review", "summar")):
        return "evaluator"
    return "default"


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def truncate(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0].strip()
    return (cut or text[:max_chars]).rstrip() + "..."


def hint(card: dict[str, Any], role_key: str, compact: bool = False) -> str:
    size = COMPACT if compact else FULL
    when = truncate("; ".join(card["triggers"][:2]) or card["summary"], size["trigger"])
    when = truncate(when or card["summary"] or card["task_description"], size["when"])
    allocation = ROLE_ALLOCATION.get(role_key, ROLE_ALLOCATION["default"])
    do: list[str] = []
    for section in sorted(SECTIONS, key=lambda s: -allocation[s]):
        text = truncate(card["sections"].get(section, ""), size["card"])
        if section != "eval" and text and text not in do:
            do.append(text)
        if len(do) >= size["sections"]:
            break
    evaluation = card["sections"].get("eval", "").strip()
    check = truncate(evaluation, size["check"])
    negative = any(w in evaluation.lower() for w in NEGATIVE) or card["provenance"]["outcome"] == "failure"
    avoid = check if evaluation and negative else ""
    if not do and not check and not avoid:
        fallback = truncate(card["summary"] or card["task_description"], size["card"])
        do = [fallback] if fallback else []
    if not do and not check and not avoid:
        return ""
    lines = [f"From a {card['provenance']['outcome']} task (score {card['admission_score']:.2f}). When: {when}"]
    lines += [f"Do: {d}" for d in do]
    if check and check not in do:
        lines.append(f"Check: {check}")
    if avoid:
        lines.append(f"Avoid: {avoid}")
    if card.get("warning"):
        lines.append(f"Warning: {card['warning']}")
    return "\n".join(lines)


def render(views: list[dict[str, Any]], role: str, p: RenderParams) -> list[tuple[dict[str, Any], str]]:
    """(card view, hint text) for the cards that fit, best admission score first."""
    role_key = normalize_role(role)
    used = HEADER_TOKENS
    out: list[tuple[dict[str, Any], str]] = []
    for card in sorted(views, key=lambda c: -c["admission_score"]):
        if len(out) >= max(1, p.max_cards):
            break
        text = hint(card, role_key)
        if not text:
            continue
        if used + estimate_tokens(text) > p.token_budget:
            text = hint(card, role_key, compact=True)
            if not text or used + estimate_tokens(text) > p.token_budget:
                continue
        out.append((card, text))
        used += estimate_tokens(text)
    return out
