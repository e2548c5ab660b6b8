"""A small GBNF checker for tests: a non-recursive grammar (the memory-side reply grammars are) becomes one
Python regex, so a test can ask whether a reply is in the language a grammar allows, without a model.

Supports what those grammars use: one rule per line (`name ::= body`), string literals with escapes,
character classes, rule references, grouping, alternation and the ?, *, + and {m,n} repetitions.
llama.cpp's own parser (`LlamaGrammar.from_string`) still checks that a grammar compiles.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<lit>"(?:\\.|[^"\\])*")
  | (?P<cls>\[(?:\\.|[^\]\\])*\])
  | (?P<rep>\{\d+(?:,\d*)?\}|[?*+])
  | (?P<op>[()|])
  | (?P<ref>[A-Za-z][A-Za-z0-9_-]*)
)""",
    re.X,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "[": "[", "]": "]"}


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
        elif body[i + 1] == "x":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        else:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
    return "".join(out)


def rules(grammar: str) -> dict[str, str]:
    out = {}
    for line in grammar.splitlines():
        if line.strip():
            name, body = line.split("::=", 1)
            out[name.strip()] = body.strip()
    return out


def _regex(name: str, table: dict[str, str], active: tuple[str, ...]) -> str:
    if name in active:
        raise ValueError(f"recursive rule {name!r}: the checker handles non-recursive grammars only")
    body, pos, parts = table[name], 0, []
    while pos < len(body):
        m = _TOKEN.match(body, pos)
        if m is None:
            if body[pos:].strip():
                raise ValueError(f"cannot read {body[pos:]!r} in rule {name!r}")
            break
        pos = m.end()
        if m["lit"]:
            parts.append("(?:" + re.escape(_unescape(m["lit"][1:-1])) + ")")
        elif m["cls"]:
            parts.append(m["cls"])  # GBNF classes use the regex syntax (ranges, ^, \x escapes)
        elif m["rep"]:
            parts.append(m["rep"])
        elif m["op"]:
            parts.append("(?:" if m["op"] == "(" else m["op"])
        else:
            parts.append("(?:" + _regex(m["ref"], table, (*active, name)) + ")")
    return "".join(parts)


def matches(grammar: str, text: str) -> bool:
    """Whether `text` is a whole sentence of `grammar` (from its `root` rule)."""
    return re.fullmatch(_regex("root", rules(grammar), ()), text, re.S) is not None
