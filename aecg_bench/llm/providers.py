"""Code paths that actually produce a model's output, and how their failures are classified.

The client above them owns caching, retries, limits and accounting; a provider
only turns one request into one `ProviderResult` or raises one of:
`TransientProviderError` (retry: 429, 5xx, timeouts, connection errors,
empty or malformed responses; `ConnectionFailure` when no HTTP reply came
back at all), `ContextLimitError` (the sample ends as
`limit_exceeded`), `FatalProviderError` (auth, unknown model: stop the run,
since every later call would fail the same way).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from aecg_bench.errors import AecgBenchError, one_line
from aecg_bench.llm.embedded_server import serve_mode
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.llm.usage import Usage
from aecg_bench.types import UNPARSED_ARGUMENTS, ToolCall


@dataclass(frozen=True)
class Request:
    messages: list[dict[str, Any]]
    params: dict[str, Any]  # temperature, max_tokens, stop, seed, response_format, grammar, tool_choice
    tools: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class ProviderResult:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"


class TransientProviderError(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ConnectionFailure(TransientProviderError):
    """No HTTP reply at all: refused, unresolvable host, TLS handshake, proxy down (`connected=False`),
    or a server that accepted the connection and never answered (`connected=True`). The client hands
    these to its endpoint watch (llm/breaker.py). `reason` is the short cause, for one line."""

    def __init__(self, message: str, reason: str, *, connected: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.connected = connected


class ContextLimitError(Exception):
    """The prompt does not fit the model's context window."""


class FatalProviderError(AecgBenchError):
    """Retrying cannot help (bad key, unknown model, malformed request): the run stops as `failed`."""


# HTTP statuses that every retry would meet again: bad key, no permission, unknown model/route.
# 400 is fatal too unless it is about JSON (a malformed structured output is worth a retry).
FATAL_STATUSES = frozenset({401, 403, 404})


class Provider:
    def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:  # pragma: no cover
        raise NotImplementedError

    def supports_seed(self, spec: ModelSpec) -> bool:
        """Whether the request's `seed` reaches the model's sampler (run.json's `seed_effects`)."""
        return False


class LiteLLMProvider(Provider):
    """Any litellm model string, OpenAI-compatible servers, and the embedded local model."""

    def supports_seed(self, spec: ModelSpec) -> bool:
        """llama.cpp seeds its sampler; other providers as litellm lists their parameters."""
        from aecg_bench.llm.litellm_setup import LOCAL_PROVIDER, import_litellm

        provider, _, name = spec.model.partition("/")
        if provider == LOCAL_PROVIDER:
            return True
        try:
            supported = import_litellm().get_supported_openai_params(model=name, custom_llm_provider=provider)
        except Exception:  # an unknown provider: nothing is claimed
            return False
        return "seed" in (supported or [])

    def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:
        from aecg_bench.llm.litellm_setup import LOCAL_PROVIDER, import_litellm

        litellm = import_litellm()
        params = dict(request.params)
        kwargs: dict[str, Any] = {
            "model": spec.model,
            "messages": request.messages,
            "timeout": spec.timeout_s,
            "num_retries": 0,  # the client retries, with its own policy and accounting
            "max_retries": 0,
        }
        if spec.api_base:
            kwargs["api_base"] = spec.api_base
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise FatalProviderError(
                    f"model {spec.label!r} reads its API key from ${spec.api_key_env}, which is not set"
                )
            kwargs["api_key"] = key
        elif spec.api_base:
            kwargs["api_key"] = "none"  # local servers accept any key; litellm insists on one
        grammar = params.pop("grammar", None)
        is_local = spec.model.startswith(LOCAL_PROVIDER + "/")
        if is_local and serve_mode(spec.options) == "server":
            _to_embedded_server(spec, kwargs, params)
            is_local = False
        if grammar:
            if is_local:
                kwargs["grammar"] = grammar
            else:  # llama.cpp and vLLM servers take a grammar in the request body
                kwargs["extra_body"] = {"grammar": grammar}
        if is_local:
            kwargs.update({k: v for k, v in spec.options.items() if k in ("n_ctx", "n_threads", "ram_cache_mb")})
        kwargs.update({k: v for k, v in params.items() if v is not None})
        if request.tools:
            kwargs["tools"] = request.tools
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:  # classified below; anything unknown is transient
            error = classify_litellm_error(exc)
            if isinstance(error, FatalProviderError):
                raise FatalProviderError(f"model {spec.label!r} ({spec.model}): {error}") from None
            raise error from exc
        return _parse_response(response)


