"""The AgentNet adapter: the relay (forward, split, next agent), router grammars, evolution, state, pools."""

from __future__ import annotations

import json
import random
import re

import pytest
from fw_helpers import ANSWER_TASK, AnswerEnv, check_graph, memory, oracle_llm, run_task, scripted_llm, system_of
from test_autogen import TOY

from aecg_bench.benchmarks.toy import ToyBenchmark, ToyEnv, mock_oracle
from aecg_bench.contracts import AgentContext, EnvContext
from aecg_bench.errors import InfraError
from aecg_bench.llm import LLMClient
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.mock import register_mock_policy
from aecg_bench.llm.providers import Request, TransientProviderError
from aecg_bench.llm.spec import ModelSpec, RetryPolicy
from aecg_bench.types import Episode, Outcome, Status, Trajectory
from frameworks.agentnet import AgentNetFramework
from frameworks.agentnet.framework import feedback_value
from frameworks.agentnet.routing import Route, parse_reply


def _router(request: Request) -> tuple[str, str] | None:
    """(agent, 'next' or 'route') of a router call; None for executors."""
    system = system_of(request)
    m = re.search(r"You are the router of (agent_\d+)", system)
    if m is None:
        return None
    return m.group(1), "next" if "INCOMPLETE agent_" in system else "route"


def relay_llm(routes: dict[tuple[str, str], str], executor: str | None = None):
    """Routers reply from `routes` by (agent, route|next) (default EXECUTE / COMPLETE); executors play the oracle."""

    def policy(request: Request, spec: ModelSpec) -> str:
        who = _router(request)
        if who is not None:
            return routes.get(who, "EXECUTE" if who[1] == "route" else "COMPLETE")
        return executor or mock_oracle(request, spec)

    return scripted_llm(policy)


def _acting_agents(traj: Trajectory) -> list[str]:
    by_id = {d.id: d for d in traj.decisions}
    return [by_id[s.decision_id].agent for s in traj.steps]


def test_parse_reply_reads_only_offered_options():
    offered = ("execute", "forward", "split")
    assert parse_reply("FORWARD agent_2", offered) == Route("forward", target="agent_2")
    assert parse_reply("**Forward to Agent 1.**", offered).target == "agent_1"
    assert parse_reply("SPLIT: walk right", offered) == Route("split", text="walk right")
    assert parse_reply("execute\nbecause", offered).kind == "execute"
    nxt = parse_reply("INCOMPLETE agent_1: stop on it", ("complete", "incomplete"))
    assert nxt == Route("incomplete", target="agent_1", text="stop on it")
    for bad, opts in [
        ("move right", offered),  # an action is not a routing decision
        ("FORWARD", offered),  # no agent named
        ("SPLIT:", offered),  # no part named
        ("FORWARD agent_1", ("execute", "split")),  # not offered (no hops left)
        ("EXECUTE", ("complete", "incomplete")),
    ]:
        assert parse_reply(bad, opts).kind == "unparsed", bad


def test_forward_split_and_next_agent_relay_the_task_across_agents():
    llm = relay_llm(
        {
            ("agent_0", "route"): "FORWARD agent_2",
            ("agent_2", "route"): "SPLIT: walk toward the target",
            ("agent_2", "next"): "INCOMPLETE agent_1: stop on the target",
        }
    )
    fw = AgentNetFramework()
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm, seed=1)
    check_graph(traj)
    record = traj.metadata["agentnet"]
    assert record["entry"] == "agent_0"  # seed 1's draw among the three equally able agents
    assert traj.status == Status.OK and traj.steps[-1].observation.reward == 1.0
    # steps are taken by two agents: agent_2 does its part (2 of 12 steps: an even share of 5 executions),
    # then agent_1, to whom agent_2's router passed the rest
    assert _acting_agents(traj) == ["agent_2", "agent_2", "agent_1"]
    assert record["edges_used"] == [["agent_0", "agent_2"], ["agent_2", "agent_1"]]
    assert [(r["agent"], r["level"], r["route"]) for r in record["routes"]] == [
        ("agent_0", "team", "forward"),
        ("agent_2", "team", "split"),
        ("agent_2", "event", "incomplete"),
        ("agent_1", "event", "execute"),
    ]
    assert [(e["agent"], e["task"], e["steps"]) for e in record["executions"]] == [
        ("agent_2", "walk toward the target", 2),
        ("agent_1", "stop on the target", 1),
    ]
    routers = [d for d in traj.decisions if d.role == "router"]
    last_of_part = [d for d in traj.decisions if d.agent == "agent_2" and d.role == "executor"][-1]
    assert routers[2].parents == (last_of_part.id,)  # the next-agent decision follows the part it closes
    # the executors' share of the decisions is recorded per agent (run.json aggregates these)
    assert {d.agent for d in traj.decisions if d.role == "executor"} == {"agent_1", "agent_2"}
    # evolution: both executors gained ability from the success, the used edges gained weight
    state = fw.state_dict()
    assert state["abilities"]["agent_2"]["right"] == pytest.approx(0.64)
    assert state["abilities"]["agent_1"]["right"] == pytest.approx(0.64)
    assert state["abilities"]["agent_0"] == {}
    assert state["weights"]["agent_0"]["agent_2"] == pytest.approx(1.0)  # 0.9 x 1.0 + 0.1 x 1
    assert state["counts"]["agent_1"]["right"] == [1, 1]


