"""Pins of the framework functions issue 28 changed (the `framework_fidelity` mutation campaign): how a reply
becomes an action or a counted failure, the chat turns a conversation step leaves, AgentNet's choice of the
agent a task goes to, MacNet's random draw."""

from __future__ import annotations

import json
import random

import pytest
from fw_helpers import ANSWER_TASK, memory
from test_autogen import TOY

from aecg_bench.contracts import AgentContext
from aecg_bench.llm.client import Completion
from aecg_bench.llm.usage import Usage
from aecg_bench.types import Action, Observation, Task, ToolCall, Trajectory
from frameworks.agentnet.network import Network, Rates
from frameworks.base import Decider, EnvLoop, Transcript, action_from_completion, conversation_turns
from frameworks.macnet.topology import build_dag

CHAT = Task(id="c", benchmark="t", instruction="Serve the customer.", mode="conversation")


def _completion(text: str = "", calls: tuple[ToolCall, ...] = ()) -> Completion:
    return Completion(text, calls, Usage(), 0.0, False, 0.0, "mock", "agent", "stop", "k")


def test_a_reply_is_an_action_of_the_tasks_mode_or_none():
    assert action_from_completion(ANSWER_TASK, _completion(" SUPPORTS ")) == Action("answer", "SUPPORTS")
    assert action_from_completion(ANSWER_TASK, _completion("   ")) is None
    assert action_from_completion(TOY, _completion("Action: move left")) == Action("command", "move left")
    assert action_from_completion(TOY, _completion("```\n```")) is None
    assert action_from_completion(CHAT, _completion(" Hello ")) == Action("message", "Hello")
    assert action_from_completion(CHAT, _completion("  ")) is None
    call = ToolCall("find", {"q": 1}, "c1")
    assert action_from_completion(CHAT, _completion(" Looking. ", (call,))) == Action("tool", "Looking.", (call,))


def test_a_tool_step_leaves_the_assistant_turn_with_its_text_and_one_tool_turn_per_call():
    calls = (ToolCall("find", {"b": 2, "a": 1}, "c1"), ToolCall("get", {}, ""))
    results = [{"content": "found"}, {"ok": False}]
    turns = conversation_turns(Action("tool", "Checking.", calls), Observation("x", info={"tool_results": results}))
    assert turns == [
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"a": 1, "b": 2}'}},
                {"id": "call_1", "type": "function", "function": {"name": "get", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "find", "content": "found"},
        {"role": "tool", "tool_call_id": "call_1", "name": "get", "content": ""},  # a result without content
    ]
    # no per-call results: every call is answered with the observation's text
    plain = conversation_turns(Action("tool", "", calls[:1]), Observation("all done"))
    assert plain[1] == {"role": "tool", "tool_call_id": "c1", "name": "find", "content": "all done"}
    # fewer results than calls: tool turns for the results there are
    short = conversation_turns(Action("tool", "", calls), Observation("x", info={"tool_results": results[:1]}))
    assert [t["role"] for t in short] == ["assistant", "tool"]


def test_a_message_step_leaves_the_assistant_turn_and_the_reply_if_any():
    assert conversation_turns(Action("message", "Hi"), Observation("Hello")) == [
        {"role": "assistant", "content": "Hi"},
        {"role": "user", "content": "Hello"},
    ]
    assert conversation_turns(Action("message", "Bye"), Observation("")) == [{"role": "assistant", "content": "Bye"}]


class _Env:
    def reset(self) -> Observation:
        return Observation("start")

    def step(self, action: Action) -> Observation:
        return Observation(f"did {action.text}")

    def score(self) -> None:  # pragma: no cover - never scored here
        return None


