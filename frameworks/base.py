"""What every framework adapter shares: decisions, memory in prompts, the environment loop.

Every framework makes its LLM decisions through `Decider.decide`, which

- recalls memory at the decision's scope (level, agent, role) through the
  memory method, once per task or at every decision (`ctx.retrieval`),
- puts recalled items into the prompt through the one formatter
  (`format_memory`), so no framework phrases memory differently,
- calls the LLM client (model of role `agent`, or the model a router chose;
  usage accounted under the decision's role: planner, executor, critic, ...),
- appends a `DecisionNode` (level, agent, role, parents, recalled ids, prompt
  hash, output, action) to the trajectory's decision graph.

`decide_many` makes several independent decisions concurrently (MacNet's
nodes of one layer): recall and recording stay serial and in request order,
so decision ids, the graph and memory's view never depend on thread timing.

`EnvLoop` steps the environment, records each transition against the decision
that caused it and enforces the limits: the task's step limit and a bound on
consecutive unparsable outputs. No loop in a framework runs without a bound.
`EnvLoop.take` is the one way an acting decision's reply becomes a step: parsed
into an action, or counted unparsable with a note the next acting decision is
shown (`EnvLoop.note`), so the retry can differ; every framework re-asks
through it.

`Transcript` is what every agent of every framework is shown of the
environment (the step prompt, or the chat in a conversation), and
`with_notes` is how teammates' messages enter a prompt, so frameworks differ
in who decides what, not in how the task is presented.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aecg_bench.contracts import AgentContext, Environment
from aecg_bench.llm.client import Completion
from aecg_bench.llm.structured import OutputSchema
from aecg_bench.types import (
    Action,
    DecisionNode,
    Level,
    MemoryItem,
    Observation,
    RecallQuery,
    Status,
    Step,
    Task,
    Trajectory,
)

MEMORY_HEADER = "Relevant experience from earlier tasks (use it only where it applies):"


def format_memory(items: list[MemoryItem]) -> str:
    """The single way memory text enters a prompt, for every framework and method."""
    if not items:
        return ""
    lines = [MEMORY_HEADER]
    for item in items:
        body = " ".join(item.text.split()) if len(item.text) < 400 else item.text.strip()
        lines.append(f"- [{item.kind}] {body}")
    return "\n".join(lines)


def prompt_hash(messages: list[dict[str, Any]]) -> str:
    blob = json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def task_brief(task: Task) -> str:
    """Task text plus how to act, as every framework states it."""
    parts = [f"Task: {task.instruction.strip()}"]
    if task.action_hint:
        parts.append(task.action_hint.strip())
    return "\n".join(parts)


_PREFIX = re.compile(r"^\s*(?:action|command|next action|answer)\s*[:>\-]\s*", re.I)


def parse_command(text: str) -> str | None:
    """The action in a step-wise reply: the first non-empty line, minus 'Action:' style prefixes
    and code fences. None when nothing usable remains."""
    for raw in text.replace("```", "\n").splitlines():
        line = _PREFIX.sub("", raw).strip().strip("`").strip()
        if line.lower() in {"", "python", "text", "plaintext"}:
            continue
        return line
    return None


@dataclass(frozen=True)
class Decision:
    node: DecisionNode
    completion: Completion


RECALL_CONTEXT_CHARS = 2000  # recall context kept on a decision node (what memory fixtures replay against)


@dataclass(frozen=True)
class DecisionRequest:
    """Everything one decision needs; `Decider.decide` takes the same fields as keywords.

    `action_grammar=False` drops the task's action grammar for decisions whose
    output is not an action (plans, critiques, routes); `grammar` is the
    decision's own output grammar (a critic's verdict, a router's decision),
    `schema` the same shape as a JSON object for providers that take a JSON
    schema or a forced tool call instead (`ModelSpec.structured_output`).
    `llm_role` picks the model (`model.roles`; `model` names one directly);
    the call's usage is accounted under `account` (default: the decision's
    `role`), so a run's cost splits by role. `framework_memory` is the
    framework's own experience (AgentNet's pools): it is formatted by the same
    formatter but is not memory-method recall, so its ids are not recorded as
    recalled.
    """

    agent: str
    role: str
    level: Level
    system: str
    user: str = ""
    history: list[dict[str, Any]] | None = None
    parents: tuple[str, ...] = ()
    step: int | None = None
    use_memory: bool = True
    recall_context: str = ""
    action: Action | None = None
    tools: list[dict[str, Any]] | None = None
    grammar: str | None = None
    schema: OutputSchema | None = None
    action_grammar: bool = True
    temperature: float | None = None
    max_tokens: int | None = None
    llm_role: str = "agent"
    model: str | None = None  # a model label for this decision (AgentNet's per-agent models)
    account: str = ""
    framework_memory: tuple[MemoryItem, ...] = ()
    preamble: str = ""


@dataclass(frozen=True)
class _Prepared:
    request: DecisionRequest
    messages: list[dict[str, Any]]
    items: list[MemoryItem] = field(default_factory=list)


class Decider:
    """Makes and records the LLM decisions of one task."""

    def __init__(self, task: Task, ctx: AgentContext, trajectory: Trajectory) -> None:
        self.task = task
        self.ctx = ctx
        self.trajectory = trajectory
        self._per_task: dict[tuple[str, str, str], list[MemoryItem]] = {}

    def recall(self, *, level: Level, agent: str, role: str, context: str = "", step: int = 0) -> list[MemoryItem]:
        scope = (level, agent, role)
        if self.ctx.retrieval == "per_task" and scope in self._per_task:
            return self._per_task[scope]
        items = self.ctx.memory.recall(
            RecallQuery(task=self.task, level=level, agent=agent, role=role, context=context, step=step)
        )
        if self.ctx.retrieval == "per_task":
            self._per_task[scope] = items
        return items

    def decide(self, **fields: Any) -> Decision:
        """Recall (at this decision's scope), prompt, call, record; keywords as in `DecisionRequest`.

        `history` is the chat so far (conversation mode); `user` is appended as
        the final user turn when given. `action` is filled in by the caller via
        `attach_action` once the output is parsed.
        """
        prepared = self._prepare(DecisionRequest(**fields))
        return self._record(prepared, self._complete(prepared))

    def decide_many(self, requests: Sequence[DecisionRequest], max_workers: int = 1) -> list[Decision]:
        """Independent decisions, LLM calls concurrent; recall and recording serial in request order."""
        prepared = [self._prepare(r) for r in requests]
        if max_workers <= 1 or len(prepared) <= 1:
            completions = [self._complete(p) for p in prepared]
        else:
            with ThreadPoolExecutor(max_workers=min(max_workers, len(prepared))) as pool:
                completions = list(pool.map(self._complete, prepared))
        return [self._record(p, c) for p, c in zip(prepared, completions, strict=True)]

    def _prepare(self, req: DecisionRequest) -> _Prepared:
        items: list[MemoryItem] = []
        if req.use_memory:
            context = req.recall_context or req.user[-2000:]
            items = self.recall(level=req.level, agent=req.agent, role=req.role, context=context, step=req.step or 0)
        memory_text = format_memory([*items, *req.framework_memory])
        system_text = "\n\n".join(part for part in (req.preamble, req.system, memory_text) if part)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system_text}, *(req.history or [])]
        if req.user:
            messages.append({"role": "user", "content": req.user})
        return _Prepared(req, messages, items)

    def _complete(self, prepared: _Prepared) -> Completion:
        req = prepared.request
        grammar = req.grammar or ((self.task.action_grammar or None) if req.action_grammar else None)
        return self.ctx.llm.complete(
            prepared.messages,
            role=req.llm_role,
            model=req.model or (self.ctx.model if req.llm_role == "agent" else None),
            tools=req.tools,
            parallel_tool_calls=self.task.parallel_tool_calls,
            grammar=grammar,
            schema=req.schema,
            temperature=req.temperature,
            max_tokens=req.max_tokens,
            account=req.account or req.role,
        )

    def _record(self, prepared: _Prepared, completion: Completion) -> Decision:
        req = prepared.request
        node = DecisionNode(
            id=f"d{len(self.trajectory.decisions)}",
            agent=req.agent,
            role=req.role,
            level=req.level,
            parents=tuple(dict.fromkeys(req.parents)),
            recalled_memory_ids=tuple(i.id for i in prepared.items),
            prompt_hash=prompt_hash(prepared.messages),
            output=completion.text
            if not completion.tool_calls
            else json.dumps(
                [{"name": c.name, "arguments": c.arguments} for c in completion.tool_calls], sort_keys=True
            ),
            action=req.action,
            model=completion.model,
            step=req.step,
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
            recall_context=req.recall_context[-RECALL_CONTEXT_CHARS:] if req.use_memory else "",
        )
        self.trajectory.add_decision(node)
        return Decision(node=node, completion=completion)

    def attach_action(self, node: DecisionNode, action: Action) -> DecisionNode:
        """Record the parsed action on a node (nodes are immutable, so it is replaced)."""
        updated = DecisionNode(**{**node.__dict__, "action": action})
        decisions = self.trajectory.decisions
        decisions[decisions.index(node)] = updated
        return updated


class EnvLoop:
    """Steps an environment for one task and enforces the limits."""

    def __init__(
        self, env: Environment, task: Task, trajectory: Trajectory, ctx: AgentContext, max_steps: int | None = None
    ) -> None:
        self.env = env
        self.task = task
        self.trajectory = trajectory
        self.ctx = ctx
        caps = [c for c in (task.max_steps, max_steps, ctx.max_steps) if c]
        self.max_steps = min(caps)
        self.unparsable_in_row = 0
        self.note = ""  # feedback on the last unreadable acting reply, shown to the next acting decision
        self.last: Observation | None = None

    def reset(self) -> Observation:
        self.last = self.env.reset()
        self.trajectory.initial_observation = self.last.text
        return self.last

    @property
    def steps_taken(self) -> int:
        return len(self.trajectory.steps)

    @property
    def finished(self) -> bool:
        return (self.last is not None and self.last.done) or self.trajectory.status != Status.OK or self.out_of_steps

    @property
    def out_of_steps(self) -> bool:
        return self.steps_taken >= self.max_steps

    def act(self, action: Action, decision_id: str | None) -> Observation:
        obs = self.env.step(action)
        self.trajectory.steps.append(
            Step(index=self.steps_taken, action=action, observation=obs, decision_id=decision_id)
        )
        if not obs.valid:
            self.trajectory.invalid_actions += 1
        self.unparsable_in_row = 0
        self.last = obs
        if self.ctx.on_step is not None:
            self.ctx.on_step(self.steps_taken)
        return obs

    def take(self, decider: Decider, transcript: Transcript, decision: Decision) -> bool:
        """Step with an acting decision's reply: parsed into an action for the task's mode, attached to its node,
        executed and recorded in the transcript. A reply that gives no action is counted (`unparsable`) and
        leaves `note` for the next acting decision. False when the reply gave no action."""
        action = action_from_completion(self.task, decision.completion)
        if action is None:
            self.note = unparsable_note(self.task, decision.completion.text)
            self.unparsable(decision.completion.text)
            return False
        self.note = ""
        decider.attach_action(decision.node, action)
        transcript.record(action, self.act(action, decision.node.id))
        return True

    def readable(self) -> None:
        """A reply that was read though it is no action (a route, a hand-over): the run of unparsable outputs ends."""
        self.unparsable_in_row = 0

    def unparsable(self, output: str, *, action: bool = True) -> bool:
        """Count an output that could not be read; True when the bound is reached (the sample ends as
        model_error). `action=False` for decisions whose output is not an action (routes): they count
        toward the bound but not as invalid actions."""
        self.unparsable_in_row += 1
        self.trajectory.invalid_actions += int(action)
        if self.unparsable_in_row > self.ctx.max_invalid_actions:
            self.trajectory.status = Status.MODEL_ERROR
            self.trajectory.error = f"{self.unparsable_in_row} unparsable outputs in a row; last: {output[:200]!r}"
            return True
        return False

    def close_out(self) -> None:
        """Mark a task that ran out of steps without finishing."""
        if self.trajectory.status == Status.OK and not (self.last and self.last.done) and self.out_of_steps:
            self.trajectory.status = Status.LIMIT_EXCEEDED
            self.trajectory.error = f"step limit {self.max_steps} reached"


def action_from_completion(task: Task, completion: Completion) -> Action | None:
    """Turn a model reply into an action for the task's mode; None when unparsable.

    In conversations a reply with tool calls is a tool action that keeps the reply's text beside the
    calls (tau2's AssistantMessage holds both: the calls go to the environment, the text stays in the
    agent's history and counts for COMMUNICATE)."""
    if task.mode == "conversation":
        if completion.tool_calls:
            return Action(kind="tool", text=completion.text.strip(), tool_calls=completion.tool_calls)
        text = completion.text.strip()
        return Action(kind="message", text=text) if text else None
    if task.mode == "answer":
        text = completion.text.strip()
        return Action(kind="answer", text=text) if text else None
    if task.reads_whole_reply:  # the benchmark reads its own answer format (Mind2Web: MindAct's "Answer: X")
        text = completion.text.strip()
        return Action(kind="command", text=text) if text else None
    command = parse_command(completion.text)
    return Action(kind="command", text=command) if command else None


def conversation_turns(action: Action, obs: Observation) -> list[dict[str, Any]]:
    """Chat turns (OpenAI shape) that record one conversation step for the next prompt."""
    if action.kind == "tool":
        calls = [
            {
                "id": c.id or f"call_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments, sort_keys=True)},
            }
            for i, c in enumerate(action.tool_calls)
        ]
        turns: list[dict[str, Any]] = [{"role": "assistant", "content": action.text, "tool_calls": calls}]
        results = obs.info.get("tool_results") or [{"content": obs.text}] * len(calls)
        for call, res in zip(calls, results, strict=False):
            turns.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["function"]["name"],
                    "content": str(res.get("content", "")),
                }
            )
        return turns
    turns = [{"role": "assistant", "content": action.text}]
    if obs.text:
        turns.append({"role": "user", "content": obs.text})
    return turns


