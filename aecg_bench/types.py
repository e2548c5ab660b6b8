"""Plain data types shared by every part of the harness.

They are the contract between benchmarks, frameworks, memory methods and the
runner, so they hold data only (no behaviour beyond (de)serialisation) and are
JSON-serialisable: trajectories, episodes and memory items are written to disk
and replayed on resume.

One split matters more than the others: a benchmark's `Sample` carries the gold
data its environment needs to score, while frameworks and memory methods only
ever receive the sample's public `Task`. Gold answers cannot leak into a prompt
or a memory because those components never hold them.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Literal

Level = Literal["team", "event", "agent"]
"""Coordination level of a decision: team = plan/decomposition/routing for the
whole team; event = a sub-task or step-level exchange between agents; agent =
one agent's own action."""

LEVELS: tuple[Level, ...] = ("team", "event", "agent")

TaskMode = Literal["steps", "answer", "conversation"]
"""How a task is solved: `steps` = a text environment that takes one command per
step (PDDL, ScienceWorld, FEVER ReAct, Mind2Web); `answer` = one final answer
(MBPP-Plus, FEVER claim-only); `conversation` = tool calls and messages to a
simulated user (tau2-bench, MMTB)."""


class Status(enum.StrEnum):
    """Why a sample ended. Every sample gets exactly one; none is dropped."""

    OK = "ok"
    MODEL_ERROR = "model_error"  # model output never became a valid action within the bound
    LIMIT_EXCEEDED = "limit_exceeded"  # step, turn or token limit reached before the task ended
    INFRA_ERROR = "infra_error"  # provider/simulator failure after retries; redone on resume


@dataclass(frozen=True)
class ToolSpec:
    """A function the agent may call (OpenAI function-calling shape)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class Task:
    """The public part of a sample: everything an agent or a memory may see."""

    id: str
    benchmark: str
    instruction: str
    mode: TaskMode = "steps"
    task_type: str = ""  # family used by routers and ability matrices (PDDL domain, ...)
    action_hint: str = ""  # how to phrase actions / answers, shown in prompts
    action_grammar: str = ""  # GBNF for one action; used only by models that accept grammars
    reads_whole_reply: bool = False  # steps mode: the environment parses the whole reply, not its first line
    parallel_tool_calls: bool = False  # conversations: a step may hold several tool calls (emulated calls too)
    tools: tuple[ToolSpec, ...] = ()
    max_steps: int = 30
    metadata: dict[str, Any] = field(default_factory=dict)  # public only (difficulty, ...)


@dataclass(frozen=True)
class Sample:
    """A benchmark item: the public task plus the gold data only its environment reads."""

    task: Task
    gold: dict[str, Any] = field(default_factory=dict)
    split: str = "test"

    @property
    def id(self) -> str:
        return self.task.id


UNPARSED_ARGUMENTS = "_unparsed"
"""The one key of a `ToolCall`'s arguments when the model's arguments were not a JSON object: their raw
text, kept so that an evaluator can treat them as its original does (MMTB: an error)."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""


ActionKind = Literal["command", "answer", "message", "tool"]


@dataclass(frozen=True)
class Action:
    """What an agent does to the environment.

    command: a free-text step ("pick up ball1", "Search[Paris]", "CLICK [3]");
    answer: the final answer of a one-shot task;
    message: text to the (simulated) user in a conversation;
    tool: one or more tool calls in a conversation.
    """

    kind: ActionKind
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Observation:
    """What the environment returns after reset or a step."""

    text: str
    reward: float = 0.0
    done: bool = False
    valid: bool = True  # False when the last action could not be parsed or applied
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    """Outcome of one sample as the benchmark's evaluator defines it."""

    success: bool
    value: float
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class DecisionNode:
    """One LLM decision inside a trajectory's decision graph.

    `parents` are the decisions whose outputs this one consumed; AECG reads
    levels for scope and parents for exposure and attribution, EDV reads the
    agent identity, G-Memory the interaction graph.
    """

    id: str
    agent: str
    role: str
    level: Level
    parents: tuple[str, ...] = ()
    recalled_memory_ids: tuple[str, ...] = ()
    prompt_hash: str = ""
    output: str = ""
    action: Action | None = None
    model: str = ""
    step: int | None = None
    input_tokens: int = 0  # this decision's call (per-node cost)
    output_tokens: int = 0
    recall_context: str = ""  # what memory recall matched for this decision (framework-chosen, clipped)


@dataclass(frozen=True)
class Step:
    """One environment transition, linked to the decision that produced it."""

    index: int
    action: Action
    observation: Observation
    decision_id: str | None = None


