"""Typed tools over a pydantic database, described to agents from their own docstrings.

tau2-bench (src/tau2/environment/toolkit.py, tool.py, environment.py at 37199f36)
turns each marked method of a toolkit into an OpenAI function: the description
is the docstring's short description plus its long one, each parameter's
description comes from the docstring's `Args:` entry and its JSON schema from
the annotation. A call runs the Python method with the model's arguments as
keywords; any exception becomes the tool message `Error: <message>`; results
are serialised with pydantic's `model_dump` and `json.dumps(default=str)`.
The database state is compared by the sha256 of its canonical JSON dump.
This module implements those semantics; the domains supply the tools.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from aecg_bench.types import ToolSpec


class ToolKind(StrEnum):
    """tau2's ToolType: read tools never change the DB, write tools may."""

    READ = "read"
    WRITE = "write"
    THINK = "think"
    GENERIC = "generic"


_KIND_ATTR = "__tau2_tool_kind__"


def tool(kind: ToolKind) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a toolkit method as a tool the agent (or user) may call."""

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        setattr(func, _KIND_ATTR, kind)
        return func

    return mark


class StrictModel(BaseModel):
    """Base of the DB models: unknown keys are errors (tau2's BaseModelNoExtra)."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolResult:
    """One executed call: what the caller reads and whether it was an error."""

    content: str
    error: bool


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Examples?|Notes?):\s*$")


def parse_docstring(doc: str | None) -> tuple[str, str, dict[str, str]]:
    """(short description, long description, {arg: description}) of a Google-style docstring.

    Follows docstring_parser's Google parser as tau2 uses it: the short
    description is the first line of the text before the first section, the
    long one the rest of that text; an argument's description is its first
    line plus its dedented continuation lines.
    """
    text = inspect.cleandoc(doc or "")
    lines = text.splitlines()
    first_section = next((i for i, line in enumerate(lines) if _SECTION.match(line)), len(lines))
    head = "\n".join(lines[:first_section])
    short, _, long = head.partition("\n")
    args: dict[str, str] = {}
    section = ""
    current: str | None = None
    chunks: dict[str, list[str]] = {}
    for line in lines[first_section:]:
        m = _SECTION.match(line)
        if m:
            section, current = m.group(1), None
            continue
        if section not in {"Args", "Arguments", "Parameters"}:
            continue
        item = re.match(r"^    (\*{0,2}\w+)(?:\s*\([^)]*\))?:\s?(.*)$", line)
        if item:
            current = item.group(1)
            chunks[current] = [item.group(2)]
        elif current is not None:
            chunks[current].append(line)
    for name, parts in chunks.items():
        rest = inspect.cleandoc("\n".join(parts[1:])) if len(parts) > 1 else ""
        args[name] = (parts[0] + ("\n" + rest if rest else "")).strip()
    return short.strip(), long.strip(), args


def tool_spec(func: Callable[..., Any]) -> ToolSpec:
    """The function description an agent is offered for one bound tool method."""
    short, long, arg_docs = parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    hints = get_type_hints(func, include_extras=True)
    for name, param in inspect.signature(func).parameters.items():
        anno = hints.get(name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        if name in arg_docs:
            default = Field(default, description=arg_docs[name])
        fields[name] = (anno, default)
    schema = as_pinned_pydantic(create_model("parameters", **fields).model_json_schema())
    description = (short + ("\n\n" + long if long else "")) if short else func.__name__
    return ToolSpec(name=func.__name__, description=description, parameters=schema)


def as_pinned_pydantic(schema: Any) -> Any:
    """A JSON schema as tau2's pinned pydantic (2.10.6, pdm.lock at 37199f36) writes it: pydantic 2.11 and
    later mark a `dict[str, Any]` field `"additionalProperties": true`, which 2.10 leaves out (no tool model of
    this release allows extra keys, so tau2's schemas never carry it)."""
    if isinstance(schema, dict):
        return {k: as_pinned_pydantic(v) for k, v in schema.items() if not (k == "additionalProperties" and v is True)}
    if isinstance(schema, list):
        return [as_pinned_pydantic(v) for v in schema]
    return schema


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, bool | int | float):
        return str(value)
    return value


def to_content(value: Any) -> str:
    """A tool's return value as the tool message text (tau2 Environment.to_json_str)."""
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), default=str)


def json_hash(obj: Any) -> str:
    """sha256 of canonical JSON (tau2 utils.get_dict_hash)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def deep_update(model: BaseModel, update: dict[str, Any]) -> BaseModel:
    """The model with `update` merged in key by key (nested dicts merge, other values replace)."""

    def merge(base: Any, new: Any) -> Any:
        if isinstance(base, dict) and isinstance(new, dict):
            out = dict(base)
            for k, v in new.items():
                out[k] = merge(base[k], v) if k in base else v
            return out
        return new

    return type(model).model_validate(merge(model.model_dump(), update))


class Toolkit:
    """A domain's tools over its database. Subclasses mark methods with `@tool(kind)`."""

    DB: ClassVar[type[BaseModel]]

    def __init__(self, db: BaseModel) -> None:
        self.db = db

    @classmethod
    def tool_names(cls) -> list[str]:
        return sorted(name for name, attr in vars_of(cls).items() if hasattr(attr, _KIND_ATTR))

    @classmethod
    def kind(cls, name: str) -> ToolKind:
        return getattr(getattr(cls, name), _KIND_ATTR)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool_spec(getattr(self, name)) for name in self.tool_names())

    def has_tool(self, name: str) -> bool:
        return name in self.tool_names()

    def use(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool; raises as the tool does (tau2 ToolKitBase.use_tool)."""
        if not self.has_tool(name):
            raise ValueError(f"Tool '{name}' not found.")
        return getattr(self, name)(**arguments)

    def db_hash(self) -> str:
        return json_hash(self.db.model_dump())


class AgentToolkit(Toolkit):
    """An agent-side domain toolkit: every tau2 domain offers its agent the same hand-off tool."""

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """
        Transfer the user to a human agent, with a summary of the user's issue.
        Only transfer if
         -  the user explicitly asks for a human agent
         -  given the policy and the available tools, you cannot solve the user's issue.

        Args:
            summary: A summary of the user's issue.

        Returns:
            A message indicating the user has been transferred to a human agent.
        """
        return "Transfer successful"


def vars_of(cls: type) -> dict[str, Any]:
    """Attributes of a class and its bases (subclass wins)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        out.update(vars(klass))
    return out


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def arithmetic(expression: str) -> str:
    """tau2's `calculate`: + - * / and parentheses over numbers, rounded to 2 places.

    tau2 evaluates the (character-filtered) string with Python's eval; this walks
    the same arithmetic subset of Python's grammar instead, with the same result.
    """
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise SyntaxError("invalid syntax")

    return str(round(float(ev(ast.parse(expression.strip(), mode="eval"))), 2))
