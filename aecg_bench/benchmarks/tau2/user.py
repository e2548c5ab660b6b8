"""tau2's user simulator (src/tau2/user/user_simulator.py, user/base.py at 37199f36).

An LLM plays the customer. Its system prompt is the global simulation guidelines
(`simulation_guidelines.md`) followed by the task's user scenario in `<scenario>`
tags. It sees the conversation with roles flipped: the agent's text messages as
`user` turns and its own earlier messages as `assistant` turns; the agent's tool
calls stay hidden from it. In telecom the user also has tools over its own phone
(and the `simulation_guidelines_tools.md` guidelines): its tool calls run on the
device and their results come back to it before it answers the agent. A text reply
containing ###STOP###, ###TRANSFER### or ###OUT-OF-SCOPE### ends the conversation. Calls go through the one LLM client under the role `user_simulator`,
so the user has its own model (config `roles.user_simulator`) and its own usage line;
the runner hands the environment a client view scoped `user_simulator` with the
rollout's seed and sample index, which key its cache entries.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aecg_bench.types import ToolCall

if TYPE_CHECKING:
    from aecg_bench.llm.client import LLMClient

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
FIRST_AGENT_MESSAGE = "Hi! How can I help you today?"  # tau2 orchestrator DEFAULT_FIRST_AGENT_MESSAGE
ROLE = "user_simulator"


def system_prompt(guidelines: str, scenario: str) -> str:
    return f"{guidelines}\n\n<scenario>\n{scenario}\n</scenario>".strip()


def is_stop(text: str) -> bool:
    return any(token in text for token in (STOP, TRANSFER, OUT_OF_SCOPE))


class UserSimulator:
    """The simulated customer of one conversation (its own chat, in OpenAI shape, roles flipped)."""

    def __init__(
        self,
        llm: LLMClient,
        system: str,
        *,
        temperature: float,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.llm = llm
        self.system = system
        self.temperature = temperature
        self.tools = tools or None
        self.history: list[dict[str, Any]] = []

    def hear(self, agent_text: str) -> None:
        """An agent text message reaches the user (as a `user` turn: roles are flipped)."""
        self.history.append({"role": "user", "content": agent_text})

    def said(self, text: str) -> None:
        """A message of the user's own from before the conversation started (a task's history)."""
        self.history.append({"role": "assistant", "content": text})

    def speak(self) -> tuple[str, tuple[ToolCall, ...]]:
        """The user's next message: text for the agent, or calls on its own device (telecom)."""
        messages = [{"role": "system", "content": self.system}, *self.history]
        completion = self.llm.complete(messages, role=ROLE, temperature=self.temperature, tools=self.tools)
        calls = tuple(
            ToolCall(c.name, dict(c.arguments), f"user_call_{len(self.history)}_{i}")
            for i, c in enumerate(completion.tool_calls if self.tools else ())
        )
        text = completion.text.strip()
        turn: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            turn["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in calls
            ]
        self.history.append(turn)
        return text, calls

    def tool_result(self, call: ToolCall, content: str) -> None:
        self.history.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