def _to_embedded_server(spec: ModelSpec, kwargs: dict[str, Any], params: dict[str, Any]) -> None:
    """Point a call to the embedded model at the shared llama-server (OpenAI-compatible): same
    model file and context cut as in-process, only the transport differs."""
    from aecg_bench.llm import embedded_server
    from aecg_bench.llm.local import fit_served

    name = spec.model.partition("/")[2]
    url = embedded_server.server_url(name, spec.options, spec.max_concurrency)
    n_ctx = int(spec.options.get("n_ctx", 2048))
    kwargs["messages"] = fit_served(name, n_ctx, kwargs["messages"], int(params.get("max_tokens") or 512))
    kwargs.update(model=f"openai/{name}", api_base=f"{url}/v1", api_key="none")


def _parse_response(response: Any) -> ProviderResult:
    try:
        choice = response.choices[0]
        message = choice.message
    except (AttributeError, IndexError, TypeError) as exc:
        raise TransientProviderError(f"malformed response: {exc}") from exc
    text = message.content or ""
    calls = []
    for tc in getattr(message, "tool_calls", None) or []:
        calls.append(ToolCall(name=tc.function.name, arguments=parse_arguments(tc.function.arguments), id=tc.id or ""))
    usage = getattr(response, "usage", None)
    cached = 0
    details = getattr(usage, "prompt_tokens_details", None)
    if details is not None:
        cached = getattr(details, "cached_tokens", 0) or 0
    return ProviderResult(
        text=text,
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cached_tokens=cached,
        ),
        finish_reason=getattr(choice, "finish_reason", None) or "stop",
    )


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as an object; anything that is not one (unreadable JSON, a list, a number)
    travels as `{UNPARSED_ARGUMENTS: <the raw text>}` so an evaluator can refuse it as its original does."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return dict(raw)
    text = str(raw)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return {UNPARSED_ARGUMENTS: text}
    return parsed if isinstance(parsed, dict) else {UNPARSED_ARGUMENTS: text}


def classify_litellm_error(exc: Exception) -> Exception:
    """Map litellm/openai exceptions to the three kinds the client acts on."""
    import litellm

    name = type(exc).__name__
    text = str(exc).lower()
    if isinstance(exc, litellm.ContextWindowExceededError) or "exceed context window" in text:
        return ContextLimitError(str(exc)[:500])
    status = getattr(exc, "status_code", None)
    fatal_type = isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError | litellm.NotFoundError)
    # A plain APIError (or any other wrapper) that carries one of these statuses is as final.
    if fatal_type or status in FATAL_STATUSES or (status == 400 and "json" not in text):
        shown = f" (HTTP {status})" if status else ""
        return FatalProviderError(one_line(f"{name}{shown}: {exc}", 300))
    failure = transport_failure(exc)
    if failure is not None:
        return failure
    return TransientProviderError(f"{name} (status {status}): {str(exc)[:300]}", retry_after=retry_after_of(exc))


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and everything it was raised from or while handling (litellm and openai wrap)."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in out):
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def transport_failure(exc: BaseException) -> ConnectionFailure | None:
    """A `ConnectionFailure` when no HTTP reply came back, None otherwise. Read from the types in the
    exception chain (socket, ssl, httpx, openai), never from message text: a proxy's 502 whose body
    says "connection refused" was an answer."""
    import socket
    import ssl

    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if tls is not None:
        detail = getattr(tls, "verify_message", None) or getattr(tls, "reason", None) or "handshake failed"
        reason, connected = f"TLS handshake failed ({detail})", False
    elif any(isinstance(e, socket.gaierror) for e in chain):
        reason, connected = "the host name does not resolve", False
    elif any(isinstance(e, ConnectionRefusedError) for e in chain):
        reason, connected = "connection refused", False
    elif "ProxyError" in names:
        reason, connected = "the proxy failed", False
    elif "ConnectTimeout" in names:
        reason, connected = "connecting timed out", False
    elif names & {"ReadTimeout", "WriteTimeout", "PoolTimeout", "APITimeoutError"}:
        reason, connected = "the server accepted the connection but sent no answer in time", True
    elif "RemoteProtocolError" in names:
        reason, connected = "the server closed the connection without an answer", True
    elif names & {"ConnectError", "APIConnectionError"}:
        reason, connected = "cannot connect", False
    else:
        return None
    detail = one_line(str(chain[-1]) or type(chain[-1]).__name__, 200)
    return ConnectionFailure(f"{type(exc).__name__}: {reason} ({detail})", reason, connected=connected)


def retry_after_of(exc: Exception) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, if the error carries one."""
    headers: dict[str, str] = {}
    for source in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if source:
            try:
                headers.update({k.lower(): v for k, v in dict(source).items()})
            except (TypeError, ValueError):
                continue
    if "retry-after-ms" in headers:
        try:
            return float(headers["retry-after-ms"]) / 1000.0
        except ValueError:
            pass
    if "retry-after" in headers:
        try:
            return float(headers["retry-after"])
        except ValueError:
            from email.utils import parsedate_to_datetime

            try:
                import time

                return max(parsedate_to_datetime(headers["retry-after"]).timestamp() - time.time(), 0.0)
            except (TypeError, ValueError):
                return None
    return None
