"""The AutoGen adapter: an autogen-agentchat SelectorGroupChat per environment step.

See the package docstring (`frameworks.autogen`) for the spec.
"""

from __future__ import annotations

import asyncio
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import FunctionalTermination, MaxMessageTermination
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, TextMessage
from autogen_agentchat.teams import SelectorGroupChat
from autogen_core.model_context import HeadAndTailChatCompletionContext
from pydantic import Field

from aecg_bench.contracts import AgentContext, Environment, Framework, Params
from aecg_bench.llm.structured import OutputSchema, json_object
from aecg_bench.types import Action, Task, Trajectory
from frameworks.autogen.bridge import ENVIRONMENT, AgentSpec, BridgeClient, NoSelectorModel, TeamState
from frameworks.base import (
    ACT_INSTRUCTIONS,
    ENDINGS,
    Decider,
    Decision,
    EnvLoop,
    Transcript,
    action_from_completion,
)

TEAM = "a team of three agents: a planner, an executor and a critic"
PLANNER = (
    f"You are the planner of {TEAM}. Write a short plan for the whole team: at most five numbered steps "
    "that lead from the current state to the goal. Do not act yourself."
)
EXECUTOR = f"You are the executor of {TEAM}. Follow the plan and take the critic's feedback into account."
CRITIC = (
    f"You are the critic of {TEAM}. Check the executor's latest proposal for this step against the task, "
    "the plan and the current state. If it is sound, reply APPROVE. Otherwise reply REJECT: and one short reason."
)
SOLVER = "You are a capable agent that solves problems."
HELPER = (
    "You assist the solver agent. You are called because the solver has proposed the same thing several times "
    "in a row and is stuck. Work out what is going wrong and propose a different way forward; do not repeat "
    "the solver's approach."
)
_VERDICT = re.compile(r"^\W*(approve|reject)\b\W*(.*)", re.I | re.S)
VERDICT_GRAMMAR = 'root ::= "APPROVE" | "REJECT: " [^\\n]{1,200}'
"""The critic's output grammar (GBNF, for grammar-capable models): a verdict, nothing else."""


VERDICT_SCHEMA = OutputSchema(
    "verdict",
    {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["APPROVE", "REJECT"]},
            "reason": {"type": "string", "description": "why the proposal is rejected; empty when approved"},
        },
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    },
    "The critic's verdict on the executor's latest proposal.",
)
"""The verdict as a JSON object, for providers with structured output (JSON schema or a tool call)."""


def parse_verdict(text: str) -> str:
    """`approve`, `reject` or `unparsed`: a reply that names no verdict is not an approval."""
    m = _VERDICT.match(text or "")
    return m.group(1).lower() if m else "unparsed"


def read_verdict(decision: Decision) -> str:
    """The verdict of a critic decision, from its JSON object when the provider was asked for one
    (`VERDICT_SCHEMA`), else (or when the reply is no JSON object at all) from its line; an object
    without a valid verdict is `unparsed`."""
    obj = json_object(decision.node.output) if decision.completion.structured else None
    if obj is None:
        return parse_verdict(decision.node.output)
    verdict, reason = obj.get("verdict"), obj.get("reason")
    if verdict == "APPROVE":
        return parse_verdict("APPROVE")
    if verdict == "REJECT" and isinstance(reason, str):
        return parse_verdict(f"REJECT: {reason}")
    return "unparsed"


class AutoGenParams(Params):
    variant: Literal["team", "gmemory"] = Field(
        "team", description="team: planner + executor + critic; gmemory: G-Memory's solver + stuck helper"
    )
    critic: bool = Field(True, description="team: the critic reviews every executor proposal")
    max_revisions: int = Field(
        1, ge=0, le=5, description="team: executor revisions after a critic reply that does not approve"
    )
    replan_every: int = Field(0, ge=0, description="team: the planner speaks again every N steps (0 = once)")
    stuck_repeats: int = Field(2, ge=1, description="gmemory: helper steps in when a proposal repeats the last N")
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    context_messages: int = Field(12, ge=2, description="tail of each AutoGen agent's message context")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


