"""What every memory baseline owes the harness: exact state round trips, determinism, LLM calls
only as role `memory` and only before state changes, unparsable replies skipped, audited admissions."""

from __future__ import annotations

import json
from typing import Any

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from aecg_bench.contracts import MemoryMethod, MemoryServices
from aecg_bench.errors import InfraError
from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy, UsageMeter
from aecg_bench.llm.providers import ContextLimitError, Provider, TransientProviderError

BASELINES = ["memorybank", "reasoningbank", "g_memory", "conmem", "macnet_m"]
USES_LLM = ["memorybank", "reasoningbank", "g_memory", "conmem"]
# Small cadences so that maintain() really consolidates within a short stream.
PARAMS: dict[str, dict[str, Any]] = {
    "memorybank": {"time_unit_tasks": 50.0},
    "reasoningbank": {},
    "g_memory": {"start_insights_threshold": 2, "rounds_per_insights": 2, "merge_every": 4, "insights_point_num": 2},
    "conmem": {"merge_every": 2},
    "macnet_m": {},
}
TEXTS = [bm.SORT, bm.TRANSLATE, bm.SORT_SIMILAR, "Reverse the words in the sentence", bm.SORT + " twice"]
QUERIES = [bm.query(bm.SORT_SIMILAR, "q1"), bm.query(bm.TRANSLATE, "q2", role="planner", context="French text")]


def build(name: str, services: MemoryServices, **params: Any) -> MemoryMethod:
    return registry.build("memory", name, {**PARAMS[name], **params}, services=services)


