"""Conversations share one instruction per domain (tau2's policy): memories are keyed and
recalled by what the user asks (`task_text`), so different requests recall different memories."""

from __future__ import annotations

from dataclasses import replace

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from aecg_bench.types import Task, task_text

POLICY = "You are a customer service agent. Follow the airline policy."
CANCEL = "Hi, I want to cancel my reservation EHGLP3 and get a refund."
BAGS = "Hello, please add two checked bags to my booking."


def conversation_episode(task_id: str, opening: str):
    ep = bm.episode(POLICY, task_id, True)
    task = replace(ep.task, mode="conversation")
    return replace(ep, task=task, trajectory=replace(ep.trajectory, initial_observation=opening))


def conversation_query(opening: str):
    q = bm.query(POLICY, "new", context=opening)
    return replace(q, task=replace(q.task, mode="conversation"))


def test_task_text_puts_the_users_request_first_only_for_conversations():
    steps = Task(id="a", benchmark="b", instruction="Stack the blocks.")
    chat = replace(steps, mode="conversation")
    assert task_text(steps, "You see a table.") == "Stack the blocks."
    assert task_text(chat, "") == "Stack the blocks."
    assert task_text(chat, " I need help. ") == "I need help.\n\nStack the blocks."


@pytest.mark.parametrize("name", ["reasoningbank", "g_memory"])  # MemoryBank keys on its LLM summaries
def test_conversations_with_one_policy_recall_by_the_users_request(name):
    memory = registry.build("memory", name, {}, services=bm.services())
    memory.observe(conversation_episode("cancel-1", CANCEL))
    memory.observe(conversation_episode("bags-1", BAGS))
    sources = []
    for opening in ("I would like to cancel a reservation, refund please", "Can you add checked bags to my booking?"):
        items = memory.recall(conversation_query(opening))
        assert items, name
        meta = items[0].metadata
        sources.append(meta.get("source_task") or meta.get("task_id") or meta.get("entry_task") or items[0].text)
    assert sources[0] != sources[1], (name, sources)
