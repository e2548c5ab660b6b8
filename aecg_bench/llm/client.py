"""The one client every model call in the project goes through.

Agents, judges, distillers, verifiers, memory consolidation and user
simulators all call `LLMClient.complete`, so caching, retries, concurrency
limits and accounting apply to every token. Per call:

    resolve role -> model spec; build the exact provider request; cache lookup
    (hit: return, no provider call); else, under the model's concurrency
    limit, call the provider with bounded retries (backoff + full jitter,
    Retry-After honoured); reject empty output as a transient failure; store;
    account usage and dollars per role and per model.

A view made by `with_context` shares providers, cache and limits but carries
its own seed, scope and usage meters (one per sample), so records say exactly
what each sample cost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aecg_bench.errors import ConfigError, InfraError, unknown_choice
from aecg_bench.llm import structured as structured_output
from aecg_bench.llm import tool_emulation
from aecg_bench.llm.breaker import EndpointUnreachable, EndpointWatch
from aecg_bench.llm.budget import SweepBudget
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.pricing import cost_of, price_for
from aecg_bench.llm.providers import (
    ConnectionFailure,
    ContextLimitError,
    LiteLLMProvider,
    Provider,
    ProviderResult,
    Request,
    TransientProviderError,
)
from aecg_bench.llm.ratelimit import SharedRateLimiter, estimate_tokens
from aecg_bench.llm.spec import ModelSpec, RetryPolicy
from aecg_bench.llm.structured import OutputSchema
from aecg_bench.llm.usage import Usage, UsageMeter
from aecg_bench.types import ToolCall

log = logging.getLogger("aecg_bench.llm")

# Spec options that change how a call is transported, not what it returns: in-process or served by
# llama-server (aecg_bench/llm/embedded_server.py), and with how many threads, cache bytes and slots.
TRANSPORT_OPTIONS = frozenset({"n_threads", "ram_cache_mb", "serve", "parallel"})


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    cost: float  # dollars this output is worth at list price (also when served from cache)
    cached: bool
    latency: float
    model: str  # model label that served the call
    role: str
    finish_reason: str
    key: str
    retries: int = 0
    structured: str = ""  # how the reply was constrained to the call's schema: json_schema | tool_call | ""


class _Shared:
    """State shared by every view of one client: specs, providers, cache, limits."""

    def __init__(
        self,
        models: dict[str, ModelSpec],
        roles: dict[str, str],
        cache: ResponseCache,
        retry: RetryPolicy,
        providers: dict[str, Provider] | None,
        sleep: Callable[[float], None],
        rate_limiter: SharedRateLimiter | None,
        budget: SweepBudget | None,
        endpoints: EndpointWatch | None,
    ) -> None:
        self.models = models
        self.roles = roles
        self.cache = cache
        self.retry = retry
        self.sleep = sleep
        if providers is None:
            from aecg_bench.llm.mock import MockProvider

            providers = {"litellm": LiteLLMProvider(), "mock": MockProvider()}
        self.providers = providers
        self.limits = {label: threading.BoundedSemaphore(spec.max_concurrency) for label, spec in models.items()}
        self.prices = {label: price_for(spec) for label, spec in models.items()}
        self.rate_limiter = rate_limiter
        self.budget = budget
        # connection failures go to the (sweep's) endpoint watch; in-process models have no endpoint
        self.endpoints = endpoints or EndpointWatch(outage_window_s=retry.outage_window_s, sleep=sleep)
        self.in_process = EndpointWatch(outage_window_s=retry.outage_window_s, sleep=sleep)
        self.endpoint_names = {label: endpoint_of(spec) for label, spec in models.items()}
        limited = sorted(label for label, spec in models.items() if spec.rate_limit is not None)
        if limited and rate_limiter is None:
            raise ConfigError(f"models {', '.join(limited)} have a rate_limit but the client has no rate limiter")


class LLMClient:
    def __init__(
        self,
        models: dict[str, ModelSpec],
        roles: dict[str, str],
        cache: ResponseCache | None = None,
        retry: RetryPolicy | None = None,
        *,
        providers: dict[str, Provider] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rate_limiter: SharedRateLimiter | None = None,
        budget: SweepBudget | None = None,
        endpoints: EndpointWatch | None = None,
        seed: int = 0,
        scope: str = "",
        meters: Sequence[UsageMeter] = (),
    ) -> None:
        for role, label in roles.items():
            if label not in models:
                raise unknown_choice(f"model for role {role!r}", label, models)
        self._shared = _Shared(
            models,
            roles,
            cache if cache is not None else ResponseCache(None, "off"),
            retry or RetryPolicy(),
            providers,
            sleep,
            rate_limiter,
            budget,
            endpoints,
        )
        self.seed = seed
        self.scope = scope
        self.meters = tuple(meters)
        self.sample_index = 0
        self.temperature: float | None = None
        self.usage_role: str | None = None

    # -- views ---------------------------------------------------------------

    def with_context(
        self,
        *,
        seed: int | None = None,
        scope: str | None = None,
        meter: UsageMeter | None = None,
        sample_index: int | None = None,
        temperature: float | None = None,
        usage_role: str | None = None,
    ) -> LLMClient:
        """A view sharing providers, cache and limits, with its own seed, scope, usage meters
        (added to the parent's), default sample index and default temperature (rollouts of
        EDV's executors sample at their own temperature without the framework knowing).
        `usage_role` accounts every call of the view under that role instead of the call's own
        (EDV's executor/solver split); it changes neither the model a role resolves to nor the
        cache key."""
        view = object.__new__(LLMClient)
        view._shared = self._shared
        view.seed = self.seed if seed is None else seed
        view.scope = self.scope if scope is None else scope
        view.meters = (*self.meters, meter) if meter is not None else self.meters
        view.sample_index = self.sample_index if sample_index is None else sample_index
        view.temperature = self.temperature if temperature is None else temperature
        view.usage_role = self.usage_role if usage_role is None else usage_role
        return view

    def seed_support(self) -> dict[str, bool]:
        """Per model label: whether the provider passes the request's `seed` to its sampler."""
        return {label: self._shared.providers[s.provider].supports_seed(s) for label, s in self.models.items()}

    @property
    def cache(self) -> ResponseCache:
        return self._shared.cache

    @property
    def models(self) -> dict[str, ModelSpec]:
        return self._shared.models

    def model_for(self, role: str, model: str | None = None) -> ModelSpec:
        """The spec serving `role` (or the explicit model label)."""
        models, roles = self._shared.models, self._shared.roles
        if model is not None:
            if model not in models:
                raise unknown_choice("model", model, models)
            return models[model]
        label = roles.get(role) or roles.get("default")
        if label is None:
            raise ConfigError(f"no model assigned to role {role!r} and no default; roles: {', '.join(sorted(roles))}")
        return models[label]

    # -- calls ---------------------------------------------------------------

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str = "agent",
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        response_format: dict[str, Any] | None = None,
        grammar: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        parallel_tool_calls: bool = False,
        sample_index: int | None = None,
        scope: str | None = None,
        account: str | None = None,
        schema: OutputSchema | None = None,
    ) -> Completion:
        """One model call. `role` picks the model (`model.roles`); `account` names the role the
        call's usage is recorded under (a framework's planner, critic, router...; default `role`).
        A view's `usage_role` overrides both for accounting (EDV's executor/solver split).
        `schema` is the reply's shape for models without grammars whose spec names a
        `structured_output` mode; the reply text is then the JSON object (`Completion.structured`).
        `parallel_tool_calls` lets a model with emulated tool calls return several in one reply (native
        APIs allow that already)."""
        spec = self.model_for(role, model)
        accounted = self.usage_role or account or role
        sample_index = self.sample_index if sample_index is None else sample_index
        temperature = self.temperature if temperature is None else temperature
        structured = structured_mode(spec, schema, grammar, tools)
        if structured:
            assert schema is not None
            fields = structured_output.request_fields(structured, schema)
            response_format = fields.get("response_format", response_format)
            tools, tool_choice = fields.get("tools", tools), fields.get("tool_choice", tool_choice)
        request, emulated = self._build_request(
            spec,
            messages,
            temperature,
            max_tokens,
            stop,
            response_format,
            grammar,
            tools,
            tool_choice,
            parallel_tool_calls,
        )
        key = self.cache_key_for(spec, request, sample_index, scope)
        start = time.perf_counter()
        stored = self._shared.cache.get(key)
        if stored is not None:
            result, retries = _result_from_json(stored), 0
        else:
            budget, price = self._shared.budget, self._shared.prices[spec.label]
            if budget is not None:  # worst case: the estimated prompt and the whole output allowance
                budget.check(cost_of(price, Usage(estimate_tokens(request.messages, 0), request.params["max_tokens"])))
            result, retries = self._call_with_retries(spec, request, accounted)
            result = capped(result, request.params["max_tokens"], spec.label)
            if budget is not None:
                budget.add(cost_of(price, result.usage))
            # another process may have stored this request's reply meanwhile: use the first one
            result = _result_from_json(self._shared.cache.put(key, spec.label, _result_to_json(result)))
        text, calls = result.text, result.tool_calls
        if emulated:
            text, calls = tool_emulation.parse(result.text)
        elif structured:
            assert schema is not None
            text, calls = structured_output.reply_text(structured, schema, result), ()
        cost = cost_of(self._shared.prices[spec.label], result.usage)
        for meter in self.meters:
            meter.add(
                role=accounted,
                model=spec.label,
                usage=result.usage,
                cost=cost,
                cache_hit=stored is not None,
                retries=retries,
            )
        return Completion(
            text=text,
            tool_calls=calls,
            usage=result.usage,
            cost=cost,
            cached=stored is not None,
            latency=time.perf_counter() - start,
            model=spec.label,
            role=role,
            finish_reason=result.finish_reason,
            key=key,
            retries=retries,
            structured=structured,
        )

    async def acomplete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
        """Async form for async frameworks (AutoGen); runs the sync path in a worker thread."""
        return await asyncio.to_thread(self.complete, messages, **kwargs)

    def cache_key_for(self, spec: ModelSpec, request: Request, sample_index: int, scope: str | None) -> str:
        from aecg_bench.llm.cache import cache_key

        return cache_key(
            {
                "provider": spec.provider,
                "model": spec.model,
                "api_base": spec.api_base,
                "options": {k: v for k, v in spec.options.items() if k not in TRANSPORT_OPTIONS},
                "messages": request.messages,
                "tools": request.tools,
                "params": request.params,
                "seed": self.seed,
                "sample_index": sample_index,
                "scope": self.scope if scope is None else scope,
            }
        )

    # -- internals -----------------------------------------------------------

    def _build_request(
        self,
        spec: ModelSpec,
        messages: list[dict[str, Any]],
        temperature: float | None,
        max_tokens: int | None,
        stop: list[str] | None,
        response_format: dict[str, Any] | None,
        grammar: str | None,
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        parallel_tool_calls: bool = False,
    ) -> tuple[Request, bool]:
        if not messages:
            raise ValueError("complete() needs at least one message")
        msgs = [dict(m) for m in messages]
        emulated = bool(tools) and not spec.native_tools
        if emulated:
            assert tools is not None
            msgs, response_format = tool_emulation.emulate(msgs, tools, parallel=parallel_tool_calls)
            tools, tool_choice = None, None
        length = spec.max_tokens if max_tokens is None else max_tokens
        if spec.max_output_tokens is not None:
            length = min(length, spec.max_output_tokens)
        params: dict[str, Any] = {
            "temperature": spec.temperature if temperature is None else temperature,
            "max_tokens": length,
            "seed": self.seed,
        }
        if stop:
            params["stop"] = list(stop)
        if response_format:
            params["response_format"] = response_format
        if grammar and spec.grammar:  # a decoding aid: dropped where the server has no grammars
            params["grammar"] = grammar
        if tool_choice is not None and tools:
            params["tool_choice"] = tool_choice
        return Request(messages=msgs, params=params, tools=list(tools) if tools else None), emulated

    def _call_with_retries(self, spec: ModelSpec, request: Request, role: str) -> tuple[ProviderResult, int]:
        """Attempts until one succeeds. Transient failures count against `max_attempts`; connection
        failures go through the endpoint watch (llm/breaker.py): an endpoint that never answered stops
        the run after one cycle, one that answered before is retried until the outage window ends."""
        policy, endpoint = self._shared.retry, self._shared.endpoint_names[spec.label]
        watch = self._shared.endpoints if endpoint is not None else self._shared.in_process
        endpoint = endpoint or spec.model
        lease = spec.timeout_s + policy.max_delay_s + 30.0  # a prober silent longer than this is gone
        verdict = watch.check(endpoint, lease)
        if verdict is not None:
            raise EndpointUnreachable(unreachable_line(spec, endpoint, verdict))
        last_error = ""
        counted = tries = 0  # attempts that count against max_attempts; every retry (accounting)
        while True:
            try:
                result = self._attempt(spec, request)
                watch.answered(endpoint)
                if not result.text.strip() and not result.tool_calls:
                    raise TransientProviderError("empty output")
                return result, tries
            except ConnectionFailure as exc:
                last_error = str(exc)
                kind = watch.failed(endpoint, connected=exc.connected, lease_s=lease)
                if kind == "dead":
                    raise EndpointUnreachable(
                        unreachable_line(spec, endpoint, watch.check(endpoint, lease) or "")
                    ) from None
                if kind == "outage":
                    down = watch.outage_over(endpoint)
                    if down is not None:
                        self._count_error(spec, role, tries)
                        raise watch.outage(spec.label, endpoint, down, last_error) from None
                    tries += 1
                    self._shared.sleep(_backoff(policy, min(tries, 30), None))
                    continue
                counted += 1
                if counted >= policy.max_attempts:
                    reason = f"{exc.reason} ({counted} attempts; it has not answered once in this run)"
                    if kind == "probe" and watch.give_up(endpoint, reason) is not None:
                        self._count_error(spec, role, tries)
                        raise EndpointUnreachable(unreachable_line(spec, endpoint, reason)) from None
                    break
                retry_after = None
            except TransientProviderError as exc:
                watch.answered(endpoint)  # an HTTP reply, however bad: the endpoint is there
                last_error = str(exc)
                limiter, limit = self._shared.rate_limiter, spec.rate_limit
                if limiter is not None and limit is not None and exc.retry_after is not None:
                    limiter.block(spec.provider_key, limit, min(exc.retry_after, policy.max_retry_after_s))
                counted += 1
                if counted >= policy.max_attempts:
                    break
                retry_after = exc.retry_after
            except ContextLimitError:
                watch.answered(endpoint)
                raise
            tries += 1
            self._shared.sleep(_backoff(policy, counted - 1, retry_after))
        self._count_error(spec, role, tries)
        raise InfraError(f"model {spec.label!r} failed {counted} times; last error: {last_error}")

    def _attempt(self, spec: ModelSpec, request: Request) -> ProviderResult:
        """One provider call under the model's concurrency limit and the shared rate limit."""
        limiter, limit = self._shared.rate_limiter, spec.rate_limit
        with self._shared.limits[spec.label]:
            if limiter is not None and limit is not None:
                estimate = estimate_tokens(request.messages, request.params["max_tokens"])
                limiter.acquire(spec.provider_key, limit, estimate)
            result = self._shared.providers[spec.provider](spec, request)
            if limiter is not None and limit is not None:
                used = result.usage.input_tokens + result.usage.output_tokens
                limiter.settle(spec.provider_key, limit, estimate, used)
        return result

    def _count_error(self, spec: ModelSpec, role: str, retries: int) -> None:
        for meter in self.meters:
            meter.add_error(role=role, model=spec.label, retries=retries)


def endpoint_of(spec: ModelSpec) -> str | None:
    """What a connection goes to: the server URL, the provider's own endpoint for hosted models, or
    None for models answered in this process (mock, the embedded model)."""
    from aecg_bench.llm.embedded_server import serve_mode
    from aecg_bench.llm.litellm_setup import LOCAL_PROVIDER

    provider = spec.model.partition("/")[0]
    if spec.api_base:
        return spec.api_base.rstrip("/")
    if spec.provider == "mock" or (provider == LOCAL_PROVIDER and serve_mode(spec.options) != "server"):
        return None
    return f"{provider} (provider endpoint)" if provider != LOCAL_PROVIDER else f"{spec.model} (llama-server)"


def unreachable_line(spec: ModelSpec, endpoint: str, reason: str, then: str = ", then rerun to resume") -> str:
    """One line: which model, where, why, and what to set (the same for every run of the sweep)."""
    if spec.api_base:
        fix = (
            "start its server there (vLLM: vllm serve <model> --port <port>; llama.cpp: llama-server -m <gguf> "
            f"--port <port>) or point the model at the right URL (model=server reads AECG_API_BASE; or set "
            f"model.models.{spec.label}.api_base)"
        )
    else:
        fix = "check the network, the proxy (HTTPS_PROXY) and the provider's status"
    return f"model {spec.label!r} cannot reach {endpoint}: {reason}; {fix}{then}"


# Characters a reply may hold per token of its `max_tokens`: far above any tokenizer's average (about 4), so
# only a server that ignores the limit meets it (a 10 MB reply once cost 1.8 GB of RAM downstream).
REPLY_CHARS_PER_TOKEN = 32


def capped(result: ProviderResult, max_tokens: int, label: str) -> ProviderResult:
    """A reply cut to what its `max_tokens` allows (and marked `length`, as a server that honoured it
    would), before it is cached, parsed or put in a prompt; a warning says so."""
    limit = max(int(max_tokens or 1), 1) * REPLY_CHARS_PER_TOKEN
    if len(result.text) <= limit:
        return result
    log.warning(
        "model %r sent %d characters for max_tokens=%d (the server ignored the limit); kept the first %d",
        label,
        len(result.text),
        max_tokens,
        limit,
    )
    return dataclasses.replace(result, text=result.text[:limit], finish_reason="length")


def structured_mode(
    spec: ModelSpec, schema: OutputSchema | None, grammar: str | None, tools: list[dict[str, Any]] | None
) -> str:
    """How a call with an output schema is constrained on this model: "" when it has no schema, when a
    GBNF grammar constrains it instead (grammar-capable models), when it offers the task's tools, or when
    the provider supports neither mode (the reply is then parsed as free text)."""
    if schema is None or spec.structured_output == "none" or tools or (grammar and spec.grammar):
        return ""
    return spec.structured_output


def _backoff(policy: RetryPolicy, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(max(retry_after, 0.0), policy.max_retry_after_s)
    ceiling = min(policy.max_delay_s, policy.base_delay_s * (2**attempt))
    return random.uniform(0, ceiling)  # full jitter: spreads retries of concurrent callers


def _result_to_json(result: ProviderResult) -> dict[str, Any]:
    return {
        "text": result.text,
        "tool_calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in result.tool_calls],
        "usage": [result.usage.input_tokens, result.usage.output_tokens, result.usage.cached_tokens],
        "finish_reason": result.finish_reason,
    }


def _result_from_json(d: dict[str, Any]) -> ProviderResult:
    return ProviderResult(
        text=d["text"],
        tool_calls=tuple(ToolCall(**c) for c in d.get("tool_calls", ())),
        usage=Usage(*d["usage"]),
        finish_reason=d.get("finish_reason", "stop"),
    )
