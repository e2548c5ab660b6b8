"""tau2 task files as pydantic models (src/tau2/data_model/tasks.py at 37199f36).

Only what this harness reads is modelled strictly; the rest of a task (description,
annotations, ticket) is kept as loose data. `user_scenario` renders exactly as tau2's
`UserScenario.__str__`, since that text is the user simulator's scenario.
"""

from __future__ import annotations

import textwrap
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Requestor = Literal["user", "assistant"]


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class StructuredInstructions(_Loose):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str

    def __str__(self) -> str:
        lines = [f"Domain: {self.domain}", f"Reason for call:\n{textwrap.indent(self.reason_for_call, chr(9))}"]
        if self.known_info is not None:
            lines.append(f"Known info:\n{textwrap.indent(self.known_info, chr(9))}")
        if self.unknown_info is not None:
            lines.append(f"Unknown info:\n{textwrap.indent(self.unknown_info, chr(9))}")
        lines.append(f"Task instructions:\n{textwrap.indent(self.task_instructions, chr(9))}")
        return "\n".join(lines)


class UserScenario(_Loose):
    persona: str | None = None
    instructions: StructuredInstructions | str

    def __str__(self) -> str:
        lines = []
        if self.persona is not None:
            lines += ["Persona:", textwrap.indent(self.persona, "\t")]
        lines += ["Instructions:", textwrap.indent(str(self.instructions), "\t")]
        return "\n".join(lines)


class GoldAction(_Loose):
    """A tool call the task expects (tau2 `Action`)."""

    action_id: str
    requestor: Requestor = "assistant"
    name: str
    arguments: dict[str, Any]
    compare_args: list[str] | None = None

    def matches(self, name: str, arguments: dict[str, Any]) -> bool:
        """tau2 Action.compare_with_tool_call: same name, equal values on compare_args (all the call's args if None)."""
        if name != self.name:
            return False
        keys = list(arguments) if self.compare_args is None else self.compare_args
        if not keys:
            return True
        return {k: v for k, v in arguments.items() if k in keys} == {
            k: v for k, v in self.arguments.items() if k in keys
        }


class EnvCall(_Loose):
    env_type: Requestor
    func_name: str
    arguments: dict[str, Any]


class EnvAssertion(EnvCall):
    assert_value: bool = True
    message: str | None = None


class RewardType(StrEnum):
    DB = "DB"
    ENV_ASSERTION = "ENV_ASSERTION"
    NL_ASSERTION = "NL_ASSERTION"
    ACTION = "ACTION"
    COMMUNICATE = "COMMUNICATE"


class EvaluationCriteria(_Loose):
    actions: list[GoldAction] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardType] = Field(default_factory=lambda: [RewardType.DB, RewardType.COMMUNICATE])


class HistoryMessage(_Loose):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    id: str | None = None
    requestor: Requestor = "assistant"


class InitializationData(_Loose):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(_Loose):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvCall] | None = None
    message_history: list[HistoryMessage] | None = None


class Tau2Task(_Loose):
    id: str
    user_scenario: UserScenario
    evaluation_criteria: EvaluationCriteria | None = None
    initial_state: InitialState | None = None
