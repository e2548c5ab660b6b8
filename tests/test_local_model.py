"""The embedded SmolLM2 model through litellm's custom-provider path (slow tier: loads llama.cpp)."""

from __future__ import annotations

import pytest

from aecg_bench.llm import LLMClient, ModelSpec, UsageMeter
from aecg_bench.run import run_from_config

pytestmark = pytest.mark.slow

LOCAL = ModelSpec(
    label="local",
    model="aecg-local/smollm2-135m-instruct",
    native_tools=False,
    grammar=True,
    max_tokens=48,
    max_concurrency=1,
)


def test_grammar_constrains_the_embedded_model():
    client = LLMClient({"local": LOCAL}, {"default": "local"})
    meter = UsageMeter()
    out = client.with_context(meter=meter).complete(
        [{"role": "user", "content": "Claim: water boils at 100 C at sea level. Verdict?"}],
        grammar='root ::= "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO"',
    )
    assert out.text in {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO"}
    assert meter.total()["input_tokens"] > 10 and out.cost == 0.0


def test_emulated_tool_calls_parse_into_tool_calls_or_a_message():
    client = LLMClient({"local": LOCAL.model_copy(update={"max_tokens": 96})}, {"default": "local"})
    tools = [
        {
            "type": "function",
            "function": {
                "name": "find_orders",
                "description": "List a customer's orders",
                "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}},
            },
        }
    ]
    out = client.complete([{"role": "user", "content": "My name is ana. Please list my orders."}], tools=tools)
    assert out.tool_calls or out.text  # the constrained JSON always parses into one of the two
    if out.tool_calls:
        assert out.tool_calls[0].name == "find_orders"


def test_fever_claims_answered_by_the_embedded_model_end_to_end(make_config, shared_data):
    final = run_from_config(make_config("experiment=smoke", "benchmark.params.size=3", data_root=shared_data))
    assert final["status"] == "complete" and final["counts"]["recorded"] == 3
    assert final["usage"]["total"]["input_tokens"] > 0
    assert final["eval"]["scored"] == 3


def test_prompts_longer_than_the_window_are_cut_to_fit():
    client = LLMClient({"local": LOCAL.model_copy(update={"options": {"n_ctx": 512}})}, {"default": "local"})
    huge_system = "You are an agent. Rules: " + "always check the valid actions first; " * 200
    history = [{"role": "user", "content": f"step {i}: " + "observation text " * 40} for i in range(10)]
    out = client.complete([{"role": "system", "content": huge_system}, *history], max_tokens=16)
    assert out.text and out.usage.input_tokens <= 512


def test_context_overflow_is_a_limit_not_a_retry():
    from aecg_bench.llm.providers import ContextLimitError, classify_litellm_error

    err = classify_litellm_error(RuntimeError("Requested tokens (2075) exceed context window of 2048"))
    assert isinstance(err, ContextLimitError)


def test_kv_ram_cache_stays_within_its_capacity():
    from aecg_bench.llm import local

    llm, _ = local.load("smollm2-135m-instruct", n_ctx=1024, ram_cache_mb=64)  # the client's model (threads: auto)
    client = LLMClient(
        {"local": LOCAL.model_copy(update={"options": {"n_ctx": 1024, "ram_cache_mb": 64}})}, {"default": "local"}
    )
    for i in range(12):
        client.complete(
            [{"role": "system", "content": f"agent {i}"}, {"role": "user", "content": "observation text " * 120}],
            max_tokens=4,
        )
    held = sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in llm.cache.cache_state.values())
    assert llm.cache.cache_state and held <= 64 << 20


def test_kv_states_are_cached_without_logits_and_replies_do_not_change():
    """The logits buffer is cut to one row (never read with logits_all off): same greedy replies, cached
    states a fraction of the bytes, and a save no longer copies n_batch rows of logits."""
    from llama_cpp import Llama

    from aecg_bench.llm import local

    systems = ["You plan. Answer with one action. " * 20, "You act. Answer with one action. " * 20]
    calls, history = [], []
    for t in range(4):
        calls.append(
            [{"role": "system", "content": systems[t % 2]}, {"role": "user", "content": "Boil water."}, *history]
        )
        history = [*history, {"role": "assistant", "content": "go to kitchen"}, {"role": "user", "content": f"obs {t}"}]
    replies, held = {}, {}
    for keep in (True, False):
        llm = Llama(model_path=str(local.model_path("smollm2-135m-instruct")), n_ctx=1024, n_threads=1, verbose=False)
        local.cache_prefixes(llm, 512, keep_logits=keep)
        replies[keep] = [llm.create_chat_completion(messages=m, max_tokens=12, temperature=0.0, seed=0) for m in calls]
        replies[keep] = [r["choices"][0]["message"]["content"] for r in replies[keep]]
        held[keep] = llm.cache.cache_size
        assert len(llm.cache.cache_state) == len(calls)
        assert llm.save_state().scores.shape[0] == (min(llm.n_tokens, llm.n_batch) if keep else 1)
    assert replies[True] == replies[False]
    assert held[False] * 4 < held[True]
