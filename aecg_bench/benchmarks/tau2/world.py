"""Both sides of a tau2 environment: the agent's toolkit and, in telecom, the user's device.

Mirrors tau2's `Environment` (src/tau2/environment/environment.py at 37199f36):
`call` is `get_response` (run the tool for its requestor, then `sync_tools`; any
exception becomes `Error: <message>`), `make_tool_call` is the same without the
sync (tau2 replays gold actions that way), `run_function` is
`run_env_function_call` (set-up functions and assertions, then sync).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aecg_bench.benchmarks.tau2.toolkit import Toolkit, ToolResult, to_content

Sync = Callable[[Toolkit, Toolkit], None]


class World:
    def __init__(self, agent: Toolkit, user: Toolkit | None = None, sync: Sync | None = None) -> None:
        self.agent = agent
        self.user = user
        self._sync = sync

    def kit(self, side: str) -> Toolkit:
        if side == "assistant":
            return self.agent
        if side == "user" and self.user is not None:
            return self.user
        raise ValueError(f"no {side!r} side in this domain")

    def sync(self) -> None:
        if self._sync is not None and self.user is not None:
            self._sync(self.agent, self.user)

    def make_tool_call(self, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> Any:
        return self.kit(requestor).use(name, arguments)

    def call(self, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> ToolResult:
        try:
            result = self.make_tool_call(name, arguments, requestor)
            self.sync()
        except Exception as exc:  # every tool failure is a message to the caller, as in tau2
            return ToolResult(f"Error: {exc}", True)
        return ToolResult(to_content(result), False)

    def run_function(self, side: str, func_name: str, arguments: dict[str, Any]) -> Any:
        result = getattr(self.kit(side), func_name)(**arguments)
        self.sync()
        return result

    def db_hash(self) -> str:
        return self.agent.db_hash()

    def user_db_hash(self) -> str | None:
        return None if self.user is None else self.user.db_hash()
