"""Mock answers to the memory baselines' prompts, and small builders for their tests.

`baselines_memory` is a mock policy: it recognises each baseline's memory-side
prompt by its system message and answers in that prompt's format, echoing
words of the task so that retrieval by similarity can be tested; everything
else (the agents' prompts) goes to the `oracle` policy, which solves the toy
benchmarks. `options.garble` lists prompt keys to answer with nonsense, to
test that unparsable replies are skipped, never fatal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.mock import _oracle, register_mock_policy
from aecg_bench.llm.providers import Request
from aecg_bench.types import (
    Action,
    DecisionNode,
    Episode,
    Observation,
    Outcome,
    RecallQuery,
    Step,
    Task,
    Trajectory,
)
from baselines import memorybank
from baselines.conmem import prompts as CP
from baselines.g_memory import prompts as GP

POLICY = "baselines_memory"
GARBLE = "I am not sure what you want me to do here."


def _task_of(user: str) -> str:
    for pattern in (r"<task>(.*?)</task>", r"\*\*Query:\*\* (.*)", r"## Task\n(.*)", r"Task: (.*)"):
        m = re.search(pattern, user)
        if m:
            return " ".join(m.group(1).split())
    return "the task"


def _key(system: str) -> str | None:
    if system == memorybank.SUMMARY_SYSTEM:
        return "memorybank.summary"
    if "**successfully accomplished the task**" in system:
        return "reasoningbank.success"
    if "**attempted the task but failed**" in system:
        return "reasoningbank.failure"
    table = {
        GP.KEY_STEPS_SYSTEM: "g_memory.key_steps",
        GP.MISTAKES_SYSTEM: "g_memory.mistakes",
        GP.RELEVANCE_SYSTEM: "g_memory.relevance",
        GP.MERGE_SYSTEM: "g_memory.merge",
        CP.EXTRACT_SYSTEM: "conmem.extract",
        CP.REFLECT_SYSTEM: "conmem.reflect",
        CP.MERGE_SYSTEM: "conmem.merge",
    }
    if system in table:
        return table[system]
    if system.startswith(GP.COMPARE_SYSTEM):
        return "g_memory.compare"
    if system.startswith(GP.SUCCESS_SYSTEM):
        return "g_memory.success"
    if system.startswith(CP.COMPRESS_SYSTEM.split("{")[0]):
        return "conmem.compress"
    return None


def reply_for(key: str, user: str) -> str:
    task = _task_of(user)
    if key == "memorybank.summary":
        return f"Summary: The team worked on '{task}' and followed the observations step by step."
    if key.startswith("reasoningbank."):
        verb = "worked" if key.endswith("success") else "failed"
        return (
            "Thinking about why it " + verb + ".\n"
            f"# Memory Item 1\n## Title Approach for {task}\n## Description What {verb} on {task}.\n"
            f"## Content For tasks like {task}, read the observation before acting.\n\n"
            f"# Memory Item 2\n## Title Check the goal\n## Description Verify the goal.\n"
            "## Content Confirm the goal is met before finishing."
        )
    if key == "g_memory.key_steps":
        return f"Understand the goal: {task}.\nAct on the observation: take the action the goal needs."
    if key == "g_memory.mistakes":
        return "The agent stopped before the required state was reached."
    if key == "g_memory.relevance":
        return "Score: 7"
    if key == "g_memory.compare":
        return (
            "ADD: Check the current state against the goal before finishing, because finishing early fails.\n"
            "AGREE 1: keep it."
        )
    if key == "g_memory.success":
        return "ADD: Act on the latest observation, because it tells what is left to do."
    if key == "g_memory.merge":
        return "1. Check the state against the goal before finishing.\n2. Act on the latest observation."
    if key == "conmem.reflect":
        return (
            "<reflection>Root cause: the agent finished early.\nWhat went wrong: stopped too soon.\n"
            "What should have been done: check the goal.\nGeneral lesson: verify before finishing.</reflection>"
        )
    if key == "conmem.compress":
        return f"<compressed_trajectory>Task: {task}\nOutcome: see above</compressed_trajectory>"
    if key == "conmem.extract":
        card = {
            "structured_content": {
                "state": f"Tasks like {task}.",
                "plan": f"For {task}: read the observation, then act toward the goal.",
                "eval": "Verify the goal is reached; finishing early is a failure.",
            },
            "trigger_semantics": [f"when asked to {task}", "when the goal state is stated"],
            "summary": f"Reusable approach for {task}.",
            "evidence": "outcome: recorded because the trajectory ended.",
            "source_agent": "solver",
            "source_steps": [1],
        }
        return "<cards>" + json.dumps([card]) + "</cards>"
    if key == "conmem.merge":
        merged = {
            "structured_content": {"plan": "Read the observation, then act toward the goal."},
            "trigger_semantics": ["when the goal state is stated"],
            "summary": "Merged approach.",
            "evidence": "outcome: merged.",
        }
        return "<merged_card>" + json.dumps(merged) + "</merged_card>"
    raise KeyError(key)


def memory_policy(request: Request, spec: ModelSpec) -> Any:
    system = str(request.messages[0].get("content") or "") if request.messages else ""
    key = _key(system)
    if key is None:
        return _oracle(request, spec)
    if key in spec.options.get("garble", ()):
        return str(spec.options.get("garble_text", GARBLE))
    user = str(request.messages[-1].get("content") or "")
    return reply_for(key, user)


register_mock_policy(POLICY, memory_policy)


# -- builders ------------------------------------------------------------------------


def client(tmp_path: Path | None = None, **options: Any) -> LLMClient:
    """A mock client answering with `memory_policy` (cached when a tmp_path is given)."""
    spec = ModelSpec(label="mock", provider="mock", model="mock/test", options={"policy": POLICY} | options)
    cache = ResponseCache(tmp_path / "cache.sqlite" if tmp_path else None, "read_write" if tmp_path else "off")
    return LLMClient({"mock": spec}, {"default": "mock"}, cache)


def services(tmp_path: Path | None = None, seed: int = 0, **options: Any) -> MemoryServices:
    llm = client(tmp_path, **options)
    return MemoryServices(llm=llm, embedder=Embedder("lexical"), audit=AuditLog(), seed=seed)


def task(text: str, task_id: str, benchmark: str = "unit") -> Task:
    return Task(id=task_id, benchmark=benchmark, instruction=text, task_type="unit")


def episode(
    text: str,
    task_id: str,
    success: bool | None,
    *,
    recalled: tuple[str, ...] = (),
    actions: tuple[str, ...] = ("look", "finish"),
    critic: str = "",
    value: float | None = None,
) -> Episode:
    traj = Trajectory(task_id=task_id, framework="unit", initial_observation=f"Start of {text}.")
    parents: tuple[str, ...] = ()
    for i, act in enumerate(actions):
        node = DecisionNode(
            id=f"d{len(traj.decisions)}",
            agent="solver",
            role="actor",
            level="agent",
            parents=parents,
            recalled_memory_ids=recalled if i == 0 else (),
            output=act,
            action=Action(kind="command", text=act),
            step=i,
        )
        traj.add_decision(node)
        traj.steps.append(Step(i, Action(kind="command", text=act), Observation(f"after {act}"), node.id))
        parents = (node.id,)
    if critic:
        traj.add_decision(
            DecisionNode(id=f"d{len(traj.decisions)}", agent="critic", role="critic", level="event", output=critic)
        )
    if value is None and success is not None:
        value = float(success)
    return Episode(task=task(text, task_id), trajectory=traj, outcome=Outcome(success=success, value=value))


def query(text: str, task_id: str, role: str = "actor", context: str = "") -> RecallQuery:
    return RecallQuery(task=task(text, task_id), level="agent", agent="solver", role=role, context=context)


SORT = "Sort the list of numbers in ascending order and return the sorted list"
SORT_SIMILAR = "Sort the list of integers in ascending order"
TRANSLATE = "Translate the French sentence into German"
