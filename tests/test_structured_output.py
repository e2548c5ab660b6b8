"""Structured output on providers: critics' verdicts and AgentNet routes asked as a JSON schema or a forced
tool call where the model spec says the provider takes one, read back into the same verdicts and routes;
a reply that is not the object asked for is unparsed, never an approval or a route."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest
from fw_helpers import check_graph, run_task, system_of
from test_autogen import TOY

from aecg_bench.benchmarks.toy import ToyEnv, mock_oracle
from aecg_bench.errors import ConfigError
from aecg_bench.llm import LLMClient
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import ProviderResult, Request
from aecg_bench.llm.spec import ModelSpec, RetryPolicy
from aecg_bench.params import validate_params
from aecg_bench.types import Status, ToolCall
from frameworks.agentnet import AgentNetFramework
from frameworks.agentnet.routing import Route, read_route, schema
from frameworks.autogen import AutoGenFramework
from frameworks.autogen.framework import VERDICT_SCHEMA

_n = iter(range(10**6))


def _client(policy: Callable[[Request, ModelSpec], str | ProviderResult], mode: str, **spec: Any) -> LLMClient:
    name = f"structured_policy_{next(_n)}"
    register_mock_policy(name, policy)
    model = ModelSpec(
        label="mock", provider="mock", model="mock/test", structured_output=mode, options={"policy": name}, **spec
    )
    return LLMClient({"mock": model}, {"default": "mock"}, ResponseCache(None, "off"), RetryPolicy(max_attempts=1))


def _critic_team(verdicts: list[str], seen: list[Request]) -> Callable[[Request, ModelSpec], str]:
    replies = iter(verdicts)

    def policy(request: Request, spec: ModelSpec) -> str:
        if "You are the critic" in system_of(request):
            seen.append(request)
            return next(replies, json.dumps({"verdict": "APPROVE", "reason": ""}))
        if "You are the planner" in system_of(request):
            return "1. walk right\n2. stop"
        return mock_oracle(request, spec)

    return policy


def test_critic_verdicts_are_asked_by_json_schema_and_read_back():
    seen: list[Request] = []
    replies = [
        json.dumps({"verdict": "REJECT", "reason": "you are past the target"}),
        '{"verdict": "MAYBE", "reason": ""}',  # an object without a verdict: unparsed, not approval
        json.dumps({"verdict": "APPROVE", "reason": ""}),
    ]
    llm = _client(_critic_team(replies, seen), "json_schema")
    traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), llm)
    check_graph(traj)
    fmt = seen[0].params["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == VERDICT_SCHEMA.schema
    assert seen[0].tools is None and "grammar" not in seen[0].params
    verdicts = [v["verdict"] for v in traj.metadata["autogen"]["verdicts"]]
    assert verdicts[:3] == ["reject", "unparsed", "approve"]
    roles = [d.role for d in traj.decisions[:7]]
    # reject -> revision; the unreadable verdict on it ends the step (out of revisions); next step approved
    assert roles == ["planner", "executor", "critic", "executor", "critic", "executor", "critic"]
    assert traj.status == Status.OK


def test_grammar_capable_models_keep_the_grammar_and_plain_providers_get_neither():
    for mode, grammar, asked in (("json_schema", True, "grammar"), ("none", False, None)):
        seen: list[Request] = []
        llm = _client(_critic_team(["APPROVE"], seen), mode, grammar=grammar)
        traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), llm)
        assert "response_format" not in seen[0].params
        assert ("grammar" in seen[0].params) == (asked == "grammar")
        assert traj.metadata["autogen"]["verdicts"][0]["verdict"] == "approve"  # a plain line still reads


def test_routes_are_asked_as_a_forced_tool_call_and_read_back():
    seen: list[Request] = []
    target: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str | ProviderResult:
        if "You are the router of" not in system_of(request):
            return mock_oracle(request, spec)
        seen.append(request)
        props = request.tools[0]["function"]["parameters"]["properties"]
        if "FORWARD" in props["decision"]["enum"] and len(seen) == 1:
            target.append(props["agent"]["enum"][0])  # a neighbour of the entry agent
            args = {"decision": "FORWARD", "agent": target[0], "text": ""}
        else:
            args = {"decision": "EXECUTE", "agent": "", "text": ""}
        return ProviderResult(text="", tool_calls=(ToolCall(name="route", arguments=args, id="c0"),))

    llm = _client(policy, "tool_call")
    traj = run_task(AgentNetFramework({"agents": 3}), TOY, ToyEnv(2, 4, 8), llm)
    check_graph(traj)
    first = seen[0]
    assert first.tools[0]["function"]["name"] == "route"
    assert first.params["tool_choice"] == {"type": "function", "function": {"name": "route"}}
    routes = traj.metadata["agentnet"]["routes"]
    assert [(r["route"], r["target"]) for r in routes[:2]] == [("forward", target[0]), ("execute", "")]
    assert traj.decisions[0].output == json.dumps({"agent": target[0], "decision": "FORWARD", "text": ""})
    assert {d.agent for d in traj.decisions if d.role == "executor"} == {target[0]}
    assert traj.metadata["agentnet"]["unparsed_routes"] == 0


def test_route_objects_read_by_the_line_rules():
    offered = ("execute", "forward", "split")
    assert read_route('{"decision": "SPLIT", "agent": "", "text": "go right"}', offered, True) == Route(
        "split", text="go right"
    )
    assert read_route('{"decision": "FORWARD", "agent": "", "text": ""}', offered, True).kind == "unparsed"
    assert read_route('{"decision": "COMPLETE"}', offered, True).kind == "unparsed"  # not offered here
    assert read_route('{"decision": 3}', offered, True).kind == "unparsed"
    assert read_route("EXECUTE", offered, True).kind == "execute"  # no object at all: the line is read
    body = schema(("complete", "incomplete"), ["agent_2"]).schema
    assert body["properties"]["decision"]["enum"] == ["COMPLETE", "INCOMPLETE"]
    assert body["properties"]["agent"]["enum"] == ["agent_2", ""] and body["required"] == ["decision", "agent", "text"]


def test_tool_call_mode_needs_native_tools_and_a_bad_mode_is_one_line():
    with pytest.raises(ConfigError, match="native_tools"):
        validate_params(
            "model 'm'",
            ModelSpec,
            {"label": "m", "model": "x", "structured_output": "tool_call", "native_tools": False},
        )
    with pytest.raises(ConfigError, match="structured_output"):
        validate_params("model 'm'", ModelSpec, {"label": "m", "model": "x", "structured_output": "yes"})


class _ChatServer(BaseHTTPRequestHandler):
    """OpenAI-compatible /v1/chat/completions on loopback: critics answer in the shape they are asked for
    (a verdict object, or a forced `verdict` call); other roles get the toy oracle's action."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        system = body["messages"][0]["content"]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        verdict = (
            {"verdict": "REJECT", "reason": "too early"}
            if len(self.bodies) < 4
            else {"verdict": "APPROVE", "reason": ""}
        )
        if "response_format" in body:
            message["content"] = json.dumps(verdict)
        elif body.get("tool_choice"):
            call = {"id": "c1", "type": "function", "function": {"name": "verdict", "arguments": json.dumps(verdict)}}
            message["tool_calls"] = [call]
        elif "You are the planner" in system:
            message["content"] = "1. walk right\n2. stop"
        else:
            request = Request(messages=body["messages"], params={})
            message["content"] = mock_oracle(request, ModelSpec(label="o", provider="mock", model="mock/o"))
        reply = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_server():
    httpd = HTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _ChatServer.bodies = []
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("mode", ["json_schema", "tool_call"])
def test_a_served_model_gets_the_schema_over_http_and_its_verdicts_count(chat_server, mode):
    spec = ModelSpec(
        label="served", model="openai/fake-model", api_base=chat_server, structured_output=mode, timeout_s=60
    )
    llm = LLMClient({"served": spec}, {"default": "served"}, ResponseCache(None, "off"), RetryPolicy(max_attempts=2))
    traj = run_task(AutoGenFramework(), TOY, ToyEnv(2, 4, 8), llm)
    critic_bodies = [b for b in _ChatServer.bodies if "You are the critic" in b["messages"][0]["content"]]
    body = critic_bodies[0]
    if mode == "json_schema":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA.schema
        assert "tools" not in body
    else:
        assert body["tool_choice"] == {"type": "function", "function": {"name": "verdict"}}
        assert body["tools"][0]["function"]["parameters"] == VERDICT_SCHEMA.schema
    verdicts = [v["verdict"] for v in traj.metadata["autogen"]["verdicts"]]
    assert verdicts[0] == "reject" and "approve" in verdicts and "unparsed" not in verdicts
    assert traj.status == Status.OK
