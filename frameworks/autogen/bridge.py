"""AutoGen's model-client interface, served by the project's `Decider` and `LLMClient`.

Each AutoGen agent gets its own `BridgeClient`, bound to the agent's name,
role and decision level. When AutoGen asks it for a completion, the bridge

- takes the agent's system message and the teammates' messages from the
  context AutoGen hands over (the latest message of a persistent role such as
  the planner, plus everything said since the latest environment message),
- shows the environment through the shared `Transcript`, like every framework,
- makes the call through `Decider.decide` (memory recall at the agent's scope,
  the one memory formatter, cache, retries, usage accounting, a decision node
  whose parents are the decisions behind the messages it was shown),
- returns the text to AutoGen as the agent's reply.

AutoGen wraps exceptions raised inside agents into a RuntimeError carrying
only a traceback string; the bridge keeps the original (InfraError,
ContextLimitError, a read-only cache miss) in `TeamState.error` so the adapter
re-raises it with its type, and the runner records the right status.

Token counting goes through litellm's `token_counter`, which works offline
(tiktoken would download vocabulary files).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autogen_core import CancellationToken
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelFamily,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema

from aecg_bench.llm.structured import OutputSchema
from aecg_bench.types import Level
from frameworks.base import Decider, Decision, EnvLoop, Transcript, with_notes

ENVIRONMENT = "environment"
"""AutoGen source name of the messages that carry observations into the team."""

DEFAULT_CONTEXT_TOKENS = 8192
"""Context window assumed by `remaining_tokens` when litellm does not know the model."""


@dataclass(frozen=True)
class AgentSpec:
    """How one AutoGen agent decides: identity, scope and whether its output is an action."""

    name: str
    role: str
    level: Level
    system: str
    acts: bool = False  # output is an environment action: tools offered, action grammar, parsed
    persistent: bool = False  # its latest message stays visible to teammates (a plan)
    ending: str = ""  # the prompt's last line for a non-acting role (`frameworks.base.ENDINGS`)
    grammar: str | None = None  # GBNF of the role's output (critic verdicts), for grammar-capable models
    schema: OutputSchema | None = None  # the same output as a JSON object, for structured-output providers


@dataclass
class TeamState:
    """What the bridges of one task share: the decider, the environment view, who said what."""

    decider: Decider
    transcript: Transcript
    loop: EnvLoop
    members: dict[str, AgentSpec]
    on_decision: Callable[[AgentSpec, Decision], None]
    ledger: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (agent, text) -> decision ids
    last_decision: dict[str, str] = field(default_factory=dict)
    error: BaseException | None = None

    def notes_for(self, agent: str, messages: Sequence[LLMMessage]) -> list[tuple[str, str]]:
        """Messages this agent is shown: persistent roles' latest, then everything said in the current
        step, its own earlier replies included (a revising executor sees the proposal it revises)."""
        env_at = max((i for i, m in enumerate(messages) if _source(m) == ENVIRONMENT), default=-1)
        current = [
            (src, _text(m))
            for m in messages[env_at + 1 :]
            if (src := _source(m)) in self.members and isinstance(m, UserMessage | AssistantMessage)
        ]
        earlier: dict[str, str] = {}
        for m in messages[: env_at + 1]:
            src = _source(m)
            if src in self.members and src != agent and self.members[src].persistent and isinstance(m, UserMessage):
                earlier[src] = _text(m)
        shown = {src for src, _ in current}
        return [(src, text) for src, text in earlier.items() if src not in shown] + current

    def parents_for(self, agent: str, notes: list[tuple[str, str]]) -> tuple[str, ...]:
        """Own previous decision, the decision behind the latest environment step, the notes' authors.

        Notes with the same author and text (a revision identical to the proposal it revises) map to
        that many distinct decisions, the latest ones, so no shown message loses its parent edge."""
        ids = [self.last_decision.get(agent)]
        steps = self.loop.trajectory.steps
        ids.append(steps[-1].decision_id if steps else None)
        seen = Counter(notes)
        for note, n in seen.items():
            ids += self.ledger.get(note, [])[-n:]
        return tuple(i for i in dict.fromkeys(ids) if i)

    def record(self, spec: AgentSpec, decision: Decision) -> None:
        self.ledger.setdefault((spec.name, decision.node.output), []).append(decision.node.id)
        self.last_decision[spec.name] = decision.node.id
        self.on_decision(spec, decision)


class _ClientBase(ChatCompletionClient):
    """The bookkeeping half of AutoGen's client interface: usage, token counts, model info."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name  # litellm model id, for token counting only
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},  # AutoGen's signature
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """No token streaming: the whole reply arrives as the final result."""
        yield await self.create(messages, tools=tools, cancellation_token=cancellation_token)

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return self._actual

    def total_usage(self) -> RequestUsage:
        return self._total

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        from aecg_bench.llm.litellm_setup import import_litellm

        plain = [{"role": _role(m), "content": _text(m)} for m in messages]
        return int(import_litellm().token_counter(model=self.model_name, messages=plain))

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        from aecg_bench.llm.litellm_setup import import_litellm

        try:
            window = int(import_litellm().get_model_info(self.model_name).get("max_input_tokens") or 0)
        except Exception:  # litellm raises for models it has no card for (local, mock, servers)
            window = 0
        return max(0, (window or DEFAULT_CONTEXT_TOKENS) - self.count_tokens(messages, tools=tools))

    @property
    def capabilities(self) -> ModelInfo:  # type: ignore[override]  # deprecated alias in AutoGen
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
        )


