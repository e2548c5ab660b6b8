"""The AgentNet adapter: routing and its validity checks, bounded paths, evolution, state, pools."""

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
from aecg_bench.llm.providers import Request, TransientProviderError
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Episode, Outcome, Status, Trajectory
from frameworks.agentnet import AgentNetFramework
from frameworks.agentnet.framework import feedback_value
from frameworks.agentnet.routing import parse_route


def _router(request: Request) -> str | None:
    m = re.search(r"You are the router of (agent_\d+)", system_of(request))
    return m.group(1) if m else None


def routing_llm(routes: dict[str, str], executor: str | None = None):
    """Routers reply from `routes` (by agent; default EXECUTE); executors play the toy oracle."""

    def policy(request: Request, spec: ModelSpec) -> str:
        agent = _router(request)
        if agent is not None:
            return routes.get(agent, "EXECUTE")
        return executor or mock_oracle(request, spec)

    return scripted_llm(policy)


def test_parse_route_checks_validity():
    targets = ["agent_1", "agent_2"]
    assert parse_route("FORWARD agent_2", targets, True, 3).target == "agent_2"
    assert parse_route("**Forward to Agent 1.**", targets, True, 3).target == "agent_1"
    assert parse_route("SPLIT go right || stop", targets, True, 3).parts == ("go right", "stop")
    assert parse_route("execute\nbecause", targets, True, 3) == parse_route("EXECUTE", [], False, 3)
    for bad, can_split in [
        ("FORWARD agent_0", True),  # not offered (itself, on the path, or cut)
        ("SPLIT just one part", True),
        ("SPLIT a || b || c || d", True),
        ("SPLIT a || b", False),  # sub-tasks are not split again
        ("move right", True),
    ]:
        route = parse_route(bad, targets, can_split, 3)
        assert route.kind == "execute" and not route.valid, bad


def test_forward_then_split_routes_parts_through_the_network():
    llm = routing_llm({"agent_0": "FORWARD agent_2", "agent_2": "SPLIT walk to the target || stop on it"})
    fw = AgentNetFramework()
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm)
    check_graph(traj)
    assert traj.status == Status.OK and traj.steps[-1].observation.reward == 1.0
    d = traj.decisions
    assert [(x.agent, x.role, x.level, x.parents) for x in d[:3]] == [
        ("agent_0", "router", "team", ()),
        ("agent_2", "router", "team", ("d0",)),
        ("agent_0", "router", "event", ("d1",)),  # the second part goes to agent_2's best free neighbour
    ]
    record = traj.metadata["agentnet"]
    assert record["edges_used"] == [["agent_0", "agent_2"], ["agent_2", "agent_0"]]
    assert [(p["agent"], p["task"], p["decision"]) for p in record["parts"]] == [
        ("agent_2", "walk to the target", "d1"),
        ("agent_0", "stop on it", "d2"),
    ]
    executors = [x for x in d if x.role == "executor"]
    assert executors[0].agent == "agent_2" and executors[0].parents == ("d1",)
    assert all(x.level == "agent" for x in executors)
    # the oracle finishes the whole walk within the first part's share of the steps
    assert record["parts"][0]["steps"] == 3 and record["parts"][1]["decisions"] == 0
    # evolution: both used edges and agent_2's ability moved toward the success
    state = fw.state_dict()
    assert state["weights"]["agent_0"]["agent_2"] == pytest.approx(0.6)
    assert state["weights"]["agent_2"]["agent_0"] == pytest.approx(0.6)
    assert state["abilities"]["agent_2"]["right"] == pytest.approx(0.6) and state["abilities"]["agent_0"] == {}


def test_forwarding_is_bounded_and_never_revisits_an_agent():
    llm = routing_llm({f"agent_{i}": f"FORWARD agent_{(i + 1) % 5}" for i in range(5)})
    traj = run_task(AgentNetFramework({"agents": 5, "max_hops": 2}), TOY, ToyEnv(2, 4, 8), llm)
    record = traj.metadata["agentnet"]
    # after two hops agent_2 may only execute or split: its FORWARD is not offered, so it is invalid
    assert [(r["agent"], r["route"], r["valid"]) for r in record["routes"]] == [
        ("agent_0", "forward", True),
        ("agent_1", "forward", True),
        ("agent_2", "execute", False),
    ]
    assert record["invalid_routes"] == 1 and record["parts"][0]["agent"] == "agent_2"
    # with nothing left to decide (no hops, no split) the router is not called at all
    traj = run_task(AgentNetFramework({"agents": 5, "max_hops": 1, "split": False}), TOY, ToyEnv(2, 4, 8), llm)
    assert [d.role for d in traj.decisions[:2]] == ["router", "executor"]
    assert traj.decisions[1].agent == "agent_1" and traj.decisions[1].parents == ("d0",)
    # a cycle back to an agent on the path is never offered
    llm = routing_llm({"agent_0": "FORWARD agent_1", "agent_1": "FORWARD agent_0"})
    traj = run_task(AgentNetFramework({"agents": 2}), TOY, ToyEnv(2, 4, 8), llm)
    assert [r["valid"] for r in traj.metadata["agentnet"]["routes"]] == [True, False]


