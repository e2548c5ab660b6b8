"""How a model is reached: one `ModelSpec` per configured model label."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aecg_bench.llm.ratelimit import RateLimit


class Price(BaseModel):
    """Dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float
    output: float
    cached_input: float | None = None


class ModelSpec(BaseModel):
    """A model as the config describes it.

    `provider` says which code path serves it: `litellm` (any litellm model
    string, OpenAI-compatible servers through `openai/<name>` + `api_base`, and
    the embedded `local` model, registered as a litellm custom provider) or
    `mock` (scripted outputs for tests; never a real score).
    Secrets never live here: `api_key_env` names the environment variable.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str  # name used in configs, records and result paths
    provider: Literal["litellm", "mock"] = "litellm"
    model: str  # litellm model id, e.g. "openai/gpt-4.1-mini", "aecg-local/smollm2-135m-instruct"
    api_base: str | None = None
    api_key_env: str | None = None
    max_concurrency: int = Field(4, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    native_tools: bool = True  # False: tool calls are emulated with constrained JSON output
    grammar: bool = False  # the server accepts GBNF grammars (llama.cpp); otherwise grammars are dropped
    # how verdicts and routes are constrained where there is no grammar (aecg_bench/llm/structured.py):
    # json_schema (response_format), tool_call (one forced function call), none (free text, parsed)
    structured_output: Literal["none", "json_schema", "tool_call"] = "none"
    temperature: float = 0.0
    max_tokens: int = Field(512, ge=1)  # default when a call does not ask for a length
    max_output_tokens: int | None = Field(None, ge=1)  # hard cap on every call (small local models)
    price: Price | None = None  # overrides the versioned price table
    rate_limit: RateLimit | None = None  # shared by every process of a sweep (llm/ratelimit.py)
    options: dict[str, Any] = Field(default_factory=dict)  # provider-specific (mock policy, n_ctx, ...)

    @model_validator(mode="after")
    def _tool_call_needs_native_tools(self) -> ModelSpec:
        if self.structured_output == "tool_call" and not self.native_tools:
            raise ValueError(
                "structured_output=tool_call needs native_tools=true; use json_schema (or none) for this model"
            )
        return self

    @property
    def provider_key(self) -> str:
        """What a provider limits: the model behind one endpoint and one API key."""
        if self.rate_limit is not None and self.rate_limit.key:
            return self.rate_limit.key
        return f"{self.model}@{self.api_base or ''}#{self.api_key_env or ''}"


class RetryPolicy(BaseModel):
    """Bounded exponential backoff with full jitter; Retry-After wins when given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(6, ge=1)
    base_delay_s: float = Field(1.0, ge=0)
    max_delay_s: float = Field(60.0, ge=0)
    max_retry_after_s: float = Field(300.0, ge=0)
    # an endpoint that answered and then refuses connections is retried this long, then the run stops
    # `interrupted` (llm/breaker.py)
    outage_window_s: float = Field(300.0, gt=0)
