"""Robust reading of one JSON object from a model reply.

Models wrap JSON in prose or code fences, use single quotes or Python
literals, or stop early. Order of attempts: the whole reply, the contents of
a fenced block, then each balanced {...} span from the left; each as JSON,
then as a Python literal. None when nothing parses to a dict: callers treat
that as abstention (judges) or as no proposal (abstraction, intervention).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def _as_dict(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        try:
            obj = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return obj if isinstance(obj, dict) else None


def _balanced_spans(text: str, max_starts: int = 16) -> list[str]:
    """Balanced {...} spans, trying at most `max_starts` opening braces (bounded work)."""
    spans: list[str] = []
    starts = [i for i, ch in enumerate(text) if ch == "{"][:max_starts]
    for start in starts:
        depth, in_str, esc = 0, False, False
        for end in range(start, len(text)):
            c = text[end]
            if in_str:  # a quote ends the string unless the character before it escaped it
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == '"':
                    in_str = False
                continue
            if c == '"':
                in_str = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    spans.append(text[start : end + 1])
                    break
    return spans


def parse_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    candidates = [text, *(m.strip() for m in _FENCE.findall(text)), *_balanced_spans(text)]
    for cand in candidates:
        obj = _as_dict(cand)
        if obj is not None:
            return obj
    return None


def as_str(value: Any, limit: int = 400) -> str:
    if value is None:
        return ""
    text = " ".join(str(value).split())
    return text[:limit]


def as_str_list(value: Any, limit: int = 8, item_limit: int = 300) -> list[str]:
    if isinstance(value, str):
        value = [v for v in re.split(r"\n+|(?<=[.;])\s+(?=\d+[.)]\s)", value) if v.strip()]
    if not isinstance(value, list):
        return []
    out = []
    for v in value:
        s = as_str(v, item_limit)
        s = re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", s)
        if s:
            out.append(s)
    return out[:limit]


def as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in {"true", "yes", "1", "y"}
    if isinstance(value, int | float):
        return value != 0
    return False


def as_confidence(value: Any) -> float | None:
    """A confidence in [0, 1]; percentages (1 < x <= 100) are rescaled; None if unreadable."""
    try:
        x = float(str(value).strip().rstrip("%"))
    except (TypeError, ValueError):
        return None
    if x != x:  # NaN
        return None
    if 1.0 < x <= 100.0:
        x /= 100.0
    return min(max(x, 0.0), 1.0)
