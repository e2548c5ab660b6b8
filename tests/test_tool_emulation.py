"""Emulated tool calls (`llm/tool_emulation.py`, models with `native_tools: false`): a task that allows
parallel calls (`Task.parallel_tool_calls`, MMTB) is offered a list of calls per reply and gets them back in
order; every other request is the one-call request it always was, and one call reads the same in either
shape. Arguments that are no JSON travel raw, as `providers` hands native ones over."""

from __future__ import annotations

import json

import pytest
from test_llm_client import ScriptedProvider, _client

from aecg_bench.llm import tool_emulation
from aecg_bench.llm.providers import parse_arguments
from aecg_bench.types import UNPARSED_ARGUMENTS, ToolCall

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]


def test_one_call_reads_the_same_in_either_shape():
    new = tool_emulation.parse('{"calls": [{"tool": "get_weather", "arguments": {"city": "Oslo"}}], "message": ""}')
    old = tool_emulation.parse('{"tool": "get_weather", "arguments": {"city": "Oslo"}, "message": ""}')
    assert new == old == ("", (ToolCall(name="get_weather", arguments={"city": "Oslo"}, id="call_0"),))


def test_several_calls_in_one_reply_come_back_in_order():
    reply = {
        "calls": [
            {"tool": "get_weather", "arguments": {"city": "Oslo"}},
            {"tool": "get_time", "arguments": {}},
            {"tool": "get_weather", "arguments": {"city": "Rome"}},
        ],
        "message": "",
    }
    text, calls = tool_emulation.parse(json.dumps(reply))
    assert text == "" and [(c.name, c.arguments, c.id) for c in calls] == [
        ("get_weather", {"city": "Oslo"}, "call_0"),
        ("get_time", {}, "call_1"),
        ("get_weather", {"city": "Rome"}, "call_2"),
    ]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ('{"calls": [], "message": "It is sunny."}', "It is sunny."),
        ('{"tool": "none", "arguments": {}, "message": "It is sunny."}', "It is sunny."),
        ('{"calls": [{"arguments": {}}], "message": "hi"}', "hi"),  # a call without a tool name is no call
        ("not json", "not json"),
        ("[1, 2]", "[1, 2]"),
        ('{"message": 3}', "3"),
        ('{"calls": []}', ""),
        ('{"tool": "none"}', ""),
    ],
)
def test_no_call_is_the_message_and_unreadable_text_stays_text(reply, message):
    assert tool_emulation.parse(reply) == (message, ())


def test_arguments_that_are_no_object_travel_raw():
    _, (call,) = tool_emulation.parse('{"calls": [{"tool": "get_weather", "arguments": "city=Oslo"}], "message": ""}')
    assert call.arguments == {UNPARSED_ARGUMENTS: "city=Oslo"}
    _, (call,) = tool_emulation.parse('{"calls": [{"tool": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}]}')
    assert call.arguments == {"city": "Oslo"}  # an object sent as JSON text is read
    _, (call,) = tool_emulation.parse('{"calls": [{"tool": "get_weather", "arguments": [1]}], "message": ""}')
    assert call.arguments == {}  # JSON, but no object: no arguments, as the one-call shape always read it
    _, (call,) = tool_emulation.parse('{"calls": [{"tool": "get_weather"}], "message": ""}')
    assert call.arguments == {}


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        (None, {}),
        ("", {}),
        ('{"city": "Oslo"}', {"city": "Oslo"}),
        ({"city": "Oslo"}, {"city": "Oslo"}),
        ("city=Oslo", {UNPARSED_ARGUMENTS: "city=Oslo"}),
        ('{"city": "Oslo"', {UNPARSED_ARGUMENTS: '{"city": "Oslo"'}),
        ('["Oslo"]', {UNPARSED_ARGUMENTS: '["Oslo"]'}),
        ("5", {UNPARSED_ARGUMENTS: "5"}),
        ([1, 2], {UNPARSED_ARGUMENTS: "[1, 2]"}),  # not text, not an object
    ],
)
def test_native_arguments_are_an_object_or_their_raw_text(raw, parsed):
    assert parse_arguments(raw) == parsed