def test_routers_prompts_end_with_their_own_cue_and_options_follow_the_state():
    prompts: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        if _router(request):
            prompts.append(str(request.messages[-1]["content"]))
            prompts.append(system_of(request))
            return "FORWARD agent_1"
        return mock_oracle(request, spec)

    traj = run_task(AgentNetFramework({"agents": 5, "max_hops": 2}), TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    user, system = prompts[0], prompts[1]
    assert user.rstrip().endswith("Decision:") and "Next action:" not in user
    assert "FORWARD agent_<n>" in system and "SPLIT:" in system
    record = traj.metadata["agentnet"]
    # after two hops FORWARD is no longer offered, so the third router's FORWARD does not parse
    assert [r["offered"] for r in record["routes"]][2] == ["execute", "split"]
    assert [r["route"] for r in record["routes"]] == ["forward", "forward", "unparsed", "unparsed"]


def test_an_unparsable_route_is_re_asked_then_recorded_not_read_as_a_decision():
    seen: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        if _router(request):
            seen.append(str(request.messages[-1]["content"]))
            return "move right"  # an action where a routing decision was asked
        return mock_oracle(request, spec)

    traj = run_task(AgentNetFramework({"route_retries": 1}), TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    record = traj.metadata["agentnet"]
    assert [r["route"] for r in record["routes"]] == ["unparsed", "unparsed"]
    assert record["unparsed_routes"] == 2
    assert "could not be read" in seen[1] and "could not be read" not in seen[0]
    assert traj.decisions[1].parents == (traj.decisions[0].id,)
    # the holder keeps the task: it executes to the end
    assert set(_acting_agents(traj)) == {record["entry"]} and traj.status == Status.OK


def test_a_forward_to_a_weak_agent_is_redirected_and_agents_can_start_differentiated():
    llm = relay_llm({("agent_0", "route"): "FORWARD agent_1"})
    fw = AgentNetFramework({"initial_abilities": [0.9, 0.4, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm)
    record = traj.metadata["agentnet"]
    assert record["entry"] == "agent_0"  # the most able
    # agent_1 is below min_forward_ability (0.5): the task goes to the best neighbour instead (code's rule)
    assert record["edges_used"] == [["agent_0", "agent_2"]]
    assert set(_acting_agents(traj)) == {"agent_2"}


def test_abilities_go_up_and_down_with_outcomes_and_the_entry_agent_moves():
    fw = AgentNetFramework({"agents": 2})
    ok = relay_llm({})
    failing = scripted_llm(lambda request, spec: "EXECUTE" if _router(request) else "stop")
    entries, abilities = [], []
    for llm in (ok, failing, failing):
        traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm, seed=0)
        entries.append(traj.metadata["agentnet"]["entry"])
        abilities.append({a: v.get("right") for a, v in fw.state_dict()["abilities"].items()})
    first = entries[0]
    other = "agent_1" if first == "agent_0" else "agent_0"
    assert abilities[0][first] == pytest.approx(0.64)  # success: 0.9 x 0.6 + 0.1 x 1
    assert entries[1] == first  # the most able enters
    assert abilities[1][first] == pytest.approx(0.576)  # failure: 0.9 x 0.64
    assert entries[2] == other  # first fell below the untried agent's 0.6
    assert abilities[2][other] == pytest.approx(0.54)
    # the released code's rule only ever raises abilities
    code = AgentNetFramework({"agents": 2, "rule": "code"})
    for llm in (ok, failing):
        run_task(code, TOY, ToyEnv(2, 4, 8), llm)
    assert max(v.get("right", 0.6) for v in code.state_dict()["abilities"].values()) == pytest.approx(0.7)


def test_no_evolution_leaves_the_network_as_it_started():
    fw = AgentNetFramework({"evolve": False})
    before = fw.state_dict()
    run_task(fw, TOY, ToyEnv(2, 4, 8), relay_llm({("agent_0", "route"): "FORWARD agent_1"}))
    assert fw.state_dict() == before


def test_weak_edges_are_cut_and_no_longer_offered():
    llm = scripted_llm(lambda request, spec: "FORWARD agent_1" if _router(request) == ("agent_0", "route") else "stop")
    fw = AgentNetFramework({"agents": 2, "prune_at": 0.95, "initial_abilities": [0.9, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(2, 5, 8), llm)  # stops on the wrong cell: a failure
    assert traj.metadata["agentnet"]["edges_used"] == [["agent_0", "agent_1"]]
    assert "agent_1" not in fw.state_dict()["weights"]["agent_0"]  # 0.9 x 1.0 + 0.1 x 0 <= 0.95: cut
    traj = run_task(fw, TOY, ToyEnv(2, 5, 8), llm)
    assert traj.metadata["agentnet"]["entry"] == "agent_0"
    assert traj.metadata["agentnet"]["routes"] == []  # agent_0 has no edge left: nothing to route, no router call
    assert {d.role for d in traj.decisions} == {"executor"}


def test_answer_task_relay_submits_the_latest_result_and_shows_earlier_ones():
    systems: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        who = _router(request)
        if who == ("agent_0", "route"):
            return "SPLIT: weigh the evidence"
        if who is not None:
            return "COMPLETE"
        systems.append(system_of(request))
        return "SUPPORTS"

    traj = run_task(AgentNetFramework(), ANSWER_TASK, AnswerEnv(), scripted_llm(policy), seed=1)
    (executor,) = [d for d in traj.decisions if d.role == "executor"]
    assert "Your part of the task: weigh the evidence" in systems[0]
    assert traj.steps[0].decision_id == executor.id and traj.steps[0].observation.reward == 1.0


def test_state_round_trips_and_is_deterministic_over_a_stream():
    bench = ToyBenchmark({"size": 6})

    def stream() -> dict:
        fw = AgentNetFramework({"experience_pools": True})
        for i, sample in enumerate(bench.samples()):
            env = bench.make_env(sample, EnvContext(llm=None, seed=0))
            run_task(fw, sample.task, env, oracle_llm(error_rate=0.3), seed=i)
        return fw.state_dict()

    first = stream()
    assert first == stream() and first["tasks_seen"] == 6
    assert any(first["pools"][a]["executor"] for a in first["agents"])
    state = json.loads(json.dumps(first))
    copy = AgentNetFramework({"experience_pools": True})
    copy.load_state_dict(state)
    assert copy.state_dict() == first
    with pytest.raises(ValueError, match="agent_0"):
        AgentNetFramework({"agents": 4}).load_state_dict(state)


def test_experience_pools_enter_prompts_through_the_formatter_but_not_recall_records():
    fw = AgentNetFramework({"experience_pools": True, "agents": 1})
    seen: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        seen.append(system_of(request))
        return "EXECUTE" if _router(request) else mock_oracle(request, spec)

    run_task(fw, TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    assert not any("agentnet-" in s for s in seen)
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), scripted_llm(policy), memory("recorder"))
    assert any("[agentnet-executor-experience]" in s and "(outcome 1.00)" in s for s in seen)
    assert all(d.recalled_memory_ids == () for d in traj.decisions)


def test_outcome_learning_uses_the_label_not_the_reward():
    fw = AgentNetFramework({"agents": 1})
    traj = Trajectory(task_id=TOY.id, framework=fw.name)
    ctx = AgentContext(llm=relay_llm({}), memory=memory(), trajectory=traj, rng=random.Random(0), seed=0)
    fw.run(TOY, ToyEnv(2, 4, 8), ctx)
    assert feedback_value(traj) == 1.0
    assert fw.state_dict()["tasks_seen"] == 0  # nothing learned inside run()
    fw.observe(Episode(task=TOY, trajectory=traj, outcome=Outcome(success=None, source="none")))
    assert fw.state_dict()["tasks_seen"] == 0
    fw.observe(Episode(task=TOY, trajectory=traj, outcome=Outcome(success=False, value=0.0)))
    assert fw.state_dict()["abilities"]["agent_0"]["right"] == pytest.approx(0.54)


def test_provider_failure_propagates_and_leaves_the_state_untouched():
    fw = AgentNetFramework()
    before = fw.state_dict()

    def policy(request: Request, spec: ModelSpec) -> str:
        if _router(request):
            return "EXECUTE"
        raise TransientProviderError("timeout")

    with pytest.raises(InfraError, match="timeout"):
        run_task(fw, TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    assert fw.state_dict() == before


def test_per_agent_models_serve_each_agents_router_and_executor():
    register_mock_policy("agentnet_models", lambda request, spec: relay_policy(request, spec))
    specs = {
        label: ModelSpec(label=label, provider="mock", model=f"mock/{label}", options={"policy": "agentnet_models"})
        for label in ("small", "large")
    }
    llm = LLMClient(specs, {"default": "small"}, ResponseCache(None, "off"), RetryPolicy(max_attempts=1))
    fw = AgentNetFramework({"agents": 2, "models": ["small", "large"], "initial_abilities": [0.9, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm)
    used = {(d.agent, d.model) for d in traj.decisions}
    assert ("agent_0", "small") in used and ("agent_1", "large") in used
    assert all(model == {"agent_0": "small", "agent_1": "large"}[agent] for agent, model in used)


def relay_policy(request: Request, spec: ModelSpec) -> str:
    """agent_0 forwards to agent_1, which executes (the toy oracle)."""
    who = _router(request)
    if who == ("agent_0", "route"):
        return "FORWARD agent_1"
    if who is not None:
        return "EXECUTE"
    return mock_oracle(request, spec)
