"""Tolerant parsing of memory-side LLM replies and the seeded draws the baselines use."""

from __future__ import annotations

from baselines.llm_calls import extract_json, numbered_list, stable_uniform, tagged


def test_json_is_found_fenced_tagged_or_inline_and_garbage_gives_none():
    assert extract_json('Here:\n```json\n[{"a": 1}]\n```') == [{"a": 1}]
    assert extract_json('<cards>[{"a": [1, 2]}]</cards> trailing') == [{"a": [1, 2]}]
    assert extract_json('prefix {"x": "y"} suffix') == {"x": "y"}
    assert extract_json("[not json at all") is None and extract_json(None) is None


def test_tags_and_numbered_lists():
    assert tagged("<reflection>Root cause: x</reflection>", "reflection") == "Root cause: x"
    assert tagged("<reflection>cut off mid-way", "reflection") == "cut off mid-way"
    assert tagged("nothing", "reflection") is None
    assert numbered_list("1. First item\n   continues.\n2) Second.\nnoise") == [
        "First item continues.",
        "Second. noise",
    ]
    assert numbered_list("no list") == []


def test_stable_uniform_is_a_deterministic_function_of_its_parts():
    a = stable_uniform(0, "memorybank", "mb-1")
    assert a == stable_uniform(0, "memorybank", "mb-1") and 0.0 <= a < 1.0
    assert a != stable_uniform(1, "memorybank", "mb-1")
