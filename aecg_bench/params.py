"""Validate a component's parameters and report a problem in one line."""

from __future__ import annotations

import difflib
import re
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from aecg_bench.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def validate_params(owner: str, model: type[M], params: dict[str, Any]) -> M:
    """`model(**params)` with pydantic's first complaint turned into one clear line."""
    try:
        return model.model_validate(dict(params))
    except ValidationError as exc:
        raise ConfigError(_first_problem(owner, model, exc)) from None


def _model_at(model: type[BaseModel], path: tuple[Any, ...]) -> type[BaseModel] | None:
    """The (nested) pydantic model that owns the last key of `path`."""
    current: type[BaseModel] = model
    for part in path[:-1]:
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        candidates = [field.annotation, *typing.get_args(field.annotation)]
        nested = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if nested is None:
            return None
        current = nested
    return current


def _first_problem(owner: str, model: type[BaseModel], exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        parent = _model_at(model, tuple(err["loc"]))
        valid = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(err["loc"][-1]), valid, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{owner}: unknown key {loc!r}; valid keys here: {', '.join(valid)}{hint}"
    if err["type"] == "missing":
        return f"{owner}: missing required key {loc!r}"
    expected = str((err.get("ctx") or {}).get("expected", ""))
    options = re.findall(r"'([^']*)'", expected)
    close = difflib.get_close_matches(str(err.get("input")), options, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    shown = repr(err.get("input"))
    value = f"bad value {shown} for {loc!r}" if len(shown) <= 120 else f"bad value for {loc!r}"
    return f"{owner}: {value}: {err['msg']}{hint}"
