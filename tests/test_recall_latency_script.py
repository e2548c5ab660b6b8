"""The recall-latency script's synthetic memories match each baseline's state schema exactly."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from aecg_bench.llm.embeddings import Embedder

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "perf" / "recall_latency.py"


def load_script():
    spec = importlib.util.spec_from_file_location("recall_latency", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["memorybank", "reasoningbank", "g_memory", "conmem", "macnet_m", "edv"])
def test_synthetic_memories_load_round_trip_and_answer_recalls(name):
    script = load_script()
    memory, state = script.synthetic_memory(name, 40, Embedder("lexical"))
    assert memory.state_dict() == state
    figures = script.measure(name, 40, 5, Embedder("lexical"))
    assert figures["median_ms"] >= 0 and figures["items_per_recall"] >= 0