ENDINGS = {
    "act": "Next action:",
    "planner": "Plan (numbered steps):",
    "critic": "Verdict (APPROVE, or REJECT: <reason>):",
    "router": "Decision:",
    "instructor": "Instructions for the next node (at most two):",
    "review": "Your comment with the highest priority and how to fix it (or <INFO> Finished):",
}
"""The last line of a decision's prompt, by what the decision produces: only acting decisions are
asked for an action; planners, critics, routers and instructors get their own output's cue."""


def step_prompt(
    task: Task, traj: Trajectory, observation: str, window: int, note: str = "", ending: str = ENDINGS["act"]
) -> str:
    """The user turn of a step-wise or one-answer decision: task, recent steps, current observation.

    The current observation comes last so that the latest state is what the
    model reads right before it answers.
    """
    recent = traj.steps[-window:] if window else []
    lines = [task_brief(task)]
    if recent:  # the last step's observation is the current one, shown below
        shown = [f"> {s.action.text}\n{s.observation.text}" for s in recent[:-1]]
        lines.append("Recent steps:\n" + "\n".join([*shown, f"> {recent[-1].action.text}"]))
    if note:
        lines.append(note)
    lines.append(f"Current observation:\n{observation}")
    lines.append(ending)
    return "\n\n".join(lines)