class _Protocol(ABC):
    """Who speaks in one environment step and when the step's exchange is over."""

    max_turns: int  # bound on agent turns in one step's exchange

    def __init__(self, task: Task, trajectory: Trajectory) -> None:
        self.task = task
        self.trajectory = trajectory
        self.step = 0
        self.done = False
        self.proposal: Decision | None = None
        self.action: Action | None = None

    @abstractmethod
    def agents(self) -> list[AgentSpec]: ...

    @abstractmethod
    def select(self, messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> str:
        """The next speaker (AutoGen's selector_func): a rule, never a model call."""

    @abstractmethod
    def on_decision(self, spec: AgentSpec, decision: Decision) -> None:
        """Update the step's state after an agent's reply (proposal, verdict, done)."""

    def begin_step(self, step: int) -> None:
        self.step, self.done, self.proposal, self.action = step, False, None, None

    def propose(self, decision: Decision) -> Action | None:
        self.proposal = decision
        self.action = action_from_completion(self.task, decision.completion)
        return self.action


class TeamProtocol(_Protocol):
    """Planner (team level) when a plan is due, executor (agent level), critic (event level)."""

    def __init__(self, task: Task, trajectory: Trajectory, params: AutoGenParams) -> None:
        super().__init__(task, trajectory)
        self.params = params
        self.planned_at: int | None = None
        self.plan_due = True
        self.revisions = 0
        self.max_turns = 2 + 2 * (params.max_revisions + 1)
        self.verdicts: list[dict[str, object]] = []  # every critic reply: approve | reject | unparsed

    def agents(self) -> list[AgentSpec]:
        specs = [
            AgentSpec("planner", "planner", "team", PLANNER, persistent=True, ending=ENDINGS["planner"]),
            AgentSpec("executor", "executor", "agent", f"{EXECUTOR} {ACT_INSTRUCTIONS[self.task.mode]}", acts=True),
        ]
        if self.params.critic:
            specs.append(
                AgentSpec(
                    "critic",
                    "critic",
                    "event",
                    CRITIC,
                    ending=ENDINGS["critic"],
                    grammar=VERDICT_GRAMMAR,
                    schema=VERDICT_SCHEMA,
                )
            )
        return specs

    def begin_step(self, step: int) -> None:
        super().begin_step(step)
        every = self.params.replan_every
        self.plan_due = self.planned_at is None or (every > 0 and step - self.planned_at >= every)
        self.revisions = 0

    def select(self, messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> str:
        last = messages[-1].source
        if last == ENVIRONMENT:
            return "planner" if self.plan_due else "executor"
        return "critic" if last == "executor" else "executor"

    def on_decision(self, spec: AgentSpec, decision: Decision) -> None:
        if spec.name == "planner":
            self.planned_at, self.plan_due = self.step, False
        elif spec.name == "executor":
            self.done = self.propose(decision) is None or not self.params.critic
        else:
            # As AutoGen's critic pattern (a team that ends only when the critic's message approves,
            # TextMentionTermination("APPROVE")): any reply that is not an approval, a rejection or an
            # unreadable one, is feedback the executor revises on while revisions are left.
            verdict = read_verdict(decision)
            self.verdicts.append({"decision": decision.node.id, "step": self.step, "verdict": verdict})
            if verdict != "approve" and self.revisions < self.params.max_revisions:
                self.revisions += 1
            else:  # approved, or out of revisions: the latest proposal goes ahead
                self.done = True


class GMemoryProtocol(_Protocol):
    """G-Memory's "AutoGen": a solver acts; a helper replaces its proposal when it repeats itself."""

    def __init__(self, task: Task, trajectory: Trajectory, params: AutoGenParams) -> None:
        super().__init__(task, trajectory)
        self.repeats = params.stuck_repeats
        self.max_turns = 2

    def agents(self) -> list[AgentSpec]:
        act = ACT_INSTRUCTIONS[self.task.mode]
        return [
            AgentSpec("solver", "solver", "agent", f"{SOLVER} {act}", acts=True),
            AgentSpec("helper", "helper", "event", f"{HELPER} {act}", acts=True),
        ]

    def select(self, messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> str:
        return "solver" if messages[-1].source == ENVIRONMENT else "helper"

    def on_decision(self, spec: AgentSpec, decision: Decision) -> None:
        if spec.name == "solver":
            action = self.propose(decision)
            self.done = action is None or not self._stuck(action)
            return
        solver = self.proposal, self.action
        if self.propose(decision) is None:  # an unusable helper reply leaves the solver's proposal
            self.proposal, self.action = solver
        self.done = True

    def _stuck(self, action: Action) -> bool:
        recent = self.trajectory.steps[-self.repeats :]
        return len(recent) == self.repeats and all(_key(s.action) == _key(action) for s in recent)


def _key(action: Action) -> str:
    calls = [[c.name, c.arguments] for c in action.tool_calls]
    return json.dumps([action.kind, " ".join(action.text.split()).lower(), calls], sort_keys=True)


class AutoGenFramework(Framework):
    name = "autogen"
    version = "3"
    Params = AutoGenParams

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the usual case: no event loop in this thread
            return asyncio.run(self._run(task, env, ctx))
        with ThreadPoolExecutor(max_workers=1) as pool:  # called from async code (a notebook): own loop, own thread
            return pool.submit(asyncio.run, self._run(task, env, ctx)).result()

    async def _run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        p = self.params
        traj = ctx.trajectory
        decider = Decider(task, ctx, traj)
        loop = EnvLoop(env, task, traj, ctx, p.max_steps)
        transcript = Transcript(task, traj, p.history_window)
        transcript.start(loop.reset())
        protocol = (TeamProtocol if p.variant == "team" else GMemoryProtocol)(task, traj, p)
        specs = protocol.agents()
        state = TeamState(decider, transcript, loop, {s.name: s for s in specs}, protocol.on_decision)
        team = self._team(specs, state, protocol, ctx.llm.model_for("agent", ctx.model).model)
        traj.metadata["autogen"] = {
            "variant": p.variant,
            "team": type(team).__name__,
            "agents": {s.name: {"role": s.role, "level": s.level} for s in specs},
            "verdicts": getattr(protocol, "verdicts", []),
        }
        while not loop.finished:
            protocol.begin_step(loop.steps_taken)
            message = TextMessage(content=transcript.observation or "(no observation)", source=ENVIRONMENT)
            try:
                await team.run(task=message)
            except Exception:
                if state.error is not None:
                    raise state.error from None
                raise
            if protocol.proposal is None:  # the exchange ended without a proposal: nothing to act on
                loop.unparsable("")
                continue
            loop.take(decider, transcript, protocol.proposal)
        loop.close_out()
        return traj

    def _team(self, specs: list[AgentSpec], state: TeamState, protocol: _Protocol, model: str) -> SelectorGroupChat:
        agents = [
            AssistantAgent(
                spec.name,
                BridgeClient(state, spec, model),
                system_message=spec.system,
                description=f"the {spec.role}",
                model_context=HeadAndTailChatCompletionContext(head_size=2, tail_size=self.params.context_messages),
            )
            for spec in specs
        ]
        turns = protocol.max_turns
        return SelectorGroupChat(
            agents,
            model_client=NoSelectorModel(),
            selector_func=protocol.select,
            termination_condition=FunctionalTermination(lambda _: protocol.done) | MaxMessageTermination(turns + 1),
            max_turns=turns,
            allow_repeated_speaker=True,
        )
