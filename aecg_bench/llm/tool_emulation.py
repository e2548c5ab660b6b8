"""Tool calling for models without native function calling (the embedded model, plain servers).

The tools are described in a system message and the reply is constrained to
one JSON object: `{"tool": <name or "none">, "arguments": {...}, "message": "..."}`,
one call per reply. A task whose steps may hold several calls at once
(`Task.parallel_tool_calls`: MMTB's parallel steps, which its Opt.Path needs)
is offered a list instead, as a native API returns several calls:
`{"calls": [{"tool": <name>, "arguments": {...}}, ...], "message": "..."}`, no
call meaning the message is the reply. The client converts either back into
`ToolCall`s (ids `call_0`, `call_1`, ...), so frameworks see the same shape
whatever the model; either shape is read whichever was asked for.
"""

from __future__ import annotations

import json
from typing import Any

from aecg_bench.types import UNPARSED_ARGUMENTS, ToolCall

NO_TOOL = "none"  # the one-call shape's "no call"
ONE_CALL = (
    'Reply with one JSON object: {"tool": <tool name, or "none" to answer in text>, '
    '"arguments": {<arguments>}, "message": <text for the user when tool is "none">}.'
)
SEVERAL_CALLS = (
    'Reply with one JSON object: {"calls": [<each call as {"tool": <tool name>, "arguments": {<arguments>}}; '
    "several independent calls may go in one reply; none to answer in text>], "
    '"message": <text for the user when there is no call>}.'
)


def emulate(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], parallel: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Messages with a tool description prepended, and the response format to impose; `parallel`
    offers a list of calls per reply instead of one call."""
    names = [t["function"]["name"] for t in tools]
    lines = ["You can call these tools:"]
    for t in tools:
        fn = t["function"]
        lines.append(f"- {fn['name']}: {fn.get('description', '')} parameters: {json.dumps(fn.get('parameters', {}))}")
    lines.append(SEVERAL_CALLS if parallel else ONE_CALL)
    flat = [_flatten_tool_turn(m, parallel) for m in messages]
    if flat and flat[0].get("role") == "system":
        flat[0] = {**flat[0], "content": f"{flat[0]['content']}\n\n" + "\n".join(lines)}
    else:
        flat.insert(0, {"role": "system", "content": "\n".join(lines)})
    if parallel:
        call = {
            "type": "object",
            "properties": {"tool": {"type": "string", "enum": names}, "arguments": {"type": "object"}},
            "required": ["tool", "arguments"],
        }
        properties: dict[str, Any] = {"calls": {"type": "array", "items": call}, "message": {"type": "string"}}
    else:
        properties = {
            "tool": {"type": "string", "enum": [*names, NO_TOOL]},
            "arguments": {"type": "object"},
            "message": {"type": "string"},
        }
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return flat, {"type": "json_schema", "json_schema": {"name": "tool_choice", "schema": schema}}


def _flatten_tool_turn(msg: dict[str, Any], parallel: bool) -> dict[str, Any]:
    """Tool-call and tool-result turns rewritten as plain text turns (a call turn in the reply's shape)."""
    if msg.get("role") == "tool":
        return {"role": "user", "content": f"Tool result ({msg.get('name', 'tool')}): {msg.get('content', '')}"}
    if msg.get("role") == "assistant" and msg.get("tool_calls"):
        if parallel:
            listed = [
                {"tool": c["function"]["name"], "arguments": _as_object(c["function"].get("arguments"))}
                for c in msg["tool_calls"]
            ]
            return {"role": "assistant", "content": json.dumps({"calls": listed, "message": msg.get("content") or ""})}
        calls = [
            {"tool": c["function"]["name"], "arguments": c["function"].get("arguments")} for c in msg["tool_calls"]
        ]
        return {"role": "assistant", "content": json.dumps(calls[0] if len(calls) == 1 else calls)}
    return msg


def _as_object(arguments: Any) -> Any:
    """A call's arguments as JSON (chat turns carry them as a JSON string); other text stays text."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as an object: text that is no JSON travels under `UNPARSED_ARGUMENTS`,
    anything else that is no object is no arguments."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return {UNPARSED_ARGUMENTS: raw}
    return raw if isinstance(raw, dict) else {}


def parse(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """(message text, tool calls) from the constrained reply; unparsable text stays text."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return text, ()
    if not isinstance(obj, dict):
        return text, ()
    if isinstance(obj.get("calls"), list):
        entries = [c for c in obj["calls"] if isinstance(c, dict) and isinstance(c.get("tool"), str)]
    elif isinstance(obj.get("tool"), str) and obj["tool"] != NO_TOOL:  # the one-call shape
        entries = [obj]
    else:
        entries = []
    calls = tuple(
        ToolCall(name=c["tool"], arguments=_arguments(c.get("arguments")), id=f"call_{i}")
        for i, c in enumerate(entries)
    )
    return ("", calls) if calls else (str(obj.get("message", "")), ())
