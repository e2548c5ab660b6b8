"""Tool calling for models without native function calling (the embedded model, plain servers).

The tools are described in a system message and the reply is constrained to
one JSON object: `{"tool": <name or "none">, "arguments": {...}, "message": "..."}`.
The client converts it back into `ToolCall`s, so frameworks see the same shape
whatever the model.
"""

from __future__ import annotations

import json
from typing import Any

from aecg_bench.types import ToolCall

NO_TOOL = "none"


def emulate(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Messages with a tool description prepended, and the response format to impose."""
    names = [t["function"]["name"] for t in tools]
    lines = ["You can call these tools:"]
    for t in tools:
        fn = t["function"]
        lines.append(f"- {fn['name']}: {fn.get('description', '')} parameters: {json.dumps(fn.get('parameters', {}))}")
    lines.append(
        'Reply with one JSON object: {"tool": <tool name, or "none" to answer in text>, '
        '"arguments": {<arguments>}, "message": <text for the user when tool is "none">}.'
    )
    flat = [_flatten_tool_turn(m) for m in messages]
    if flat and flat[0].get("role") == "system":
        flat[0] = {**flat[0], "content": f"{flat[0]['content']}\n\n" + "\n".join(lines)}
    else:
        flat.insert(0, {"role": "system", "content": "\n".join(lines)})
    schema = {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": [*names, NO_TOOL]},
            "arguments": {"type": "object"},
            "message": {"type": "string"},
        },
        "required": ["tool", "arguments", "message"],
    }
    return flat, {"type": "json_schema", "json_schema": {"name": "tool_choice", "schema": schema}}


def _flatten_tool_turn(msg: dict[str, Any]) -> dict[str, Any]:
    """Tool-call and tool-result turns rewritten as plain text turns."""
    if msg.get("role") == "tool":
        return {"role": "user", "content": f"Tool result ({msg.get('name', 'tool')}): {msg.get('content', '')}"}
    if msg.get("role") == "assistant" and msg.get("tool_calls"):
        calls = [
            {"tool": c["function"]["name"], "arguments": c["function"].get("arguments")} for c in msg["tool_calls"]
        ]
        return {"role": "assistant", "content": json.dumps(calls[0] if len(calls) == 1 else calls)}
    return msg


def parse(text: str) -> tuple[str, tuple[ToolCall, ...]]:
    """(message text, tool calls) from the constrained reply; unparsable text stays text."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return text, ()
    if not isinstance(obj, dict):
        return text, ()
    tool = obj.get("tool")
    if isinstance(tool, str) and tool != NO_TOOL:
        args = obj.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"_unparsed": args}
        return "", (ToolCall(name=tool, arguments=args if isinstance(args, dict) else {}, id="call_0"),)
    return str(obj.get("message", "")), ()