def test_take_steps_with_a_readable_reply_and_counts_an_unreadable_one():
    traj = Trajectory(task_id=TOY.id, framework="t")
    ctx = AgentContext(llm=None, memory=memory(), trajectory=traj, rng=random.Random(0), seed=0, max_invalid_actions=1)  # type: ignore[arg-type]
    loop, transcript = EnvLoop(_Env(), TOY, traj, ctx), Transcript(TOY, traj, 4)  # type: ignore[arg-type]
    transcript.start(loop.reset())
    decider = Decider(TOY, ctx, traj)
    node = decider._record(decider._prepare(decider_request()), _completion("```\n```")).node
    unreadable = "```\n" + "python\n" * 50 + "```"  # only a fence and language tags: no action, 350 characters
    bad = type("D", (), {"node": node, "completion": _completion(unreadable)})()
    assert loop.take(decider, transcript, bad) is False and traj.invalid_actions == 1
    assert loop.note.startswith("Your previous reply could not be read as an action")
    good = type("D", (), {"node": node, "completion": _completion("move right")})()
    assert loop.take(decider, transcript, good) is True and loop.note == ""
    assert traj.steps[-1].action == Action("command", "move right") and transcript.observation == "did move right"
    assert loop.take(decider, transcript, bad) is False
    assert loop.take(decider, transcript, bad) is False  # two in a row > max_invalid_actions (1): the sample ends
    assert traj.status == "model_error"
    assert traj.error == f"2 unparsable outputs in a row; last: {unreadable[:200]!r}"


def decider_request():
    from frameworks.base import DecisionRequest

    return DecisionRequest(agent="a", role="actor", level="agent", system="s", user="u", use_memory=False)


def _network(abilities: dict[str, float], successes: dict[str, list[int]] | None = None) -> Network:
    net = Network.initial(4, Rates(initial_abilities=(0.6,)))
    for agent, ability in abilities.items():
        net.abilities[agent]["t"] = ability
    for agent, count in (successes or {}).items():
        net.counts[agent]["t"] = count
    return net


def test_a_named_target_at_exactly_the_bar_is_taken():
    net = _network({"agent_1": 0.5, "agent_2": 0.9})
    assert net.redirect("agent_0", "agent_1", "t", set(), random.Random(0)) == ("agent_1", "named")


@pytest.mark.parametrize(
    ("abilities", "successes", "best"),
    [
        # 0.4 x ability + 0.2 x success rate: 0.36 < 0.44, a success rate outweighs 0.3 of ability
        ({"agent_1": 0.9, "agent_2": 0.6, "agent_3": 0.1}, {"agent_2": [1, 1]}, "agent_2"),
        ({"agent_1": 0.6, "agent_2": 0.9, "agent_3": 0.1}, {}, "agent_2"),  # same success: the abler
        # 0.40 > 0.34: ability outweighs half a success rate
        ({"agent_1": 0.6, "agent_2": 1.0, "agent_3": 0.1}, {"agent_1": [2, 1]}, "agent_2"),
        ({"agent_1": 0.7, "agent_2": 0.7, "agent_3": 0.1}, {}, "agent_1"),  # a tie: the lower index
    ],
)
def test_a_weak_or_unknown_target_goes_to_the_best_neighbour_by_the_codes_score(abilities, successes, best):
    net = _network(abilities, successes)
    assert net.redirect("agent_0", "agent_3", "t", set(), random.Random(0)) == (best, "best")


def test_with_no_able_neighbour_a_neighbour_off_the_path_is_drawn_and_none_left_is_an_error():
    net = _network({"agent_1": 0.4, "agent_2": 0.1, "agent_3": 0.2})
    drawn = {net.redirect("agent_0", "agent_1", "t", {"agent_3"}, random.Random(s))[0] for s in range(20)}
    assert drawn == {"agent_1", "agent_2"}
    assert net.redirect("agent_0", "agent_1", "t", set(), random.Random(0))[1] == "random"
    with pytest.raises(ValueError, match=r"agent_0 has no neighbour off \['agent_1', 'agent_2', 'agent_3'\]"):
        net.redirect("agent_0", "agent_1", "t", {"agent_1", "agent_2", "agent_3"}, random.Random(0))


class _Fixed(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def test_the_random_graph_keeps_a_pair_only_below_its_probability():
    assert build_dag("random", 3, rng=_Fixed(0.0), edge_prob=0.0).edges == ()
    assert build_dag("random", 3, rng=_Fixed(0.5), edge_prob=0.5).edges == ()
    assert len(build_dag("random", 3, rng=_Fixed(0.49), edge_prob=0.5).edges) == 3


def test_json_arguments_are_sorted_so_prompts_and_cache_keys_are_stable():
    call = ToolCall("f", {"z": 1, "a": 2}, "c")
    args = conversation_turns(Action("tool", "", (call,)), Observation("ok"))[0]["tool_calls"][0]["function"]
    assert list(json.loads(args["arguments"])) == ["a", "z"] and args["arguments"] == '{"a": 2, "z": 1}'
