"""The AgentNet adapter: the relay (forward, split, next agent), router grammars, evolution, state, pools."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from pathlib import Path

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
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import Episode, Outcome, Status, Trajectory
from frameworks.agentnet import AgentNetFramework
from frameworks.agentnet.framework import feedback_value, handover_grammar
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
    # after two hops FORWARD is no longer offered, so the third router's FORWARD does not parse; it is
    # re-asked until the bound on unparsable outputs (protocol.max_invalid_actions, 3) ends the sample
    assert [r["offered"] for r in record["routes"]][2] == ["execute", "split"]
    assert [r["route"] for r in record["routes"]] == ["forward", "forward", *["unparsed"] * 4]
    assert traj.status == Status.MODEL_ERROR and traj.steps == []


def test_an_unparsable_route_is_re_asked_as_the_original_and_never_read_as_execute():
    """AgentNet's loop asks the router again until it decides; an unreadable router never quietly turns the
    network into one agent: re-asked (with feedback) until the bound, the sample ends as model_error."""
    seen: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        if _router(request):
            seen.append(str(request.messages[-1]["content"]))
            return "move right"  # an action where a routing decision was asked
        return mock_oracle(request, spec)

    traj = run_task(AgentNetFramework(), TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    record = traj.metadata["agentnet"]
    assert [r["route"] for r in record["routes"]] == ["unparsed"] * 4
    assert [r["attempt"] for r in record["routes"]] == [0, 1, 2, 3]
    assert record["unparsed_routes"] == 4 and traj.steps == [] and traj.invalid_actions == 0
    assert traj.status == Status.MODEL_ERROR and "4 unparsable outputs in a row" in traj.error
    assert "could not be read" in seen[1] and "could not be read" not in seen[0]
    assert traj.decisions[1].parents == (traj.decisions[0].id,)


def test_a_route_read_on_a_re_ask_goes_ahead_and_resets_the_unparsable_run():
    replies = iter(["move right", "hmm", "FORWARD agent_1"])

    def policy(request: Request, spec: ModelSpec) -> str:
        who = _router(request)
        if who is None:
            return mock_oracle(request, spec)
        return next(replies) if who[0] == "agent_0" else "EXECUTE"

    fw = AgentNetFramework({"initial_abilities": [0.9, 0.6, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), scripted_llm(policy))
    record = traj.metadata["agentnet"]
    assert [r["route"] for r in record["routes"]] == ["unparsed", "unparsed", "forward", "execute"]
    assert set(_acting_agents(traj)) == {"agent_1"} and traj.status == Status.OK
    assert traj.steps[-1].observation.reward == 1.0


def test_a_forward_to_a_weak_agent_is_redirected_and_agents_can_start_differentiated():
    llm = relay_llm({("agent_0", "route"): "FORWARD agent_1"})
    fw = AgentNetFramework({"initial_abilities": [0.9, 0.4, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm)
    record = traj.metadata["agentnet"]
    assert record["entry"] == "agent_0"  # the most able
    # agent_1 is below min_forward_ability (0.5): the task goes to the best neighbour instead (code's rule)
    assert record["edges_used"] == [["agent_0", "agent_2"]]
    assert (record["routes"][0]["to"], record["routes"][0]["chosen"]) == ("agent_2", "best")
    assert set(_acting_agents(traj)) == {"agent_2"}


def test_a_forward_with_no_able_neighbour_goes_to_a_random_neighbour_not_refused():
    """find_best_alternative_agent: no neighbour with ability >= 0.5 -> random.choice over the neighbours."""
    llm = relay_llm({("agent_0", "route"): "FORWARD agent_1"})
    targets = set()
    for seed in range(8):
        fw = AgentNetFramework({"initial_abilities": [0.9, 0.4, 0.3]})
        traj = run_task(fw, TOY, ToyEnv(2, 4, 8), llm, seed=seed)
        record = traj.metadata["agentnet"]
        assert record["routes"][0]["chosen"] == "random"
        (edge,) = record["edges_used"]
        assert edge[0] == "agent_0" and set(_acting_agents(traj)) == {edge[1]} != {"agent_0"}
        targets.add(edge[1])
    assert targets == {"agent_1", "agent_2"}  # drawn from the sample's rng


def test_forwards_and_hand_offs_go_on_after_failures_drop_every_ability_below_the_bar():
    """Under the paper's rule two failures take an agent from 0.6 below 0.5; routing must not stop there."""
    bench = ToyBenchmark({"size": 10})

    def policy(request: Request, spec: ModelSpec) -> str:
        who, system = _router(request), system_of(request)
        if who is None:  # executors walk on their part and stop short at the end: every task fails
            return "move right" if "Your part" in system else "stop"
        if who[1] == "next":
            return "INCOMPLETE " + re.search(r"Available agents: (agent_\d+)", system).group(1) + ": finish"
        if "Remaining task to route" in str(request.messages[-1]["content"]):
            return "EXECUTE"
        return "FORWARD agent_1" if "FORWARD agent_<n>" in system else "SPLIT: walk"

    fw = AgentNetFramework({"max_hops": 1})
    carried, chosen = [], []
    for i, sample in enumerate(bench.samples()):
        env = bench.make_env(sample, EnvContext(llm=None, seed=0))
        traj = run_task(fw, sample.task, env, scripted_llm(policy), seed=i)
        passed = [r for r in traj.metadata["agentnet"]["routes"] if r["route"] in ("forward", "incomplete")]
        carried.append(sum(1 for r in passed if r.get("to")))
        chosen += [r["chosen"] for r in passed]
    assert carried == [2] * len(carried)  # a forward and a hand-off on every task, to the last
    assert "random" in chosen  # at some point no neighbour was able enough


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
    llm = relay_llm({("agent_0", "route"): "FORWARD agent_1"}, executor="stop")
    fw = AgentNetFramework({"agents": 2, "prune_at": 0.95, "initial_abilities": [0.9, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(2, 5, 8), llm)  # stops on the wrong cell: a failure
    assert traj.status == Status.OK and traj.metadata["agentnet"]["edges_used"] == [["agent_0", "agent_1"]]
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


def test_complete_while_the_environment_runs_leaves_the_holder_to_finish_the_task():
    """The original stops the relay at COMPLETE and takes the latest result as the answer; a step-wise
    environment that has not ended has no such answer, so the holder finishes the task."""
    llm = relay_llm({("agent_0", "route"): "SPLIT: walk toward the target", ("agent_0", "next"): "COMPLETE"})
    fw = AgentNetFramework({"initial_abilities": [0.9, 0.6, 0.6]})
    traj = run_task(fw, TOY, ToyEnv(1, 6, 8), llm)
    record = traj.metadata["agentnet"]
    assert [r["route"] for r in record["routes"]] == ["split", "complete"]
    assert record["completes_unfinished"] == 1
    assert [(e["agent"], e["last"]) for e in record["executions"]] == [("agent_0", False), ("agent_0", True)]
    assert traj.status == Status.OK and traj.steps[-1].observation.reward == 1.0  # the walk is finished


def test_a_split_part_can_hand_over_under_the_action_grammar():
    """A grammar-constrained executor can only say what its grammar allows: SUBTASK DONE must be in it."""
    grammars: list[str] = []

    def policy(request: Request, spec: ModelSpec) -> str:
        who = _router(request)
        if who is not None:
            if who[1] == "next":
                return "INCOMPLETE agent_1: finish the walk"
            remainder = "Remaining task to route" in str(request.messages[-1]["content"])
            return "EXECUTE" if remainder else "SPLIT: take one step"
        grammar = request.params["grammar"]
        grammars.append(grammar)
        done = "Your part" in system_of(request) and "Recent steps" in str(request.messages[-1]["content"])
        return "SUBTASK DONE" if done and '"SUBTASK DONE"' in grammar else mock_oracle(request, spec)

    llm = scripted_llm(policy)
    llm.models["mock"] = llm.models["mock"].model_copy(update={"grammar": True})  # a grammar-capable model
    task = dataclasses.replace(TOY, action_grammar=ToyBenchmark().samples()[0].task.action_grammar)
    traj = run_task(AgentNetFramework({"initial_abilities": [0.9, 0.6, 0.6]}), task, ToyEnv(1, 6, 8), llm)
    record = traj.metadata["agentnet"]
    assert [(e["agent"], e["steps"]) for e in record["executions"]] == [("agent_0", 1), ("agent_1", 5)]
    assert grammars[0].startswith('root ::= "SUBTASK DONE" | agentnet-action')
    assert '"move left" | "move right" | "stop"' in grammars[0]
    assert grammars[-1] == task.action_grammar  # the last part gets the task's own grammar
    assert traj.steps[-1].observation.reward == 1.0


def test_handover_grammar_renames_only_the_root_rule():
    g = handover_grammar('root ::= act | "root"\nact ::= "go" [a-z root] | root')
    assert g == 'root ::= "SUBTASK DONE" | agentnet-action\nagentnet-action ::= act | "root"\n' + (
        'act ::= "go" [a-z root] | agentnet-action'
    )


def _agentnet_run(make_config, *overrides: str) -> tuple[int, list[dict]]:
    """(tasks the network learned from, the records) of a 4-task AgentNet run on the toy with No-Memory."""
    final = run_from_config(
        make_config("framework=agentnet", "benchmark=toy", "benchmark.params.size=4", "memory=no_memory", *overrides)
    )
    experiment = next((o.split("=")[1] for o in overrides if o.startswith("experiment_name=")), "default")
    root = Path(final["runtime"]["results_root"]) / experiment / "toy"
    rd = RunDir(root / final["labels"]["framework"] / "no_memory" / "mock" / "seed=0")
    records = rd.records()
    return rd.latest_snapshot(len(records)).state["framework"]["tasks_seen"], records


def test_the_network_evolves_on_the_training_part_of_the_stream_only_by_default(make_config):
    """AgentNet's fit() evolves the network on a train split and evaluate() runs it frozen; here the training
    part is the build and warm-up items (`protocol.framework_learning=training`), so No-Memory's eval stream
    teaches the network nothing unless `framework_learning=all` says so."""
    assert _agentnet_run(make_config)[0] == 0
    seen, records = _agentnet_run(make_config, "protocol.warmup_fraction=0.5", "experiment_name=warm")
    assert seen == 2 and [r["phase"] for r in records] == ["warmup", "warmup", "eval", "eval"]
    assert _agentnet_run(make_config, "protocol.framework_learning=all", "experiment_name=all")[0] == 4
