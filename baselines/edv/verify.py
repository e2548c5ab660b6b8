"""Verify (EDV sec. 4.4, Appendix B.2): the verification group votes on every candidate memory.

By default the verifiers are the executors (A_verify = A_exec). Each casts one
vote per candidate memory at its Verify temperature (paper: 0.0) under a
default-reject stance: only an explicit "Verdict: APPROVE" approves, so an
unparsable or truncated reply is a rejection (recorded as such).

Routing of the votes (sec. 4.4): unanimous approval -> shared bank; approval
by a subset -> the approving verifiers' private banks; none -> discard. The
Table 5 ablations change where approved items go: `shared_only` puts every
approved item in the shared bank, `private_only` puts it in the approvers'
private banks. Without verification (Table 4, row 1) every item counts as
approved by every executor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from aecg_bench.contracts import MemoryMethod
from aecg_bench.types import Task
from baselines.edv.prompts import VERIFY_GRAMMAR, Candidate, verify_messages
from baselines.llm_calls import ask
from baselines.reasoningbank import ReasoningItem
from baselines.trajectory_text import one_line

BankMode = Literal["hierarchical", "shared_only", "private_only"]
Destination = Literal["shared", "private", "discard"]

_VERDICT = re.compile(r"verdict\s*:\s*\**\s*(approve|reject)", re.I)
_RATIONALE = re.compile(r"rationale\s*:\s*(.+)", re.I | re.S)


@dataclass(frozen=True)
class Vote:
    verifier: str
    approve: bool
    rationale: str
    parsed: bool  # False: no verdict found, counted as a rejection


@dataclass(frozen=True)
class Verdict:
    """What the verification group decided about one candidate memory."""

    item: ReasoningItem
    votes: tuple[Vote, ...]
    voters: tuple[str, ...]
    approvers: tuple[str, ...]
    destination: Destination
    owners: tuple[str, ...]  # private banks it goes to


def verify_items(
    method: MemoryMethod,
    task: Task,
    candidates: Sequence[Candidate],
    items: Sequence[ReasoningItem],
    *,
    verifiers: Sequence[str],
    executors: Sequence[str],
    mode: BankMode,
    temperature: Callable[[str], float],
    max_tokens: Callable[[str], int],
    max_chars: int,
    show_outcome: bool,
) -> list[Verdict]:
    """Every verifier votes on every item (in order); the votes route each item."""
    out = []
    for item in items:
        votes = tuple(
            vote(
                method,
                task,
                candidates,
                item.render(),
                verifier=v,
                temperature=temperature(v),
                max_chars=max_chars,
                max_tokens=max_tokens(v),
                show_outcome=show_outcome,
            )
            for v in verifiers
        )
        if verifiers:
            voters, approvers = tuple(verifiers), tuple(v.verifier for v in votes if v.approve)
        else:  # no verification (Table 4, row 1): approved by the executors
            voters = approvers = tuple(executors)
        destination, owners = route(approvers, voters, mode)
        out.append(Verdict(item, votes, voters, approvers, destination, owners))
    return out


def vote(
    method: MemoryMethod,
    task: Task,
    candidates: Sequence[Candidate],
    item_text: str,
    *,
    verifier: str,
    temperature: float,
    max_chars: int,
    max_tokens: int,
    show_outcome: bool,
) -> Vote:
    system, user = verify_messages(task, candidates, item_text, max_chars=max_chars, show_outcome=show_outcome)
    reply = ask(
        method,
        system=system,
        user=user,
        purpose="verify",
        role="verifier",
        model=verifier,
        temperature=temperature,
        max_tokens=max_tokens,
        grammar=VERIFY_GRAMMAR,
    )
    return parse_vote(verifier, reply)


def parse_vote(verifier: str, reply: str | None) -> Vote:
    verdicts = _VERDICT.findall(reply or "")
    rationale = _RATIONALE.search(reply or "")
    text = rationale.group(1) if rationale else (reply or "")
    text = _VERDICT.split(text)[0]
    return Vote(
        verifier=verifier,
        approve=bool(verdicts) and verdicts[-1].lower() == "approve",
        rationale=one_line(text, 800),
        parsed=bool(verdicts),
    )


def route(approvers: Sequence[str], voters: Sequence[str], mode: BankMode) -> tuple[Destination, tuple[str, ...]]:
    """(destination, owners): owners are the private banks an item goes to (empty otherwise)."""
    approving = tuple(v for v in voters if v in set(approvers))
    if not approving:
        return "discard", ()
    if mode == "shared_only":
        return "shared", ()
    if mode == "private_only":
        return "private", approving
    if len(approving) == len(voters):
        return "shared", ()
    return "private", approving
