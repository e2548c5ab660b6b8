"""Tagged JSON for Python values that cross the sandbox boundary.

Why not pickle: the parent must never unpickle bytes that untrusted code
produced (unpickling runs code). Why not plain JSON: it would turn tuples into
lists, sets into nothing and `inf` into an error, and benchmark verdicts depend
on exactly those differences (`(1, 2) == [1, 2]` is False).

The encoding keeps the types that equality can see: None, bool, int (any
size), float (incl. inf/nan/-0.0), complex, str, bytes, list, tuple, set,
frozenset, dict (and the Counter/OrderedDict/defaultdict subclasses), deque,
range, Decimal, Fraction, and numpy scalars/arrays (decoded back to numpy when
numpy is importable). Anything else becomes an `Opaque` stand-in that equals
nothing, so a value of an unknown type can never pass a comparison by accident.
A `Digest` stands for a value too large to ship (see `calls_program.py`): it
equals only a digest of the same bytes.

This module is stdlib-only because its source is also shipped into the sandbox
(see `aecg_bench.sandbox.functions`), where the project's package is not
importable.
"""

from __future__ import annotations

import base64
import collections
import decimal
import fractions
import json
import math
from dataclasses import dataclass
from typing import Any

TAG = "$"
MAX_DEPTH = 200
_MAX_PLAIN_INT_BITS = 12_000  # ~3,600 decimal digits: below Python's int->str limit (4,300)
_DICT_KINDS = {
    "Counter": collections.Counter,
    "OrderedDict": collections.OrderedDict,
    "defaultdict": dict,  # the default factory cannot cross; equality ignores it
}


class Opaque:
    """Stand-in for a value the codec cannot carry; equal only to itself."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text

    def __repr__(self) -> str:
        return f"<opaque {self.type_name}: {self.text}>"


@dataclass(frozen=True)
class Digest:
    """SHA-256 of a large value's `marshal` (version 2) bytes, sent instead of the value."""

    sha256: str
    size: int


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return {TAG: "float", "v": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _opaque(value: Any, why: str = "") -> dict[str, Any]:
    try:
        text = repr(value)[:200]
    except Exception as exc:  # a broken __repr__ must not break the encoder
        text = f"<repr failed: {type(exc).__name__}>"
    return {TAG: "opaque", "type": type(value).__qualname__, "repr": why or text}


def _numpy(value: Any, depth: int) -> Any:
    """numpy values by duck typing (the sandbox side may not have numpy importable)."""
    if type(value).__name__ == "ndarray":
        return {TAG: "ndarray", "dtype": str(value.dtype), "v": encode(value.tolist(), depth + 1)}
    if hasattr(value, "item") and hasattr(value, "dtype"):
        return {TAG: "np", "dtype": str(value.dtype), "v": encode(value.item(), depth + 1)}
    return _opaque(value)


def encode(value: Any, depth: int = 0) -> Any:
    """A JSON-serialisable form of `value` (see the module docstring for what survives)."""
    if depth > MAX_DEPTH:
        return _opaque(value, "nested too deeply")
    if value is None or type(value) in (bool, str):
        return value
    if type(value).__module__ == "numpy":  # before float: numpy.float64 subclasses float
        return _numpy(value, depth)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        if abs(value).bit_length() > _MAX_PLAIN_INT_BITS:
            return {TAG: "int", "v": hex(value)}
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, complex):
        return {TAG: "complex", "v": [_float(value.real), _float(value.imag)]}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {TAG: "tuple", "v": [encode(v, depth + 1) for v in value]}
    if isinstance(value, set | frozenset):
        kind = "frozenset" if isinstance(value, frozenset) else "set"
        return {TAG: kind, "v": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        name = type(value).__name__
        kind = name if name in _DICT_KINDS and type(value).__module__ == "collections" else "dict"
        return {
            TAG: "dict",
            "kind": kind,
            "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()],
        }
    if isinstance(value, bytes | bytearray):
        kind = "bytearray" if isinstance(value, bytearray) else "bytes"
        return {TAG: kind, "v": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, collections.deque):
        return {TAG: "deque", "v": [encode(v, depth + 1) for v in value]}
    if isinstance(value, range):
        return {TAG: "range", "v": [value.start, value.stop, value.step]}
    if isinstance(value, decimal.Decimal):
        return {TAG: "decimal", "v": str(value)}
    if isinstance(value, fractions.Fraction):
        return {TAG: "fraction", "v": [encode(value.numerator), encode(value.denominator)]}
    if isinstance(value, Digest):
        return {TAG: "digest", "v": [value.sha256, value.size]}
    return _opaque(value)


def _decode_numpy(obj: dict[str, Any]) -> Any:
    try:
        import numpy as np
    except ImportError:
        return Opaque(f"numpy.{obj['dtype']}", "numpy is not importable here")
    inner = decode(obj["v"])
    if obj[TAG] == "ndarray":
        return np.array(inner, dtype=obj["dtype"])
    return np.dtype(obj["dtype"]).type(inner)


def decode(obj: Any) -> Any:
    """Inverse of `encode`."""
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    kind = obj.get(TAG)
    if kind == "tuple":
        return tuple(decode(v) for v in obj["v"])
    if kind in ("set", "frozenset"):
        items = (decode(v) for v in obj["v"])
        return frozenset(items) if kind == "frozenset" else set(items)
    if kind == "dict":
        mapping = {decode(k): decode(v) for k, v in obj["v"]}
        cls = _DICT_KINDS.get(obj.get("kind", "dict"), dict)
        return mapping if cls is dict else cls(mapping)
    if kind == "float":
        return float(obj["v"])
    if kind == "int":
        return int(obj["v"], 16)
    if kind == "complex":
        return complex(decode(obj["v"][0]), decode(obj["v"][1]))
    if kind in ("bytes", "bytearray"):
        raw = base64.b64decode(obj["v"])
        return bytearray(raw) if kind == "bytearray" else raw
    if kind == "deque":
        return collections.deque(decode(v) for v in obj["v"])
    if kind == "range":
        return range(*obj["v"])
    if kind == "decimal":
        return decimal.Decimal(obj["v"])
    if kind == "fraction":
        return fractions.Fraction(decode(obj["v"][0]), decode(obj["v"][1]))
    if kind in ("np", "ndarray"):
        return _decode_numpy(obj)
    if kind == "digest":
        return Digest(obj["v"][0], obj["v"][1])
    if kind == "opaque":
        return Opaque(obj["type"], obj["repr"])
    raise ValueError(f"not an encoded value: {json.dumps(obj)[:200]}")


def dumps(value: Any) -> str:
    """`value` as one line of tagged JSON."""
    return json.dumps(encode(value), separators=(",", ":"), allow_nan=False)


def loads(text: str) -> Any:
    return decode(json.loads(text))
