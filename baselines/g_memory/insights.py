"""G-Memory's insight tier: scored rules, the critique operations that edit them, merging.

Mirrors InsightsManager in G-Memory's GMemory.py (parse, validate and apply
AGREE/REMOVE/EDIT/ADD operations; scores; positive/negative task links;
pruning of rules whose score drops to 0) with stable ids instead of list
positions. A book is edited on a copy and committed whole by the caller, so a
provider failure in the middle of a finetuning round changes nothing; the
events it collected are audited on commit.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

_OPERATION = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+|)): (?:[a-zA-Z\s\d]+: |)(.*)")
_BANNED = ("ADD", "AGREE", "EDIT")
NEW_RULE_SCORE = 2


@dataclass(frozen=True)
class Operation:
    kind: str  # ADD | AGREE | EDIT | REMOVE
    number: int | None  # 1-based position in the rule list shown to the LLM
    text: str


def parse_operations(reply: str | None) -> list[Operation]:
    """Operations in G-Memory's format; a text must end with '.' and must not contain an operation word."""
    out = []
    for op, text in _OPERATION.findall(reply or ""):
        text = text.strip()
        if not text or not text.endswith(".") or any(w in text for w in _BANNED):
            continue
        parts = op.split(" ")
        kind = parts[0]
        number = int(parts[1]) if len(parts) == 2 and kind != "ADD" else None
        out.append(Operation(kind, number, text))
    return out


def _extend(existing: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys([*existing, *new]))


@dataclass
class InsightBook:
    """The rules with their scores and the tasks they were derived from or contradicted by."""

    rules: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 0
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def copy(self) -> InsightBook:
        return InsightBook(copy.deepcopy(self.rules), self.next_id, [])

    def by_id(self, rid: str) -> dict[str, Any] | None:
        return next((r for r in self.rules if r["id"] == rid), None)

    def related(self, task_mains: list[str], threshold: float = 1) -> list[dict[str, Any]]:
        """Rules linked (positively) to at least `threshold` of the tasks, most linked first."""
        scored = []
        for r in self.rules:
            positive = set(r["positive"])
            n = sum(t in positive for t in task_mains)
            if n >= threshold:
                scored.append((n, r))
        scored.sort(key=lambda x: -x[0])
        return [r for _, r in scored]

    def add(self, text: str, tasks: list[str], score: float = NEW_RULE_SCORE) -> dict[str, Any]:
        rule = {"id": f"gm-i-{self.next_id}", "rule": text, "score": score, "positive": list(tasks), "negative": []}
        self.next_id += 1
        self.rules.append(rule)
        self.events.append(("admit", {"memory_id": rule["id"], "kind": "insight", "rule": text}))
        return rule

    def reward(self, rid: str, amount: float, task: str) -> None:
        rule = self.by_id(rid)
        if rule is not None:
            rule["score"] += amount
            self.events.append(("score", {"memory_id": rid, "delta": amount, "score": rule["score"], "task": task}))

    def prune(self) -> None:
        """Drop rules whose score fell to 0 or below (G-Memory's clear_insights)."""
        for r in self.rules:
            if r["score"] <= 0:
                self.events.append(("forget", {"memory_id": r["id"], "kind": "insight", "score": r["score"]}))
        self.rules = [r for r in self.rules if r["score"] > 0]

    def _existing(self, text: str) -> dict[str, Any] | None:
        return next((r for r in self.rules if r["rule"] in text), None)

    def apply(self, operations: list[Operation], shown: list[str], tasks: list[str], max_rules: int) -> None:
        """Validate and apply operations whose numbers refer to `shown` (rule ids in prompt order)."""
        valid: list[tuple[str, str | None, str]] = []
        for op in operations:
            rid = shown[op.number - 1] if op.number is not None and 1 <= op.number <= len(shown) else None
            if rid is not None and self.by_id(rid) is None:
                rid = None
            if op.kind == "ADD":
                if self._existing(op.text) is None:
                    valid.append(("ADD", None, op.text))
            elif op.kind == "EDIT":
                same = self._existing(op.text)
                if same is not None:
                    valid.append(("AGREE", same["id"], op.text))
                elif rid is not None:
                    valid.append(("EDIT", rid, op.text))
            elif rid is not None:  # REMOVE, AGREE
                valid.append((op.kind, rid, op.text))
        full = len(self.rules) >= max_rules
        for kind in ("REMOVE", "AGREE", "EDIT", "ADD"):
            for op_kind, rid, text in valid:
                if op_kind != kind:
                    continue
                rule = self.by_id(rid) if rid is not None else None
                if kind == "REMOVE" and rule is not None:
                    rule["score"] -= 3 if full else 1
                    rule["negative"] = _extend(rule["negative"], tasks)
                    self.events.append(("critique", {"memory_id": rid, "op": kind, "score": rule["score"]}))
                elif kind in ("AGREE", "EDIT") and rule is not None:
                    if kind == "EDIT":
                        rule["rule"] = text
                    rule["score"] += 1
                    rule["positive"] = _extend(rule["positive"], tasks)
                    self.events.append(("critique", {"memory_id": rid, "op": kind, "score": rule["score"]}))
                elif kind == "ADD":
                    self.add(text, tasks)

    def state(self) -> dict[str, Any]:
        return {"rules": copy.deepcopy(self.rules), "next_id": self.next_id}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> InsightBook:
        return cls(copy.deepcopy(state["rules"]), int(state["next_id"]))
