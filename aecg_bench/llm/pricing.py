"""Versioned price table (dollars per million tokens).

Costs in records are computed from this table so that a rerun reports the same
dollars; the table version is written into run.json. Prices are the providers'
list prices on the version date; a spec's own `price` overrides them. Unknown
models fall back to litellm's bundled cost map, and are flagged when that has
nothing either.
"""

from __future__ import annotations

from aecg_bench.llm.spec import ModelSpec, Price
from aecg_bench.llm.usage import Usage

PRICE_TABLE_VERSION = "2026-11-30"

PRICES: dict[str, Price] = {
    "gpt-4.1": Price(input=2.00, cached_input=0.50, output=8.00),
    "gpt-4.1-mini": Price(input=0.40, cached_input=0.10, output=1.60),
    "gpt-4.1-nano": Price(input=0.10, cached_input=0.025, output=0.40),
    "gpt-4o": Price(input=2.50, cached_input=1.25, output=10.00),
    "gpt-4o-mini": Price(input=0.15, cached_input=0.075, output=0.60),
}

FREE_PROVIDERS = ("mock",)
FREE_PREFIXES = ("aecg-local/",)


def price_for(spec: ModelSpec) -> Price | None:
    """The price that applies to a spec, or None when nothing is known."""
    if spec.price is not None:
        return spec.price
    if spec.provider in FREE_PROVIDERS or spec.model.startswith(FREE_PREFIXES):
        return Price(input=0.0, output=0.0, cached_input=0.0)
    bare = spec.model.split("/")[-1]
    if bare in PRICES:
        return PRICES[bare]
    return _litellm_price(spec.model)


def _litellm_price(model: str) -> Price | None:
    try:
        from aecg_bench.llm.litellm_setup import import_litellm

        info = import_litellm().model_cost.get(model) or import_litellm().model_cost.get(model.split("/")[-1])
    except Exception:  # pragma: no cover - litellm missing or map malformed
        return None
    if not info or "input_cost_per_token" not in info:
        return None
    return Price(
        input=info["input_cost_per_token"] * 1e6,
        output=info.get("output_cost_per_token", 0.0) * 1e6,
        cached_input=(info.get("cache_read_input_token_cost") or info["input_cost_per_token"]) * 1e6,
    )


def cost_of(price: Price | None, usage: Usage) -> float:
    if price is None:
        return 0.0
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    fresh = max(usage.input_tokens - usage.cached_tokens, 0)
    return (fresh * price.input + usage.cached_tokens * cached_rate + usage.output_tokens * price.output) / 1e6