ACT_INSTRUCTIONS = {
    "steps": "Reply with exactly one action on the first line, with no explanation.",
    "answer": "Reply with the final answer only.",
    "conversation": "Follow the task and policy; use the tools to read and change data, "
    "and talk to the user in plain text.",
}
"""How an action-producing decision is asked to reply, by task mode (the same in every framework)."""


def unparsable_note(task: Task, output: str) -> str:
    """Feedback shown to the acting agent after a reply that gave no action, so a retry can differ."""
    return f"Your previous reply could not be read as an action: {output[:200]!r}. {ACT_INSTRUCTIONS[task.mode]}"


def unreadable_note(output: str) -> str:
    """Feedback shown to a router or critic re-asked after a reply that named none of its options."""
    return f"Your previous reply could not be read: {output[:200]!r}. Reply with one line."


def render_chat(chat: Sequence[dict[str, Any]]) -> str:
    """A conversation as plain text: one line per turn, tool calls and results spelled out."""
    lines = []
    for turn in chat:
        role = turn.get("role")
        if role == "assistant" and turn.get("tool_calls"):
            calls = ", ".join(
                f"{c['function']['name']}({c['function'].get('arguments', '')})" for c in turn["tool_calls"]
            )
            if turn.get("content"):
                lines.append(f"[agent] {turn['content']}")
            lines.append(f"[agent calls] {calls}")
        elif role == "tool":
            lines.append(f"[tool {turn.get('name', '')}] {turn.get('content', '')}")
        else:
            lines.append(f"[{'agent' if role == 'assistant' else 'user'}] {turn.get('content', '')}")
    return "\n".join(lines)


