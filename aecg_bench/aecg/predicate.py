"""Pre-execution applicability predicates (the product of context narrowing, sec. 3.4.2).

A predicate is a small conjunction over the *decision context*: terms that
must all appear (`all_of`) and terms none of which may appear (`none_of`).
The decision context is the same text for a live recall and for a recorded
fixture (`decision_text`), so the predicate that excluded a BadCase in replay
excludes the same situation at recall time, before anything executes.

Terms are lower-cased word sequences matched on word boundaries. The paper
asks for "a minimal pre-execution applicability predicate"; representing it
as term constraints checked without an LLM is our choice: it keeps recall
free of model calls and makes narrowing replay exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_WORD = re.compile(r"[a-z0-9]+")
MAX_TERM_WORDS = 4


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def normalised(text: str) -> str:
    """Space-padded word sequence, so phrase tests are substring tests on word boundaries."""
    return f" {' '.join(words(text))} "


def decision_text(task_type: str, instruction: str, level: str, role: str, agent: str, context: str) -> str:
    """What recall and fixtures match on: who decides, in which task, seeing what."""
    return (
        f"task type: {task_type}\ntask: {instruction}\nlevel: {level}; role: {role}; agent: {agent}\n"
        f"observation: {context}"
    )


@dataclass
class Predicate:
    all_of: list[str] = field(default_factory=list)
    none_of: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.all_of and not self.none_of

    def admits(self, norm_text: str) -> bool:
        """True if the skill may apply to a context (given as `normalised(...)` text)."""
        return all(f" {t} " in norm_text for t in self.all_of) and not any(f" {t} " in norm_text for t in self.none_of)

    def describe(self) -> str:
        parts = [f'"{t}"' for t in self.all_of] + [f'not "{t}"' for t in self.none_of]
        return " and ".join(parts)


def clean_terms(raw: object, limit: int) -> list[str]:
    """Terms from model output: strings of 1..4 words, normalised, deduplicated, at most `limit`."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            continue
        ws = words(item)
        term = " ".join(ws)
        if 1 <= len(ws) <= MAX_TERM_WORDS and term not in out:
            out.append(term)
    return out[:limit]