def test_handover_and_answer_mode_parts():
    llm = routing_llm({"agent_0": "SPLIT check the claim || give the verdict"}, executor="SUPPORTS")
    traj = run_task(AgentNetFramework(), ANSWER_TASK, AnswerEnv(), llm)
    parts = traj.metadata["agentnet"]["parts"]
    assert [p["agent"] for p in parts] == ["agent_0", "agent_1"]
    first, last = (x for x in traj.decisions if x.role == "executor")
    assert first.action is None and parts[0]["result"] == "SUPPORTS"  # an intermediate result, no answer yet
    assert last.id == traj.steps[0].decision_id and first.id in last.parents
    assert traj.steps[0].observation.reward == 1.0


def test_evolution_shifts_the_entry_agent_after_failures_and_state_round_trips():
    fw = AgentNetFramework({"agents": 2})
    failing = scripted_llm(lambda request, spec: "EXECUTE" if _router(request) else "stop")
    entries = []
    for _ in range(3):  # stopping on the wrong cell: reward 0
        traj = run_task(fw, TOY, ToyEnv(2, 5, 8), failing)
        entries.append(traj.metadata["agentnet"]["entry"])
        assert feedback_value(traj) == 0.0
    assert entries == ["agent_0", "agent_1", "agent_0"]  # the most able agent (ties: lowest index)
    abilities = fw.state_dict()["abilities"]
    assert abilities["agent_0"]["right"] == pytest.approx(0.32) and abilities["agent_1"]["right"] == pytest.approx(0.4)
    state = json.loads(json.dumps(fw.state_dict()))
    copy = AgentNetFramework({"agents": 2})
    copy.load_state_dict(state)
    assert copy.state_dict() == fw.state_dict()
    with pytest.raises(ValueError, match="agent_0"):
        AgentNetFramework({"agents": 3}).load_state_dict(state)


def test_weak_edges_are_cut_but_every_agent_keeps_one():
    params = {"weight_rate": 0.9, "prune_below": 0.2}
    llm = scripted_llm(lambda request, spec: "FORWARD agent_1" if _router(request) == "agent_0" else "stop")
    fw = AgentNetFramework({"agents": 3, **params})
    run_task(fw, TOY, ToyEnv(2, 5, 8), llm)  # a failed task over agent_0 -> agent_1: 0.5 -> 0.05, cut
    assert fw.state_dict()["weights"]["agent_0"] == {"agent_2": 0.5}
    traj = run_task(fw, TOY, ToyEnv(2, 5, 8), llm)
    assert traj.metadata["agentnet"]["routes"][0]["valid"] is False  # agent_1 is no longer a neighbour
    two = AgentNetFramework({"agents": 2, **params})
    run_task(two, TOY, ToyEnv(2, 5, 8), llm)
    assert two.state_dict()["weights"]["agent_0"] == {"agent_1": pytest.approx(0.05)}  # its only edge stays


def test_state_is_deterministic_over_a_stream():
    bench = ToyBenchmark({"size": 6})

    def stream() -> dict:
        fw = AgentNetFramework({"experience_pools": True})
        for sample in bench.samples():
            run_task(fw, sample.task, bench.make_env(sample, EnvContext(llm=None, seed=0)), oracle_llm(error_rate=0.3))
        return fw.state_dict()

    first = stream()
    assert first == stream() and first["tasks_seen"] == 6
    assert any(first["pools"][a]["executor"] for a in first["agents"])


def test_experience_pools_enter_prompts_through_the_formatter_but_not_recall_records():
    fw = AgentNetFramework({"experience_pools": True})
    seen: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        seen.append(system_of(request))
        return "EXECUTE" if _router(request) else mock_oracle(request, spec)

    run_task(fw, TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    assert not any("agentnet-" in s for s in seen)
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), scripted_llm(policy), memory("recorder"))
    assert any("[agentnet-router-experience]" in s for s in seen)
    assert any("[agentnet-executor-experience]" in s and "(outcome 1.00)" in s for s in seen)
    assert all(d.recalled_memory_ids == () for d in traj.decisions)


def test_outcome_learning_uses_the_label_not_the_reward():
    fw = AgentNetFramework({"learn_from": "outcome"})
    traj = Trajectory(task_id=TOY.id, framework=fw.name)
    ctx = AgentContext(llm=oracle_llm(), memory=memory(), trajectory=traj, rng=random.Random(0), seed=0)
    fw.run(TOY, ToyEnv(2, 4, 8), ctx)
    assert fw.state_dict()["tasks_seen"] == 0  # nothing learned inside run()
    fw.observe(Episode(task=TOY, trajectory=traj, outcome=Outcome(success=None, source="none")))
    assert fw.state_dict()["tasks_seen"] == 0
    fw.observe(Episode(task=TOY, trajectory=traj, outcome=Outcome(success=False, value=0.0)))
    assert fw.state_dict()["abilities"]["agent_0"]["right"] == pytest.approx(0.4)


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
