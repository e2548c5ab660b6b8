"""tau2's user simulator (src/tau2/user/user_simulator.py, user/base.py at 37199f36).

An LLM plays the customer. Its system prompt is the global simulation guidelines
(`simulation_guidelines.md`; `simulation_guidelines_tools.md` when the user has
tools) followed by the task's user scenario in `<scenario>` tags. It sees the
conversation with roles flipped: the agent's text messages as `user` turns and its
own earlier messages as `assistant` turns; the agent's tool calls stay hidden from
it. A reply containing ###STOP###, ###TRANSFER### or ###OUT-OF-SCOPE### ends the
conversation. Calls go through the one LLM client under the role `user_simulator`,
so the user has its own model (config `roles.user_simulator`) and its own usage line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    """The simulated customer of one conversation."""

    def __init__(self, llm: LLMClient, system: str, *, temperature: float, sample_index: int) -> None:
        self.llm = llm
        self.system = system
        self.temperature = temperature
        self.sample_index = sample_index
        self.turns: list[tuple[str, str]] = []  # (speaker "agent" | "user", text), in order

    def messages(self) -> list[dict[str, Any]]:
        """The request the user LLM sees: roles flipped, as in tau2's UserState.flip_roles."""
        flipped = [{"role": "user" if who == "agent" else "assistant", "content": text} for who, text in self.turns]
        return [{"role": "system", "content": self.system}, *flipped]

    def reply(self, agent_text: str) -> str:
        self.turns.append(("agent", agent_text))
        completion = self.llm.complete(
            self.messages(), role=ROLE, temperature=self.temperature, sample_index=self.sample_index
        )
        text = completion.text.strip()
        self.turns.append(("user", text))
        return text
