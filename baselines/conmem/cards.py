"""ConMem's memory card and the text features its rules read (schema.py, utils.py, admission.py).

A card is a plain dict (it is state): typed sections state / plan / exec / eval,
trigger phrases, a summary, evidence, provenance (source task, agent, steps,
outcome, quality of the failure reflection, label source), quality components
and the admission score. The helpers below compute the features ConMem's
admission, retrieval and merge rules use; they are pure functions of a card.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from typing import Any

SECTIONS = ("state", "plan", "exec", "eval")
_WORD4 = re.compile(r"\b[a-zA-Z_]{4,}\b")
_SIGNATURE = re.compile(r"[a-zA-Z_][a-zA-Z_0-9+-]{3,}")
_CAUSAL = re.compile(r"\b(because|due to|caused by|therefore|failed|error)\b")
FAILURE_WORDS = ("fail", "error", "incorrect", "bug")
# Generic words that say nothing about which procedure a card is about (ConMem's PATTERN_STOPWORDS in spirit).
STOPWORDS = frozenset(
    [
        "about",
        "after",
        "again",
        "agent",
        "also",
        "approach",
        "based",
        "before",
        "being",
        "build",
        "card",
        "case",
        "check",
        "constraint",
        "constraints",
        "content",
        "current",
        "default",
        "ensure",
        "evaluate",
        "execution",
        "failed",
        "failure",
        "feedback",
        "first",
        "following",
        "function",
        "general",
        "generate",
        "given",
        "handle",
        "input",
        "inputs",
        "maintain",
        "method",
        "must",
        "need",
        "optional",
        "output",
        "outputs",
        "pattern",
        "plan",
        "precondition",
        "preconditions",
        "problem",
        "process",
        "reusable",
        "return",
        "section",
        "should",
        "solve",
        "state",
        "step",
        "steps",
        "strategy",
        "summary",
        "task",
        "tasks",
        "that",
        "their",
        "then",
        "there",
        "these",
        "this",
        "through",
        "type",
        "using",
        "valid",
        "value",
        "when",
        "where",
        "which",
        "while",
        "with",
        "without",
        "would",
    ]
)


def tokens(text: str) -> set[str]:
    """Lower-case words of 4+ letters (ConMem's keyword tokens)."""
    return set(_WORD4.findall(text.lower()))


def token_overlap(a: str, b: str) -> float:
    """Jaccard overlap of 4+-letter words."""
    ta, tb = tokens(a), tokens(b)
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


def sections_of(card: dict[str, Any]) -> dict[str, str]:
    return {s: card["sections"].get(s, "") for s in SECTIONS}


def coverage(card: dict[str, Any]) -> float:
    return sum(1 for t in sections_of(card).values() if t.strip()) / len(SECTIONS)


def compose(card: dict[str, Any]) -> str:
    return "\n".join(f"[{s}] {t.strip()}" for s, t in sections_of(card).items() if t.strip())


def primary_type(card: dict[str, Any]) -> str:
    filled = {s: t for s, t in sections_of(card).items() if t.strip()}
    return max(filled.items(), key=lambda kv: len(kv[1]))[0] if filled else "card"


def build_summary(task: str, sections: dict[str, str], evidence: str) -> str:
    pieces = [task.strip()] if task.strip() else []
    pieces += [f"{s}: {t.strip()[:220]}" for s, t in sections.items() if t.strip()]
    if evidence:
        pieces.append(f"evidence: {evidence[:160]}")
    return " | ".join(pieces)


def activation_text(card: dict[str, Any]) -> str:
    """What a card is embedded by: task, summary, content, triggers."""
    parts = [card["task_description"], card["summary"], compose(card)]
    if card["triggers"]:
        parts.append(" | ".join(card["triggers"]))
    return "\n".join(p for p in parts if p)


def trigger_text(card: dict[str, Any]) -> str:
    """What a query's keywords are matched against: triggers, summary, task, sections."""
    return " ".join([*card["triggers"], card["summary"], card["task_description"], *sections_of(card).values()])


def _signature_terms(text: str, limit: int) -> list[str]:
    counts = Counter(t for t in _SIGNATURE.findall(text.lower()) if t not in STOPWORDS and not t.startswith(SECTIONS))
    return [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def pattern_features(card: dict[str, Any]) -> tuple[frozenset[str], str]:
    """(pattern terms, cluster key): what a card is about (2 terms) and how it acts (3 terms)."""
    sec = sections_of(card)
    task_text = " ".join([card["task_description"], card["summary"], compose(card), sec["state"], sec["eval"]])
    method_text = " ".join([card["summary"], compose(card), sec["plan"], sec["exec"], " ".join(card["triggers"])])
    families = _signature_terms(task_text, 2)
    methods = _signature_terms(method_text, 3)
    key = f"fam:{','.join(families) or 'generic'}|met:{','.join(methods) or 'generic'}"
    return frozenset(families) | frozenset(methods), key


# -- admission: Q(c) = w1 C(c) + w2 N(c) + w3 R(c) + w4 U(c) (ConMem admission.py) ----------------------

CREDIBILITY = {"success": 1.0, "partial": 0.8, "failure": 0.9}
UTILITY = {
    ("eval", "success"): 0.9, ("eval", "partial"): 0.8, ("eval", "failure"): 0.95,
    ("plan", "success"): 0.8, ("plan", "partial"): 0.6, ("plan", "failure"): 0.85,
    ("state", "success"): 0.6, ("state", "partial"): 0.5, ("state", "failure"): 0.65,
    ("exec", "success"): 0.5, ("exec", "partial"): 0.4, ("exec", "failure"): 0.55,
    ("card", "success"): 0.85, ("card", "partial"): 0.65, ("card", "failure"): 0.90,
}  # fmt: skip
FALLBACK = 0.5  # retrieval_quality_fallback


def reliability(card: dict[str, Any]) -> float:
    """C(c) = 0.6 * consistency + 0.4 * evidence; consistency from section coverage and the overlap of
    adjacent sections along state -> plan -> exec -> eval."""
    sec = sections_of(card)
    pairs = [
        token_overlap(sec[a], sec[b]) for a, b in itertools.pairwise(SECTIONS) if sec[a].strip() and sec[b].strip()
    ]
    pair_mean = sum(pairs) / len(pairs) if pairs else 0.5
    consistency = min(1.0, max(0.0, 0.30 + 0.35 * coverage(card) + 0.35 * pair_mean))
    outcome = card["provenance"]["outcome"]
    evidence = CREDIBILITY.get(outcome, FALLBACK) if card["evidence"].strip() else 0.2
    return 0.6 * consistency + 0.4 * evidence


def utility(card: dict[str, Any]) -> float:
    """U(c) = 0.7 * outcome utility (by primary section and outcome, + coverage bonus) + 0.3 * density."""
    outcome = card["provenance"]["outcome"]
    base = UTILITY.get((primary_type(card), outcome), UTILITY.get(("card", outcome), FALLBACK))
    outcome_utility = min(1.0, base + 0.1 * coverage(card))
    text = activation_text(card).lower()
    density = 1.0 * (0.5 if len(text) < 80 else 1.0)
    density += 0.1 * bool(re.search(r"\d", text)) + 0.1 * bool(_CAUSAL.search(text))
    return 0.7 * outcome_utility + 0.3 * min(1.0, max(0.0, density))


def relevance(age_rounds: int, decay: float) -> float:
    """R(c) = exp(-age / decay); a card is scored at admission, where its age is 0."""
    return math.exp(-max(0, age_rounds) / max(decay, 1e-6))


def credibility(card: dict[str, Any]) -> float:
    """Outcome credibility damped by the quality of the failure reflection (retriever._credibility)."""
    prov = card["provenance"]
    quality = min(1.0, max(0.0, float(prov["reflection_quality"])))
    return CREDIBILITY.get(prov["outcome"], FALLBACK) * (0.7 + 0.3 * quality)


def reflection_quality(reflection: str) -> float:
    """Structure of a failure reflection: its four headings (0.8) and its length (0.2)."""
    if not reflection.strip():
        return 0.0
    text = reflection.lower()
    marks = ("root cause:", "what went wrong:", "what should have been done:", "general lesson:")
    return 0.8 * sum(m in text for m in marks) / len(marks) + 0.2 * min(1.0, len(reflection.split()) / 40.0)


def has_failure_signal(text: str) -> bool:
    lowered = text.lower()
    return any(w in lowered for w in FAILURE_WORDS)
