"""The one LLM client: cache modes and keys, retries, limits, accounting, tool calls."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from conftest import mock_client

from aecg_bench.errors import CacheMissError, ConfigError, InfraError
from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy, UsageMeter
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.pricing import cost_of, price_for
from aecg_bench.llm.providers import FatalProviderError, Provider, ProviderResult, Request, TransientProviderError
from aecg_bench.llm.usage import Usage
from aecg_bench.types import ToolCall

MSG = [{"role": "user", "content": "add 2 and 3"}]


class ScriptedProvider(Provider):
    """Fails in a scripted way, then answers; records every call it receives."""

    def __init__(self, failures: list[Exception | str] | None = None, text: str = "fine") -> None:
        self.failures = list(failures or [])
        self.text = text
        self.calls: list[Request] = []
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0

    def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:
        with self.lock:
            self.calls.append(request)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            failure = self.failures.pop(0) if self.failures else None
        try:
            if isinstance(failure, Exception):
                raise failure
            if failure == "empty":
                return ProviderResult(text="   ")
            time.sleep(0.01)
            return ProviderResult(text=self.text, usage=Usage(100, 20, 40))
        finally:
            with self.lock:
                self.active -= 1


def _client(
    provider: Provider, tmp_path: Path | None = None, mode: str = "off", **spec_kw
) -> tuple[LLMClient, list[float]]:
    sleeps: list[float] = []
    spec = ModelSpec(label="m", model="openai/gpt-4o-mini", **spec_kw)
    cache = ResponseCache(tmp_path / "c.sqlite" if tmp_path else None, mode)  # type: ignore[arg-type]
    client = LLMClient(
        {"m": spec},
        {"default": "m"},
        cache,
        RetryPolicy(max_attempts=4, base_delay_s=0.5),
        providers={"litellm": provider},
        sleep=sleeps.append,
    )
    return client, sleeps


def test_cache_hit_skips_the_provider_and_read_only_replays_exactly(tmp_path):
    provider = ScriptedProvider()
    client, _ = _client(provider, tmp_path, "read_write")
    first = client.complete(MSG)
    second = client.complete(MSG)
    assert (first.cached, second.cached) == (False, True)
    assert len(provider.calls) == 1 and second.text == first.text and second.usage == first.usage
    ro, _ = _client(ScriptedProvider(text="different"), tmp_path, "read_only")
    replay = ro.complete(MSG)
    assert replay.text == "fine" and replay.cached


def test_read_only_miss_fails_loudly_with_the_key(tmp_path):
    client, _ = _client(ScriptedProvider(), tmp_path, "read_write")
    client.complete(MSG)
    ro, _ = _client(ScriptedProvider(), tmp_path, "read_only")
    with pytest.raises(CacheMissError, match=r"key [0-9a-f]{64}"):
        ro.complete([{"role": "user", "content": "never asked"}])


def test_cache_key_separates_seed_sample_index_scope_and_params(tmp_path):
    provider = ScriptedProvider()
    client, _ = _client(provider, tmp_path, "read_write")
    client.complete(MSG)
    client.with_context(seed=7).complete(MSG)
    client.complete(MSG, sample_index=1)
    client.complete(MSG, scope="judge")
    client.complete(MSG, temperature=0.7)
    client.complete(MSG)  # identical to the first: cached
    assert len(provider.calls) == 5


def test_transport_settings_do_not_change_the_key(tmp_path):
    a, _ = _client(ScriptedProvider(), tmp_path, "read_write", timeout_s=10, max_concurrency=1)
    b, _ = _client(ScriptedProvider(), tmp_path, "read_write", timeout_s=99, max_concurrency=8)
    assert a.complete(MSG).key == b.complete(MSG).key


def test_errors_and_empty_outputs_are_retried_and_never_cached(tmp_path):
    provider = ScriptedProvider(
        [TransientProviderError("429", retry_after=2.5), "empty", TransientProviderError("500")]
    )
    client, sleeps = _client(provider, tmp_path, "read_write")
    meter = UsageMeter()
    out = client.with_context(meter=meter).complete(MSG)
    assert out.text == "fine" and out.retries == 3
    assert sleeps[0] == 2.5  # Retry-After honoured
    assert all(0 <= s <= 2.0 for s in sleeps[1:])  # jittered exponential backoff below the ceiling
    assert len(client.cache) == 1
    assert meter.total()["retries"] == 3


def test_retries_are_bounded_then_infra_error(tmp_path):
    provider = ScriptedProvider([TransientProviderError("503")] * 10)
    client, sleeps = _client(provider, tmp_path, "read_write")
    meter = UsageMeter()
    with pytest.raises(InfraError, match="failed 4 times"):
        client.with_context(meter=meter).complete(MSG)
    assert len(provider.calls) == 4 and len(sleeps) == 3
    assert len(client.cache) == 0 and meter.total()["errors"] == 1


def test_retry_after_is_capped(tmp_path):
    provider = ScriptedProvider([TransientProviderError("429", retry_after=10_000)])
    client, sleeps = _client(provider)
    client.complete(MSG)
    assert sleeps == [300.0]


def test_fatal_provider_errors_are_not_retried():
    provider = ScriptedProvider([FatalProviderError("bad key")])
    client, sleeps = _client(provider)
    with pytest.raises(FatalProviderError):
        client.complete(MSG)
    assert sleeps == [] and len(provider.calls) == 1


def test_concurrency_limit_per_model():
    provider = ScriptedProvider()
    client, _ = _client(provider, max_concurrency=2)
    threads = [
        threading.Thread(target=client.complete, args=([{"role": "user", "content": f"q{i}"}],)) for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(provider.calls) == 8 and provider.max_active == 2


def test_usage_and_cost_aggregate_per_role_and_model():
    provider = ScriptedProvider()
    client, _ = _client(provider)
    meter = UsageMeter()
    view = client.with_context(meter=meter)
    view.complete(MSG, role="agent")
    view.complete([{"role": "user", "content": "judge this"}], role="judge")
    by_role = meter.by_role()
    assert set(by_role) == {"agent", "judge"}
    assert by_role["agent"]["input_tokens"] == 100 and by_role["agent"]["cached_tokens"] == 40
    expected = (60 * 0.15 + 40 * 0.075 + 20 * 0.60) / 1e6  # gpt-4o-mini list prices
    assert by_role["judge"]["cost"] == pytest.approx(expected)
    assert meter.by_model()["m"]["calls"] == 2


def test_price_override_and_free_local_model():
    spec = ModelSpec(label="x", model="openai/custom", price={"input": 1.0, "output": 2.0})
    assert cost_of(price_for(spec), Usage(1_000_000, 1_000_000)) == pytest.approx(3.0)
    local = ModelSpec(label="local", model="aecg-local/smollm2-135m-instruct")
    assert cost_of(price_for(local), Usage(10**6, 10**6)) == 0.0


def test_roles_map_to_models_and_unknown_names_fail_with_choices():
    with pytest.raises(ConfigError, match="valid choices: m"):
        LLMClient({"m": ModelSpec(label="m", model="x")}, {"agent": "gpt"})
    client = mock_client()
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        client.complete(MSG, model="nope")


def test_tool_calls_native_and_emulated():
    reply = '{"tool": "get_order", "arguments": {"order_id": "7"}}'
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}]
    native = mock_client(script=[{"match": "order", "reply": reply}])
    out = native.complete([{"role": "user", "content": "where is my order"}], tools=tools)
    assert out.tool_calls == (ToolCall(name="get_order", arguments={"order_id": "7"}, id="call_0"),)
    provider = ScriptedProvider(text=reply)
    emulated, _ = _client(provider, native_tools=False)
    out = emulated.complete([{"role": "user", "content": "where is my order"}], tools=tools)
    assert out.tool_calls[0].name == "get_order" and out.tool_calls[0].arguments == {"order_id": "7"}
    sent = provider.calls[0]
    assert sent.tools is None and sent.params["response_format"]["type"] == "json_schema"
    assert "get_order" in sent.messages[0]["content"]


def test_grammar_is_sent_only_to_grammar_capable_models():
    plain_provider, gram_provider = ScriptedProvider(), ScriptedProvider()
    plain, _ = _client(plain_provider)
    gram, _ = _client(gram_provider, grammar=True)
    plain.complete(MSG, grammar='root ::= "a"')
    gram.complete(MSG, grammar='root ::= "a"')
    assert (
        "grammar" not in plain_provider.calls[0].params and gram_provider.calls[0].params["grammar"] == 'root ::= "a"'
    )


def test_cache_export_makes_a_replay_bundle(tmp_path):
    client, _ = _client(ScriptedProvider(), tmp_path, "read_write")
    client.complete(MSG)
    n = client.cache.export(tmp_path / "bundle.sqlite")
    assert n == 1
    bundle = ResponseCache(tmp_path / "bundle.sqlite", "read_only")
    assert len(bundle) == 1


def test_max_output_tokens_caps_every_call():
    provider = ScriptedProvider()
    client, _ = _client(provider, max_output_tokens=64)
    client.complete(MSG, max_tokens=768)
    client.complete(MSG)
    assert [r.params["max_tokens"] for r in provider.calls] == [64, 64]


def test_the_first_stored_reply_wins_over_a_later_one(tmp_path):
    path = tmp_path / "cache.sqlite"
    first, second = ResponseCache(path), ResponseCache(path)  # two processes of one sweep
    assert first.put("k", "m", {"text": "first"}) == {"text": "first"}
    assert second.put("k", "m", {"text": "second"}) == {"text": "first"}
    assert second.get("k") == first.get("k") == {"text": "first"}


def test_a_run_that_loses_the_race_uses_the_reply_already_stored(tmp_path, monkeypatch):
    """Same-seed runs in a parallel sweep: both miss, both call; the later one must adopt the first reply."""
    import dataclasses

    early = mock_client(tmp_path, mode="read_write", default="early reply")
    late = mock_client(tmp_path, mode="read_write", default="early reply")
    messages = [{"role": "user", "content": "distill these candidates"}]
    real_call = late._call_with_retries

    def call_while_the_other_run_stores(*args, **kwargs):
        result, retries = real_call(*args, **kwargs)
        assert early.complete(messages).text == "early reply"  # lands in the cache first
        return dataclasses.replace(result, text="late reply"), retries  # a re-sample that differs

    monkeypatch.setattr(late, "_call_with_retries", call_while_the_other_run_stores)
    assert late.complete(messages).text == "early reply"
