"""Distill (EDV sec. 4.3, Appendix B.1): one model compares the candidates and writes memory items.

The distiller (by default a pool model outside the execution group: the
"third party") sees the task and every candidate trajectory (without outcome
labels unless `show_outcome`: the paper's setting has no ground truth), picks
the best under Compliance > Accuracy > Efficiency, assesses each candidate as
success or failure (its "Assessment:" line; Figure 3: the distiller "updates
the ability matrix", sec. 4.5: the matrix "is derived from agent performance
statistics during the Distill stage"), and writes at most `max_items` items
(Title, Description, Content). A reply without a parsable item yields no
candidates (audited by the caller); an unparsable "Best:" or "Assessment:"
line leaves that part empty but keeps the items.

`max_items` is 3: the paper says "a small set"; 3 is ReasoningBank's bound,
the method EDV is compared with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from aecg_bench.contracts import MemoryMethod
from aecg_bench.types import Task
from baselines.edv.prompts import Candidate, distill_grammar, distill_messages
from baselines.llm_calls import ask
from baselines.reasoningbank import ReasoningItem, parse_items

_BEST = re.compile(r"best\s*(?:candidate)?\s*[:=]\s*\**\s*(?:candidate\s*)?#?(\d+)", re.I)
_ASSESSMENT_LINE = re.compile(r"^\s*assessment\s*:\s*(.+)$", re.I | re.M)
_ASSESSED = re.compile(r"#?(\d+)\s*[=:]\s*\**\s*(success|failure)", re.I)
_ANALYSIS = re.compile(r"^\s*analysis\s*:\s*(.+)$", re.I | re.M)


@dataclass(frozen=True)
class Distilled:
    best: int | None  # candidate number, 1-based
    items: tuple[ReasoningItem, ...]
    analysis: str
    assessed: dict[int, bool]  # candidate number -> the distiller's success verdict
    reply: str | None


def distill(
    method: MemoryMethod,
    task: Task,
    candidates: Sequence[Candidate],
    *,
    distiller: str,
    temperature: float,
    max_items: int,
    max_chars: int,
    max_tokens: int,
    show_outcome: bool = False,
) -> Distilled:
    system, user = distill_messages(
        task, candidates, max_items=max_items, max_chars=max_chars, show_outcome=show_outcome
    )
    reply = ask(
        method,
        system=system,
        user=user,
        purpose="distill",
        role="distiller",
        model=distiller,
        temperature=temperature,
        max_tokens=max_tokens,
        grammar=distill_grammar(len(candidates), max_items),
    )
    return parse_distilled(reply, len(candidates), max_items)


def parse_distilled(reply: str | None, n_candidates: int, max_items: int) -> Distilled:
    if not reply:
        return Distilled(None, (), "", {}, reply)
    found = _BEST.search(reply)
    best = int(found.group(1)) if found else None
    if best is not None and not 1 <= best <= n_candidates:
        best = None
    analysis = _ANALYSIS.search(reply)
    line = _ASSESSMENT_LINE.search(reply)
    assessed = {
        int(n): verdict.lower() == "success"
        for n, verdict in (_ASSESSED.findall(line.group(1)) if line else [])
        if 1 <= int(n) <= n_candidates
    }
    items = tuple(parse_items(reply)[:max_items])
    return Distilled(best, items, analysis.group(1)[:500] if analysis else "", assessed, reply)