@dataclass
class Trajectory:
    """Everything that happened while a framework ran one task."""

    task_id: str
    framework: str
    initial_observation: str = ""
    steps: list[Step] = field(default_factory=list)
    decisions: list[DecisionNode] = field(default_factory=list)
    status: Status = Status.OK
    error: str = ""
    invalid_actions: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def add_decision(self, node: DecisionNode) -> DecisionNode:
        if any(d.id == node.id for d in self.decisions):
            raise ValueError(f"duplicate decision id {node.id!r}")
        self.decisions.append(node)
        return node

    def recalled_memory_ids(self) -> list[str]:
        """Distinct memory ids recalled anywhere in the trajectory, in first-use order."""
        seen: dict[str, None] = {}
        for d in self.decisions:
            for mid in d.recalled_memory_ids:
                seen.setdefault(mid, None)
        return list(seen)


@dataclass(frozen=True)
class MemoryItem:
    """A piece of memory recalled into a prompt."""

    id: str
    text: str
    level: Level = "agent"
    kind: str = "note"  # insight, skill, trajectory, card, ... (method-specific)
    score: float = 0.0  # retrieval score, for ordering and inspection
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecallQuery:
    """What a framework asks memory for at a decision point."""

    task: Task
    level: Level
    agent: str
    role: str
    context: str = ""  # current observation / sub-task text
    step: int = 0


def task_text(task: Task, context: str = "") -> str:
    """The text a memory retrieves and stores a task by.

    In a conversation (tau2-bench, toy_tools) every task of a domain has the same
    instruction (the policy); what tells tasks apart is what the user asks. So a
    conversation's key is its opening (the first observation at storage, the
    recall context at retrieval) followed by the instruction, the distinguishing
    text first because embedders read a bounded prefix. Other tasks are keyed by
    their instruction alone.
    """
    if task.mode == "conversation" and context.strip():
        return f"{context.strip()}\n\n{task.instruction}"
    return task.instruction


LabelSource = Literal["environment", "llm_judge", "consensus", "none"]


@dataclass(frozen=True)
class Outcome:
    """The label a memory method is allowed to learn from.

    It is the environment's verdict only under the `environment` label source;
    under `llm_judge` it is the judge's, so methods never see gold scores
    they would not have in deployment.
    """

    success: bool | None
    value: float | None = None
    source: LabelSource = "environment"
    rationale: str = ""


@dataclass(frozen=True)
class Episode:
    """What a memory method observes after a task: the task, what happened, the label."""

    task: Task
    trajectory: Trajectory
    outcome: Outcome
    seed: int = 0


# ---------------------------------------------------------------------------
# JSON round-trip. dataclasses.asdict handles the way out; the way back needs the
# field types, which are few and fixed, so they are spelled out here.


def to_jsonable(obj: Any) -> Any:
    """Dataclasses (nested) and enums to plain JSON types."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    return obj


def action_from_dict(d: dict[str, Any] | None) -> Action | None:
    if d is None:
        return None
    calls = tuple(ToolCall(**c) for c in d.get("tool_calls", ()))
    return Action(kind=d["kind"], text=d.get("text", ""), tool_calls=calls)


def task_from_dict(d: dict[str, Any]) -> Task:
    tools = tuple(ToolSpec(**t) for t in d.get("tools", ()))
    return Task(**{**d, "tools": tools})


def trajectory_from_dict(d: dict[str, Any]) -> Trajectory:
    steps = [
        Step(
            index=s["index"],
            action=action_from_dict(s["action"]),  # type: ignore[arg-type]
            observation=Observation(**s["observation"]),
            decision_id=s.get("decision_id"),
        )
        for s in d.get("steps", [])
    ]
    decisions = [
        DecisionNode(
            **{
                **n,
                "parents": tuple(n.get("parents", ())),
                "recalled_memory_ids": tuple(n.get("recalled_memory_ids", ())),
                "action": action_from_dict(n.get("action")),
            }
        )
        for n in d.get("decisions", [])
    ]
    return Trajectory(
        **{
            **d,
            "steps": steps,
            "decisions": decisions,
            "status": Status(d.get("status", "ok")),
        }
    )


def episode_from_dict(d: dict[str, Any]) -> Episode:
    return Episode(
        task=task_from_dict(d["task"]),
        trajectory=trajectory_from_dict(d["trajectory"]),
        outcome=Outcome(**d["outcome"]),
        seed=d.get("seed", 0),
    )
