"""Pins of G-Memory's periodic insight consolidation (issue 17): the finetuning cadence, the critique
prompts and what their AGREE/REMOVE/EDIT/ADD replies do, and the merge of each task cluster's rules,
driven by a scripted model that records every call."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm.embeddings import Embedder
from baselines.g_memory import prompts as GP
from baselines.llm_calls import stable_seed

NEVER = {"start_insights_threshold": 10_000, "merge_every": 10_000}  # no consolidation unless a test asks


@dataclass
class _Reply:
    text: str


def _key(system: str) -> str:
    if system == GP.KEY_STEPS_SYSTEM:
        return "key_steps"
    if system == GP.MISTAKES_SYSTEM:
        return "mistakes"
    if system == GP.MERGE_SYSTEM:
        return "merge"
    if system.startswith(GP.COMPARE_SYSTEM):
        return "compare"
    if system.startswith(GP.SUCCESS_SYSTEM):
        return "success"
    raise AssertionError(f"unexpected prompt: {system[:80]}")


class Scripted:
    """The model: records every call; answers per prompt kind with a fixed text, a callable of the
    call number (1-based, per kind) and user text, or an exception to raise."""

    def __init__(self, **replies):
        self.replies = replies
        self.calls: list[dict] = []
        self.steps = 0

    def complete(self, messages, **kwargs):
        system, user = messages[0]["content"], messages[1]["content"]
        key = _key(system)
        self.calls.append({"key": key, "system": system, "user": user, **kwargs})
        if key == "key_steps" and key not in self.replies:
            self.steps += 1
            return _Reply(f"Key step of trial {self.steps - 1}.")
        reply = self.replies.get(key, {"mistakes": "It stopped too early."}.get(key, "nothing usable"))
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(sum(c["key"] == key for c in self.calls), user)
        return _Reply(reply)

    def of(self, key: str) -> list[dict]:
        return [c for c in self.calls if c["key"] == key]


def gmem(llm: Scripted, seed: int = 0, **params):
    services = MemoryServices(llm=llm, embedder=Embedder("lexical"), audit=AuditLog(), seed=seed)
    return registry.build("memory", "g_memory", params, services=services), services


TASKS = [
    "Sort the list of numbers in ascending order",
    "Translate the French sentence into German",
    "Count the vowels of the given word",
    "Reverse the characters of the string",
    "Compute the factorial of the integer",
    "Find the largest prime below the bound",
    "Merge the two dictionaries into one",
]


def observe(memory, outcomes: list[bool], texts: list[str] | None = None) -> list[dict]:
    texts = texts or TASKS
    for i, ok in enumerate(outcomes):
        memory.observe(bm.episode(texts[i % len(texts)], f"t{len(memory.trials)}", ok))
    return list(memory.trials.values())


def rule(memory, text: str, tasks: list[str], score: float = 2) -> str:
    r = memory.book.add(text, tasks, score)
    memory.book.events.clear()
    return r["id"]


# -- one critique round: the prompts and what the replies do ---------------------------------------------------


def test_a_round_compares_the_success_with_the_failure_then_studies_the_successes_and_applies_the_edits():
    llm = Scripted(
        compare="AGREE 1: still right.\nADD: Check the goal before finishing, because early stops fail.",
        success="EDIT 2: Read the whole task first, because details matter.\nREMOVE 1: no longer needed.",
    )
    memory, services = gmem(
        llm,
        start_insights_threshold=2,
        rounds_per_insights=2,
        insights_point_num=1,
        merge_every=10_000,
        max_tokens=321,
    )
    s, f = observe(memory, [True, False])
    first = rule(memory, "Look before acting, because the state matters.", [s["task_main"]])
    second = rule(memory, "Read the task, because it says what to do.", [f["task_main"]])
    rule(memory, "Unrelated, because it is linked to no task here.", ["another task"])
    llm.calls.clear()
    memory.maintain(1)
    assert [c["key"] for c in llm.calls] == ["compare", "success"]
    shown = "1. Look before acting, because the state matters.\n2. Read the task, because it says what to do."
    compare, success = llm.calls
    assert compare["system"] == GP.COMPARE_SYSTEM and success["system"] == GP.SUCCESS_SYSTEM
    assert compare["user"] == GP.COMPARE_USER.format(
        task1=s["task_main"],
        trajectory1=s["trajectory"],
        fail_reason="It stopped too early.",
        task2=f["task_main"],
        trajectory2=f["trajectory"],
        rules=shown,
    )
    history = f"task0:\n{s['task_main']}\nKey step of trial 0."
    assert success["user"] == GP.SUCCESS_USER.format(history=history, rules=shown)
    assert all(c["max_tokens"] == 321 for c in llm.calls)
    rules = {r["id"]: r for r in memory.book.rules}
    both = [s["task_main"], f["task_main"]]
    # AGREE 1 (+1, linked to both tasks), then REMOVE 1 from the success study (-1, contradicted by the success)
    assert rules[first] == {
        "id": first,
        "rule": "Look before acting, because the state matters.",
        "score": 2,
        "positive": both,
        "negative": [s["task_main"]],
    }
    edited = rules[second]
    assert (edited["rule"], edited["score"], edited["positive"]) == (
        "Read the whole task first, because details matter.",
        3,
        [f["task_main"], s["task_main"]],
    )
    added = memory.book.rules[-1]
    assert (added["rule"], added["score"], added["positive"], added["negative"]) == (
        "Check the goal before finishing, because early stops fail.",
        2,
        both,
        [],
    )
    audited = [(e["event"], e.get("memory_id"), e.get("op")) for e in services.audit.read()]
    assert audited[-4:] == [
        ("critique", first, "AGREE"),
        ("admit", added["id"], None),
        ("critique", first, "REMOVE"),
        ("critique", second, "EDIT"),
    ]
