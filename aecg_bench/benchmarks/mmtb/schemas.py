"""MMTB's tool schemas as its evaluator offers and checks them (`bench_test/utils/tools.py`:
`functions_uniform`, `properties_filter`; our own code with the same rules).

The entries' tools use types that function-calling APIs reject (`float`, `int`,
`String`, `"string|null"`, `"enum[...]"`, ...). Before each request the
original's API handles (`handle/gpt_handle.py`) rewrite every tool:
parameters without `properties` become an empty object schema; each property
keeps only its description, type, enum, items, properties and example value;
types are mapped to JSON Schema's (`float` -> `number`, `int` -> `integer`,
`list of dictionaries` -> `object`, `complex_string` / `String` / `UUID` ->
`string`, an `enum...` type -> `string`, a dict -> `object`, `a|b` -> `a`).

`properties_filter` also rewrites `a|b` to `a` in place, in the entry's own
tool list, which the argument check reads afterwards; `checked` reproduces
that edit, so the check sees the types the original's check sees.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

_KEPT = ("parameters", "properties", "description", "type", "example_value", "enum", "items")
STANDARD_TYPES = frozenset({"string", "integer", "boolean", "array", "object", "number", "enum"})
_RENAMED = {
    "float": "number",
    "list of dictionaries": "object",
    "int": "integer",
    "complex_string": "string",
    "String": "string",
    "UUID": "string",
}


def empty_parameters() -> dict[str, Any]:
    """The schema of a tool without parameters (a new dict each time: callers keep it)."""
    return {"type": "object", "properties": {}}


def _first_alternative(kind: Any) -> Any:
    return kind.split("|")[0] if isinstance(kind, str) else kind


def _standard_type(kind: Any, out: dict[str, Any]) -> Any:
    """A property's type as JSON Schema names it; `out` receives an enum spelled inside the type.
    A type the original cannot map (its assertion fails and the request is never sent) is kept as it is."""
    kind = _first_alternative(kind)
    if isinstance(kind, str) and kind in _RENAMED:
        return _RENAMED[kind]
    if isinstance(kind, str | list | dict) and "enum" in kind:
        if isinstance(kind, str):
            with contextlib.suppress(ValueError):  # the original keeps whatever list it could read
                out["enum"] = json.loads(kind.replace("enum", ""))
        return "string"
    if isinstance(kind, dict):
        return "object"
    return kind


def _property(schema: Any) -> Any:
    """`properties_filter`: one property's schema, reduced and renamed (None for a non-object, as there)."""
    if not isinstance(schema, dict):
        return None
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _KEPT:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _property(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _property(value)
        elif key == "type":
            out[key] = _standard_type(value, out)
        else:
            out[key] = value
    return out


def uniform(tool: Any) -> Any:
    """`functions_uniform`: a tool (or its `function`, or its `parameters`) as the original sends it."""
    if not isinstance(tool, dict):
        return tool
    out: dict[str, Any] = {}
    for key, value in tool.items():
        if key == "parameters":
            has_properties = isinstance(value, dict) and "properties" in value
            out[key] = uniform(value) if has_properties else empty_parameters()
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _property(sub) for name, sub in value.items()}
        elif key == "function":
            out[key] = uniform(value)
        else:
            out[key] = value
    return out


def _reduce_alternatives(schema: Any) -> None:
    if not isinstance(schema, dict):
        return
    if "type" in schema:
        schema["type"] = _first_alternative(schema["type"])
    if isinstance(schema.get("properties"), dict):
        for sub in schema["properties"].values():
            _reduce_alternatives(sub)
    _reduce_alternatives(schema.get("items"))


def checked(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool as the original's argument check reads it: unchanged but for `a|b` types cut to `a`
    (the in-place edit `properties_filter` leaves behind in the entry's tool list)."""
    out = copy.deepcopy(tool)
    parameters = out["function"].get("parameters")
    if isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict):
        for schema in parameters["properties"].values():
            _reduce_alternatives(schema)
    return out