def feed(memory: MemoryMethod, n: int = 6) -> None:
    """A stream whose later episodes recall what earlier ones stored, with maintenance rounds."""
    for i in range(n):
        text = TEXTS[i % len(TEXTS)]
        recalled = tuple(item.id for item in memory.recall(bm.query(text, f"t{i}")))
        memory.observe(bm.episode(text, f"t{i}", i % 3 != 1, recalled=recalled, critic="ok" if i % 2 else ""))
        if i % 2 == 1:
            memory.maintain(i // 2 + 1)


@pytest.mark.parametrize("name", BASELINES)
def test_state_round_trips_exactly_and_recall_is_unchanged(name):
    memory = build(name, bm.services())
    feed(memory)
    state = memory.state_dict()
    assert json.loads(json.dumps(state)) == state  # JSON-serialisable as is
    fresh = build(name, bm.services())
    fresh.load_state_dict(json.loads(json.dumps(state)))
    assert fresh.state_dict() == state
    for q in QUERIES:
        assert fresh.recall(q) == memory.recall(q)
    # and the restored memory goes on learning exactly like the original
    ep = bm.episode(bm.SORT, "late", True)
    memory.observe(ep)
    fresh.observe(ep)
    assert fresh.state_dict() == memory.state_dict()


@pytest.mark.parametrize("name", BASELINES)
def test_same_seed_and_stream_give_the_same_memory_and_audit(name, tmp_path):
    runs = []
    for _ in range(2):
        services = bm.services(tmp_path, seed=7)
        memory = build(name, services)
        feed(memory)
        runs.append((memory.state_dict(), [{k: v for k, v in e.items()} for e in services.audit.read()]))
    assert runs[0] == runs[1]
    assert any(e["event"] == "admit" for e in runs[0][1])


@pytest.mark.parametrize("name", USES_LLM)
def test_llm_calls_use_the_memory_role_only(name):
    services = bm.services()
    meter = UsageMeter()
    services.llm = services.llm.with_context(meter=meter)
    feed(build(name, services))
    roles = meter.by_role()
    assert set(roles) == {"memory"} and roles["memory"]["calls"] > 0


def test_macnet_m_makes_no_llm_call():
    services = bm.services()
    meter = UsageMeter()
    services.llm = services.llm.with_context(meter=meter)
    feed(build("macnet_m", services))
    assert meter.by_role() == {}


@pytest.mark.parametrize("name", USES_LLM)
def test_unparsable_replies_are_skipped_and_audited_never_fatal(name):
    keys = [
        "memorybank.summary",
        "reasoningbank.success",
        "reasoningbank.failure",
        "g_memory.key_steps",
        "g_memory.mistakes",
        "g_memory.compare",
        "g_memory.success",
        "g_memory.merge",
        "conmem.extract",
        "conmem.reflect",
        "conmem.merge",
    ]
    # a free-text summary cannot be malformed, only too short to be one
    services = bm.services(garble=keys, garble_text="ok" if name == "memorybank" else bm.GARBLE)
    memory = build(name, services)
    feed(memory)
    events = services.audit.read()
    assert any(e["event"] == "skip" and e["reason"] == "unparsable" for e in events)
    for q in QUERIES:
        memory.recall(q)  # still usable


class FailingProvider(Provider):
    def __call__(self, spec, request):
        raise TransientProviderError("provider down")


def failing_llm() -> LLMClient:
    spec = ModelSpec(label="down", provider="mock", model="down/x")
    return LLMClient(
        {"down": spec}, {"default": "down"}, retry=RetryPolicy(max_attempts=1), providers={"mock": FailingProvider()}
    )


@pytest.mark.parametrize("name", USES_LLM)
def test_a_provider_failure_leaves_the_memory_as_it_was(name):
    memory = build(name, bm.services())
    feed(memory)
    before = memory.state_dict()
    memory.services.llm = failing_llm()
    recalled = tuple(i.id for i in memory.recall(bm.query(bm.SORT, "x")))
    with pytest.raises(InfraError):
        memory.observe(bm.episode(bm.SORT, "x", False, recalled=recalled))
    assert memory.state_dict() == before


class TooLongProvider(Provider):
    def __call__(self, spec, request):
        raise ContextLimitError("prompt exceeds the context window")


@pytest.mark.parametrize("name", USES_LLM)
def test_a_prompt_over_the_context_window_is_skipped_and_audited(name):
    memory = build(name, bm.services())
    spec = ModelSpec(label="small", provider="mock", model="small/x")
    memory.services.llm = LLMClient({"small": spec}, {"default": "small"}, providers={"mock": TooLongProvider()})
    memory.observe(bm.episode(bm.SORT, "x", False))
    memory.maintain(1)
    events = memory.audit.read()
    assert events and all(e["event"] != "skip" or e["reason"] == "context_limit" for e in events)
    assert any(e.get("reason") == "context_limit" for e in events)


@pytest.mark.parametrize("name", ["g_memory", "conmem"])
def test_a_provider_failure_during_maintain_leaves_the_memory_as_it_was(name):
    memory = build(name, bm.services())
    for i in range(4):
        memory.observe(bm.episode(TEXTS[i % 2], f"t{i}", i % 2 == 0))
    memory.observe(bm.episode(bm.SORT, "dup", True))
    before = memory.state_dict()
    memory.services.llm = failing_llm()
    with pytest.raises(InfraError):
        memory.maintain(1)
    assert memory.state_dict() == before


@pytest.mark.parametrize("name", BASELINES)
def test_an_unlabelled_episode_never_crashes(name):
    services = bm.services()
    memory = build(name, services)
    memory.observe(bm.episode(bm.SORT, "u", None))
    memory.recall(bm.query(bm.SORT, "v"))
    assert memory.stats() is not None


@pytest.mark.parametrize("name", BASELINES)
def test_bad_params_fail_with_one_clear_line(name):
    from aecg_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown key 'top_kk'"):
        registry.build("memory", name, {"top_kk": 1}, services=bm.services())


@pytest.mark.parametrize("name", USES_LLM)
def test_prompts_are_fully_filled_in(name):
    import re

    from aecg_bench.llm.mock import register_mock_policy

    sent: list[str] = []

    def recording(request, spec):
        sent.extend(str(m.get("content") or "") for m in request.messages)
        return bm.memory_policy(request, spec)

    register_mock_policy("baselines_recording", recording)
    services = bm.services()
    services.llm = bm.client(policy="baselines_recording")
    feed(build(name, services, **({"rerank_with_llm": True} if name == "g_memory" else {})))
    assert sent
    for text in sent:
        assert "{{" not in text and "}}" not in text
        assert not re.search(r"\{[a-z_0-9]+\}", text), text[:200]
