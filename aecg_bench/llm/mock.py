"""The `mock` model: scripted, deterministic outputs for tests and offline wiring checks.

It never produces a real score and never imports litellm (so tests stay fast).
A mock spec picks a policy in `options.policy`:

- `script` (default): `options.script` is a list of `{match: <regex>, reply: <template>}`;
  the first regex that matches the last user/tool message (else the whole
  conversation) wins and its reply is expanded with the match's groups
  (`\\1`, `\\g<name>`). `options.default` answers when nothing matches. A reply
  that is JSON `{"tool": name, "arguments": {...}}` becomes a tool call when the
  request offered tools.
- `echo`: returns the last user message.
- `oracle`: solves the toy benchmarks from the prompt, copies `procedures` from recalled
  experience, keeps the task when asked to route (AgentNet) and approves when asked for a
  verdict (AutoGen's critic); falls back to `script`.
- a registered name (`register_mock_policy`) or one of `KNOWN_POLICIES`, for
  oracles that solve the toy benchmarks.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import Callable

from aecg_bench.errors import ConfigError, unknown_choice
from aecg_bench.llm.providers import Provider, ProviderResult, Request
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.llm.usage import Usage
from aecg_bench.types import ToolCall

MockPolicy = Callable[[Request, ModelSpec], "str | ProviderResult"]

KNOWN_POLICIES: dict[str, str] = {
    "toy_oracle": "aecg_bench.benchmarks.toy:mock_oracle",
    "toy_tools_oracle": "aecg_bench.benchmarks.toy_tools:mock_oracle",
    "procedures_copier": "aecg_bench.benchmarks.procedures:mock_copier",
    "aecg_oracle": "aecg_bench.aecg.mock_policy:mock_policy",
    "aecg_skill_follower": "aecg_bench.aecg.mock_policy:skill_follower",
}
_registered: dict[str, MockPolicy] = {}


def register_mock_policy(name: str, policy: MockPolicy) -> None:
    _registered[name] = policy


def _resolve_policy(name: str) -> MockPolicy:
    if name in _BUILTIN:
        return _BUILTIN[name]
    if name in _registered:
        return _registered[name]
    if name in KNOWN_POLICIES:
        module, _, attr = KNOWN_POLICIES[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    raise unknown_choice("mock policy", name, [*_BUILTIN, *_registered, *KNOWN_POLICIES])


def last_text(request: Request, roles: tuple[str, ...] = ("user", "tool")) -> str:
    for msg in reversed(request.messages):
        if msg.get("role") in roles and msg.get("content"):
            return str(msg["content"])
    return ""


def _script(request: Request, spec: ModelSpec) -> str:
    rules = spec.options.get("script", [])
    targets = [last_text(request), "\n".join(str(m.get("content") or "") for m in request.messages)]
    for target in targets:
        for rule in rules:
            try:
                m = re.search(rule["match"], target, flags=re.S)
            except (re.error, KeyError, TypeError) as exc:
                raise ConfigError(f"mock model {spec.label!r}: bad script rule {rule!r}: {exc}") from None
            if m:
                return m.expand(rule.get("reply", ""))
    return str(spec.options.get("default", "OK"))


def _echo(request: Request, spec: ModelSpec) -> str:
    return last_text(request, ("user",))


# The last lines of the frameworks' router and critic prompts (frameworks/base.py ENDINGS).
_ROUTE_CUE, _VERDICT_CUE = "Decision:", "Verdict (APPROVE, or REJECT: <reason>):"
_FIRST_OPTION = re.compile(r"one of:\n([A-Z]+)\b")


def route_reply(request: Request) -> str | None:
    """What a model that keeps its tasks answers an AgentNet router: the first option offered (EXECUTE, or
    COMPLETE after a part). None when the request is no routing decision. Scripted policies that play the
    agents but not the routers use it, so AgentNet's routers get a decision (an unreadable one is re-asked
    until the sample ends)."""
    if not last_text(request, ("user",)).rstrip().endswith(_ROUTE_CUE):
        return None
    system = str(request.messages[0].get("content") or "") if request.messages else ""
    m = _FIRST_OPTION.search(system)
    return m.group(1) if m else None


def _coordination(request: Request) -> str | None:
    """The oracle's reply to a decision that is no environment action: a route (`route_reply`) or, to a
    critic, an approval; None otherwise."""
    if last_text(request, ("user",)).rstrip().endswith(_VERDICT_CUE):
        return "APPROVE"
    return route_reply(request)


def _oracle(request: Request, spec: ModelSpec) -> str | ProviderResult:
    """Solves the toy benchmarks (whichever the prompt belongs to); routes and verdicts as `_coordination`;
    scripted reply otherwise."""
    coordination = _coordination(request)
    if coordination is not None:
        return coordination
    tool_names = {t["function"]["name"] for t in request.tools or []}
    if "find_orders" in tool_names:
        return _resolve_policy("toy_tools_oracle")(request, spec)
    if "The target is cell" in last_text(request):
        return _resolve_policy("toy_oracle")(request, spec)
    if "enter one code of the keypad per step:" in last_text(request):
        return _resolve_policy("procedures_copier")(request, spec)
    return _script(request, spec)


_BUILTIN: dict[str, MockPolicy] = {"script": _script, "echo": _echo, "oracle": _oracle}


def count_tokens(text: str) -> int:
    """Whitespace tokens: a stable, dependency-free stand-in for the mock's usage."""
    return len(text.split())


class MockProvider(Provider):
    def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:
        if spec.options.get("delay_s"):  # simulated latency, for resume and concurrency tests
            time.sleep(float(spec.options["delay_s"]))
        policy = _resolve_policy(str(spec.options.get("policy", "script")))
        out = policy(request, spec)
        if isinstance(out, ProviderResult):
            result = out
        else:
            result = ProviderResult(text=out, tool_calls=_as_tool_calls(out) if request.tools else ())
            if result.tool_calls:
                result = ProviderResult(text="", tool_calls=result.tool_calls)
        prompt_tokens = sum(count_tokens(str(m.get("content") or "")) for m in request.messages)
        usage = (
            result.usage
            if result.usage != Usage()
            else Usage(prompt_tokens, count_tokens(result.text) + 5 * len(result.tool_calls))
        )
        return ProviderResult(result.text, result.tool_calls, usage, result.finish_reason)


def _as_tool_calls(text: str) -> tuple[ToolCall, ...]:
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return ()
    if isinstance(obj, dict) and isinstance(obj.get("tool"), str):
        return (ToolCall(name=obj["tool"], arguments=dict(obj.get("arguments") or {}), id="call_0"),)
    return ()
