"""Builders shared by the AECG tests: hand-made decision graphs, a memory wired to the mock model,
and a toy stream whose outcomes shift so that governance has something to find."""

from __future__ import annotations

import re
from typing import Any

from conftest import mock_client

from aecg_bench.aecg.method import AECGMemory
from aecg_bench.aecg.mock_policy import memory_answer
from aecg_bench.audit import AuditLog
from aecg_bench.benchmarks.toy import _OBS, ToyBenchmark, mock_oracle
from aecg_bench.contracts import MemoryServices
from aecg_bench.llm.client import LLMClient
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.llm.mock import last_text, register_mock_policy, route_reply
from aecg_bench.llm.providers import Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Action, DecisionNode, Episode, Outcome, Sample, Task, Trajectory

Node = tuple[str, str, tuple[str, ...], tuple[str, ...], str]  # id, level, parents, recalled ids, action


def episode(
    task_id: str,
    nodes: list[Node],
    success: bool,
    *,
    task_type: str = "sort",
    instruction: str = "Sort the numbers in the list.",
    observation: str = "The list is unsorted.",
) -> Episode:
    task = Task(id=task_id, benchmark="hand", instruction=instruction, task_type=task_type)
    traj = Trajectory(task_id=task_id, framework="hand", initial_observation=observation)
    for nid, level, parents, recalled, action in nodes:
        traj.add_decision(
            DecisionNode(
                id=nid,
                agent=f"{level}-agent",
                role="planner" if level == "team" else "worker",
                level=level,  # type: ignore[arg-type]
                parents=parents,
                recalled_memory_ids=recalled,
                output=action,
                action=Action(kind="command", text=action),
            )
        )
    return Episode(task=task, trajectory=traj, outcome=Outcome(success=success, value=1.0 if success else 0.0))


_FIRST_STEP = re.compile(r"Procedure: 1\) (.*?)(?= \d\) | Avoid: |$)", re.M)


def hand_agent(request: Request, spec: ModelSpec) -> str:
    """The hand-built world's agent, for decisions the replay gate re-executes: it does the first
    step of the skill it is shown, except on a long list, where a skill that says to check the goal
    makes it check first (the repair's effect); with no skill it looks around."""
    system = str(request.messages[0].get("content") or "")
    step = _FIRST_STEP.search(system)
    if step is None:
        return "look around"
    if "long" in last_text(request) and "check that the goal is reached" in system:
        return "check the goal first"
    return step[1]


register_mock_policy("hand_agent", hand_agent)


def make_memory(
    params: dict[str, Any] | None = None, llm: LLMClient | None = None, audit: AuditLog | None = None, **options: Any
) -> AECGMemory:
    client = llm or mock_client(policy=options.pop("policy", "aecg_oracle"), agent_policy="hand_agent", **options)
    services = MemoryServices(llm=client, embedder=Embedder("lexical"), audit=audit or AuditLog(), seed=0)
    return AECGMemory(params or {}, services=services)


def events(mem: AECGMemory, kind: str) -> list[dict[str, Any]]:
    return [e for e in mem.audit.read() if e["event"] == kind]


# -- a toy stream with a shift -------------------------------------------------------


class DriftToy(ToyBenchmark):
    """The toy benchmark reordered: easy right-walks, then long right-walks, then left-walks."""

    def samples(self, split: str = "test") -> list[Sample]:
        return sorted(
            super().samples(split),
            key=lambda s: (s.task.task_type == "left", s.task.metadata["difficulty"] == "hard"),
        )


INTERRUPT: dict[str, int | None] = {"after": None, "calls": 0}
"""Arm with INTERRUPT["after"] = n: the n-th model call raises KeyboardInterrupt (a simulated kill)."""


def drift_policy(request: Request, spec: ModelSpec) -> str:
    """Memory prompts: the aecg_oracle answers. Agents: the toy oracle, except that an agent
    given a right-walking skill stops at once on a left-walk (a misapplied skill: context
    narrowing fixes it) and on long walks unless the skill says to check the goal (a
    procedural defect: repair fixes it)."""
    INTERRUPT["calls"] = (INTERRUPT["calls"] or 0) + 1
    if INTERRUPT["after"] is not None and INTERRUPT["calls"] >= INTERRUPT["after"]:
        INTERRUPT["after"] = None
        raise KeyboardInterrupt
    answer = memory_answer(request, spec) or route_reply(request)  # AgentNet's routers keep their tasks
    if answer is not None:
        return answer
    system = str(request.messages[0]["content"])
    seen = _OBS.findall(last_text(request))
    if "tasks of type right" in system and seen:
        pos, target = (int(x) for x in seen[-1])
        if target < pos or (target - pos >= 3 and "check that the goal is reached" not in system):
            return "stop"
    return mock_oracle(request, spec)


register_mock_policy("aecg_drift_toy", drift_policy)


def embedded_client(grammar: bool):
    """SmolLM2-135M at the smoke preset's 96-token cap, with or without grammar support."""
    from aecg_bench.llm.cache import ResponseCache
    from aecg_bench.llm.client import LLMClient
    from aecg_bench.llm.spec import ModelSpec

    spec = ModelSpec(
        label="local",
        model="aecg-local/smollm2-135m-instruct-q8_0",
        native_tools=False,
        grammar=grammar,
        max_output_tokens=96,  # the smoke preset's cap
        options={"n_ctx": 1024, "n_threads": 1},  # the smoke preset's context
    )
    return LLMClient({"local": spec}, {"default": "local"}, ResponseCache(None, "off"))
