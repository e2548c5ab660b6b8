"""Structured output on providers: a role's reply as a JSON object, by JSON schema or a forced tool call.

GBNF grammars constrain the embedded model and llama.cpp servers (`grammar: true`);
other providers drop them. Where the model spec says the provider supports it
(`structured_output`), a decision with an output schema (a critic's verdict, an
AgentNet router's decision) is asked for one JSON object instead:

- `json_schema`: litellm's `response_format={"type": "json_schema", ...}` (OpenAI
  structured outputs, strict; vLLM and llama.cpp servers accept the same field);
- `tool_call`: one function whose parameters are the schema, forced with
  `tool_choice`; the call's arguments become the reply text.

Either way the caller gets the JSON text back and reads it with its own parser;
a reply that is not the object asked for stays unparsed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aecg_bench.llm.providers import ProviderResult
from aecg_bench.types import UNPARSED_ARGUMENTS


@dataclass(frozen=True)
class OutputSchema:
    """A decision's output shape: `name` (a function-name-safe word) and a JSON schema of one object."""

    name: str
    schema: dict[str, Any]
    description: str = ""


def request_fields(mode: str, schema: OutputSchema) -> dict[str, Any]:
    """The request fields that ask for `schema` in `mode` (`response_format`, or `tools` + `tool_choice`)."""
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema, "strict": True},
            }
        }
    if mode == "tool_call":
        tool = {
            "type": "function",
            "function": {"name": schema.name, "description": schema.description, "parameters": schema.schema},
        }
        return {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": schema.name}}}
    raise ValueError(f"unknown structured output mode {mode!r}")


def reply_text(mode: str, schema: OutputSchema, result: ProviderResult) -> str:
    """The JSON text of a structured reply: the forced call's arguments (tool_call), else the text."""
    if mode == "tool_call":
        call = next((c for c in result.tool_calls if c.name == schema.name), None)
        if call is not None and UNPARSED_ARGUMENTS not in call.arguments:
            return json.dumps(call.arguments, sort_keys=True)
    return result.text


def json_object(text: str) -> dict[str, Any] | None:
    """The reply as one JSON object (a fenced block is tolerated); None when it is not one."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None