class BridgeClient(_ClientBase):
    """One AutoGen agent's model client; every call is a recorded decision through the LLMClient."""

    def __init__(self, state: TeamState, spec: AgentSpec, model_name: str) -> None:
        super().__init__(model_name)
        self.state = state
        self.spec = spec

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},  # AutoGen's signature
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        try:
            decision = self._decide(messages)
        except BaseException as exc:
            if self.state.error is None:
                self.state.error = exc
            raise
        usage = RequestUsage(
            prompt_tokens=decision.completion.usage.input_tokens,
            completion_tokens=decision.completion.usage.output_tokens,
        )
        self._total = _add(self._total, usage)
        if not decision.completion.cached:
            self._actual = _add(self._actual, usage)
        return CreateResult(
            finish_reason="stop", content=decision.node.output, usage=usage, cached=decision.completion.cached
        )

    def _decide(self, messages: Sequence[LLMMessage]) -> Decision:
        state, spec = self.state, self.spec
        system = next((_text(m) for m in messages if isinstance(m, SystemMessage)), "")
        notes = state.notes_for(spec.name, messages)
        shown = [(f"{src} (you, earlier)" if src == spec.name else src, text) for src, text in notes]
        conversation = state.transcript.task.mode == "conversation"
        decision = state.decider.decide(
            agent=spec.name,
            role=spec.role,
            level=spec.level,
            system=with_notes(system, shown),
            parents=state.parents_for(spec.name, notes),
            step=state.loop.steps_taken,
            recall_context=state.transcript.observation,
            tools=state.transcript.tools if spec.acts and conversation else None,
            action_grammar=spec.acts,
            grammar=spec.grammar,
            schema=spec.schema,
            **state.transcript.view(state.loop.note if spec.acts else "", acting=spec.acts, ending=spec.ending),
        )
        state.record(spec, decision)
        return decision


class NoSelectorModel(_ClientBase):
    """SelectorGroupChat requires a model client; speaker selection here is rule-based, so it is never called."""

    def __init__(self) -> None:
        super().__init__("")

    async def create(self, messages: Sequence[LLMMessage], **_: Any) -> CreateResult:
        raise RuntimeError("speaker selection is rule-based; the selector model must not be called")


def _source(m: LLMMessage) -> str:
    return getattr(m, "source", "") if isinstance(m, UserMessage | AssistantMessage) else ""


def _role(m: LLMMessage) -> str:
    if isinstance(m, SystemMessage):
        return "system"
    return "assistant" if isinstance(m, AssistantMessage) else "user"


def _text(m: LLMMessage) -> str:
    content = m.content
    if isinstance(content, str):
        return content
    return "\n".join(str(part) for part in content) if isinstance(content, list) else str(content)


def _add(a: RequestUsage, b: RequestUsage) -> RequestUsage:
    return RequestUsage(
        prompt_tokens=a.prompt_tokens + b.prompt_tokens, completion_tokens=a.completion_tokens + b.completion_tokens
    )