def with_notes(system: str, notes: Sequence[tuple[str, str]], title: str = "Messages from your team") -> str:
    """A system prompt with teammates' messages (`(sender, text)`) appended in order.

    Notes go into the system turn so a conversation's chat keeps its native
    shape (tool calls, tool results, user turns) for every framework.
    """
    if not notes:
        return system
    body = "\n".join(f"[{sender}] {text.strip()}" for sender, text in notes)
    return f"{system}\n\n{title}:\n{body}"


class Transcript:
    """What an agent is shown of the environment, the same in every framework.

    Step-wise and one-answer tasks: one user turn from `step_prompt`.
    Conversations: the chat so far in OpenAI shape (user turns, tool calls,
    tool results), started with the user's first message; the task brief (a
    conversation task's standing instructions, tau2's agent system prompt) goes
    at the head of every decision's system message (`preamble`), where the
    original puts it.
    """

    def __init__(self, task: Task, trajectory: Trajectory, window: int) -> None:
        self.task = task
        self.trajectory = trajectory
        self.window = window
        self.chat: list[dict[str, Any]] = []
        self.observation = ""

    def start(self, obs: Observation) -> None:
        self.observation = obs.text
        if self.task.mode == "conversation":
            self.chat = [{"role": "user", "content": obs.text}]

    def record(self, action: Action, obs: Observation) -> None:
        self.observation = obs.text
        if self.task.mode == "conversation":
            self.chat += conversation_turns(action, obs)

    def view(self, note: str = "", *, acting: bool = True, ending: str = "") -> dict[str, Any]:
        """`user=` or `history=` keywords for `Decider.decide` (conversations: with `preamble=`).

        A conversation is shown as the native chat to decisions that act in it
        (they are offered the tools); decisions that only talk about it
        (critics, routers) get it as text, so no tool turns reach a request
        that offers no tools. `ending` is the prompt's last line (`ENDINGS`);
        by default the acting cue for acting decisions and none for others.
        """
        ending = ending or (ENDINGS["act"] if acting else "")
        if self.task.mode != "conversation":
            return {"user": step_prompt(self.task, self.trajectory, self.observation, self.window, note, ending)}
        preamble = "\n".join(p.strip() for p in (self.task.instruction, self.task.action_hint) if p.strip())
        if acting:  # the native chat; no note is added to it, so no turn speaks for the user
            return {"history": list(self.chat), "preamble": preamble}
        parts = ["Conversation so far:", render_chat(self.chat)]
        if note:
            parts.append(note)
        if ending:
            parts.append(ending)
        return {"user": "\n\n".join(parts), "preamble": preamble}

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The task's tools in OpenAI shape (offered to decisions that may act in a conversation)."""
        return [t.to_openai() for t in self.task.tools] or None
