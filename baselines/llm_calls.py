"""Memory-side LLM calls of the baselines and tolerant parsing of their replies.

Every call goes through `services.llm` with role `memory` (the runner rebinds
the client per sample for seeding and usage accounting). A reply that does not
parse is never an exception: callers get None or an empty list and record a
`skip` audit event. A prompt the model cannot take (context window) is the
same kind of skip; a provider failure after retries (`InfraError`) propagates,
and since every baseline calls the LLM before it changes its state, the memory
is left as it was and the runner redoes the sample.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from aecg_bench.contracts import MemoryMethod
from aecg_bench.errors import ConfigError
from aecg_bench.llm.providers import ContextLimitError


def ask(
    method: MemoryMethod,
    *,
    system: str,
    user: str,
    purpose: str,
    max_tokens: int = 512,
    temperature: float | None = 0.0,
    role: str = "memory",
    model: str | None = None,
    grammar: str | None = None,
) -> str | None:
    """The reply text, or None (audited) when the prompt exceeds the model's context.

    `role` and `model` let multi-model methods (EDV's distiller and verifiers) name the
    pool member that answers and the role its tokens are accounted under; `grammar` is a
    decoding aid that servers without grammars ignore."""
    llm = method.services.llm
    if llm is None:
        raise ConfigError(f"memory {method.name!r} needs an LLM for its {purpose} step; none was given")
    try:
        reply = llm.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            role=role,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            grammar=grammar,
        )
    except ContextLimitError as exc:
        method.audit.record("skip", purpose=purpose, reason="context_limit", error=str(exc)[:300])
        return None
    return reply.text


def skip(method: MemoryMethod, purpose: str, reply: str | None, **data: Any) -> None:
    """Audit a reply that could not be used (None: no reply, already audited by `ask`)."""
    if reply is not None:
        method.audit.record("skip", purpose=purpose, reason="unparsable", reply=reply[:500], **data)


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def extract_json(text: str | None) -> Any:
    """The first JSON array or object in a reply (fenced or not); None when there is none."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for i, ch in enumerate(candidate):
            if ch not in "[{":
                continue
            try:
                value, _ = decoder.raw_decode(candidate[i:])
            except json.JSONDecodeError:
                continue
            return value
    return None


def tagged(text: str | None, tag: str) -> str | None:
    """The content of <tag>...</tag> (closing tag optional, as models often stop early)."""
    if not text:
        return None
    m = re.search(rf"<{tag}>(.*?)(?:</{tag}>|$)", text, re.S)
    return m.group(1).strip() if m else None


_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*?)(?=^\s*\d+[.)]\s+|\Z)", re.S | re.M)


def numbered_list(text: str | None) -> list[str]:
    """Items of a '1. ... 2. ...' list, each flattened to one line."""
    if not text:
        return []
    return [" ".join(m.group(1).split()) for m in _NUMBERED.finditer(text) if m.group(1).strip()]


def stable_uniform(*parts: object) -> float:
    """A uniform number in [0, 1) that depends only on `parts` (seeded, order-free draws)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def stable_seed(*parts: object) -> int:
    return int(stable_uniform(*parts) * 2**63)