def test_the_request_offers_a_list_of_calls_and_shows_past_calls_in_that_shape():
    history = [
        {"role": "user", "content": "weather in Oslo and Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
                {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "name": "get_weather", "content": "5C"},
        {"role": "tool", "tool_call_id": "b", "name": "get_weather", "content": "20C"},
    ]
    messages, fmt = tool_emulation.emulate(history, TOOLS, parallel=True)
    call = {
        "type": "object",
        "properties": {
            "tool": {"type": "string", "enum": ["get_weather", "get_time"]},
            "arguments": {"type": "object"},
        },
        "required": ["tool", "arguments"],
    }
    assert fmt == {
        "type": "json_schema",
        "json_schema": {
            "name": "tool_choice",
            "schema": {
                "type": "object",
                "properties": {"calls": {"type": "array", "items": call}, "message": {"type": "string"}},
                "required": ["calls", "message"],
            },
        },
    }
    assert messages[0]["role"] == "system" and "several independent calls may go in one reply" in messages[0]["content"]
    assert json.loads(messages[2]["content"]) == {
        "calls": [
            {"tool": "get_weather", "arguments": {"city": "Oslo"}},
            {"tool": "get_weather", "arguments": {"city": "Rome"}},
        ],
        "message": "",
    }
    assert [m["content"] for m in messages[3:]] == ["Tool result (get_weather): 5C", "Tool result (get_weather): 20C"]
    assert all(m["role"] in ("system", "user", "assistant") for m in messages)


def test_without_parallel_calls_the_request_is_the_one_call_request_it_always_was():
    history = [
        {"role": "user", "content": "weather in Oslo?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}],
        },
        {"role": "tool", "tool_call_id": "a", "name": "get_weather", "content": "5C"},
    ]
    messages, fmt = tool_emulation.emulate(history, TOOLS)
    assert messages[0]["content"].endswith(
        'Reply with one JSON object: {"tool": <tool name, or "none" to answer in text>, '
        '"arguments": {<arguments>}, "message": <text for the user when tool is "none">}.'
    )
    assert fmt == {
        "type": "json_schema",
        "json_schema": {
            "name": "tool_choice",
            "schema": {
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "enum": ["get_weather", "get_time", "none"]},
                    "arguments": {"type": "object"},
                    "message": {"type": "string"},
                },
                "required": ["tool", "arguments", "message"],
            },
        },
    }
    assert messages[2] == {
        "role": "assistant",
        "content": json.dumps({"tool": "get_weather", "arguments": '{"city": "Oslo"}'}),
    }
    assert messages[3] == {"role": "user", "content": "Tool result (get_weather): 5C"}
    two = {**history[1], "tool_calls": history[1]["tool_calls"] * 2}
    assert (
        json.loads(tool_emulation.emulate([two], TOOLS)[0][1]["content"])
        == [{"tool": "get_weather", "arguments": '{"city": "Oslo"}'}] * 2
    )


@pytest.mark.parametrize("parallel", [False, True])
def test_a_tool_result_turn_is_a_user_turn_naming_the_tool(parallel):
    turns = [{"role": "tool", "tool_call_id": "a"}, {"role": "tool", "name": "get_time", "content": "noon"}]
    messages, _ = tool_emulation.emulate(turns, TOOLS, parallel=parallel)
    assert messages[1:] == [
        {"role": "user", "content": "Tool result (tool): "},
        {"role": "user", "content": "Tool result (get_time): noon"},
    ]


def test_a_past_parallel_turn_keeps_its_text_beside_its_calls():
    turn = {
        "role": "assistant",
        "content": "Checking both.",
        "tool_calls": [{"id": "a", "function": {"name": "get_time", "arguments": "not json"}}],
    }
    messages, _ = tool_emulation.emulate([turn], TOOLS, parallel=True)
    assert messages[1] == {
        "role": "assistant",
        "content": json.dumps({"calls": [{"tool": "get_time", "arguments": "not json"}], "message": "Checking both."}),
    }


def test_the_client_turns_an_emulated_reply_into_parallel_tool_calls():
    both = [{"tool": "get_weather", "arguments": {"city": c}} for c in ("Oslo", "Rome")]
    provider = ScriptedProvider(text=json.dumps({"calls": both, "message": ""}))
    client, _ = _client(provider, native_tools=False)
    question = [{"role": "user", "content": "weather in Oslo and Rome?"}]
    out = client.complete(question, tools=TOOLS, parallel_tool_calls=True)
    assert [(c.name, c.arguments["city"], c.id) for c in out.tool_calls] == [
        ("get_weather", "Oslo", "call_0"),
        ("get_weather", "Rome", "call_1"),
    ]
    sent = provider.calls[0]
    assert sent.tools is None and "calls" in sent.params["response_format"]["json_schema"]["schema"]["properties"]
    client.complete(question, tools=TOOLS)  # a task without parallel calls: the one-call request
    assert "tool" in provider.calls[1].params["response_format"]["json_schema"]["schema"]["properties"]


def test_the_tools_are_described_in_the_system_turn():
    tools = [
        {"type": "function", "function": {"name": "a", "description": "does a", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "b"}},  # no description, no parameters
    ]
    lines = [
        "You can call these tools:",
        '- a: does a parameters: {"type": "object"}',
        "- b:  parameters: {}",
    ]
    fresh, _ = tool_emulation.emulate([{"role": "user", "content": "hi"}], tools, parallel=True)
    assert fresh == [
        {"role": "system", "content": "\n".join([*lines, tool_emulation.SEVERAL_CALLS])},
        {"role": "user", "content": "hi"},
    ]
    merged, _ = tool_emulation.emulate(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], tools
    )
    assert merged[0] == {"role": "system", "content": "Be brief.\n\n" + "\n".join([*lines, tool_emulation.ONE_CALL])}
    assert merged[1:] == [{"role": "user", "content": "hi"}]
    after_user, _ = tool_emulation.emulate(
        [{"role": "user", "content": "x"}, {"role": "system", "content": "s"}], tools
    )
    assert after_user[0]["role"] == "system" and after_user[1] == {"role": "user", "content": "x"}
