"""Every multi-agent framework x {toy, toy_tools} x {no_memory, recorder}, end to end through the runner.

The mock `oracle` model solves both toy benchmarks when the action-producing
decision sees the latest observation / the chat, so every run must succeed;
the decision graphs must have each framework's levels, roles and parents, and
every recall must be at a decision's scope with the ids the recorder returned.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fw_helpers import check_graph

from aecg_bench.analysis import load
from aecg_bench.analysis.paper import AGENT_ROLES, cost_table
from aecg_bench.run import run_from_config
from aecg_bench.runner.records import RunDir
from aecg_bench.types import trajectory_from_dict

FRAMEWORKS = ["autogen", "autogen_gmemory", "macnet", "agentnet"]

# (agent, role, level) of every decision each framework may make with the oracle on the toys
SCOPES: dict[str, set[tuple[str, str, str]]] = {
    "autogen": {("planner", "planner", "team"), ("executor", "executor", "agent"), ("critic", "critic", "event")},
    "autogen_gmemory": {("solver", "solver", "agent")},
    "macnet": {  # chatdev protocol on G-Memory's random 3-node graph (one per run)
        *{(f"node_{i}", role, "agent") for i in range(3) for role in ("solver", "merger")},
        *{(f"node_{i}", "instructor", "event") for i in range(3)},
        ("final", "instructor", "event"),
        ("final", "decider", "team"),
    },
    "agentnet": {
        *{(f"agent_{i}", "router", "team") for i in range(3)},
        *{(f"agent_{i}", "executor", "agent") for i in range(3)},
    },
}


def _run(make_config: Any, framework: str, benchmark: str, memory: str, size: int = 3) -> RunDir:
    final = run_from_config(
        make_config(
            f"framework={framework}", f"benchmark={benchmark}", f"benchmark.params.size={size}", f"memory={memory}"
        )
    )
    assert final["status"] == "complete"
    labels = final["labels"]
    root = Path(final["runtime"]["results_root"])
    return RunDir(root / "default" / benchmark / labels["framework"] / memory / "mock" / f"seed={labels['seed']}")


def _trajectories(rd: RunDir) -> list[tuple[dict[str, Any], Any]]:
    out = []
    for rec in rd.records():
        episode = rd.read_trajectory(rec["position"], rec["attempt"])["rollouts"][0]["episode"]
        out.append((rec, trajectory_from_dict(episode["trajectory"])))
    return out


def _check_framework_graph(framework: str, traj: Any) -> None:
    """Each framework's exact decision pattern and parents on the oracle's runs."""
    ds = traj.decisions
    if framework == "autogen":  # step 0: planner, executor, critic; later steps: executor, critic
        # the oracle approves every proposal, so no step has a revision
        assert [d.role for d in ds] == ["planner"] + ["executor", "critic"] * len(traj.steps)
        assert {v["verdict"] for v in traj.metadata["autogen"]["verdicts"]} == {"approve"}
        plan = ds[0].id
        assert ds[0].parents == () and ds[1].parents == (plan,) and ds[2].parents == (plan, ds[1].id)
        for k in range(3, len(ds), 2):
            executor, critic = ds[k], ds[k + 1]
            assert executor.parents == (ds[k - 2].id, plan)  # own previous action (which made the observation), plan
            assert critic.parents == (ds[k - 1].id, ds[k - 2].id, plan, executor.id)
        assert [s.decision_id for s in traj.steps] == [d.id for d in ds if d.role == "executor"]
    elif framework == "autogen_gmemory":  # the helper never steps in: the oracle does not repeat itself thrice
        assert [d.role for d in ds] == ["solver"] * len(traj.steps)
        assert all(d.parents == ((ds[i - 1].id,) if i else ()) for i, d in enumerate(ds))
    elif framework == "macnet":  # per step: sources propose, every edge (and sink->output) is reviewed and
        # revised (two calls), every node reached by two or more revisions from one layer aggregates them
        # (ChatDev's Graph.execute keeps the first-arriving revision otherwise); the output node acts
        meta = traj.metadata["macnet"]
        layer = {i: d for d, nodes in enumerate(meta["layers"]) for i in nodes} | {"out": len(meta["layers"])}
        edges = [tuple(e) for e in meta["edges"]] + [(s, "out") for s in meta["sinks"]]
        preds = {j: [i for i, k in edges if k == j] for _, j in edges}
        sources = meta["nodes"] - len({j for j in preds if j != "out"})
        merges = sum(len(ps) >= 2 and len({layer[i] for i in ps}) == 1 for ps in preds.values())
        per_step = sources + 2 * len(edges) + merges
        assert len(ds) == per_step * len(traj.steps)
        # the action: the output node's merge, else its revision of the first-arriving sink (earliest layer)
        sinks = meta["sinks"]
        first = sinks.index(min(sinks, key=lambda i: (layer[i], i)))
        merged = len(sinks) >= 2 and len({layer[i] for i in sinks}) == 1
        finals = []
        for k in range(len(traj.steps)):
            deciders = [d for d in ds[k * per_step : (k + 1) * per_step] if d.role == "decider"]
            assert all((d.agent, d.level) == ("final", "team") for d in deciders)
            assert len(deciders) == len(sinks) + merged
            finals.append(deciders[-1] if merged else deciders[first])
        assert [s.decision_id for s in traj.steps] == [d.id for d in finals]
    else:  # agentnet: the oracle's router keeps the task (EXECUTE), the entry agent executes
        entry = traj.metadata["agentnet"]["entry"]
        assert [(d.agent, d.role) for d in ds] == [(entry, "router")] + [(entry, "executor")] * len(traj.steps)
        assert all(d.parents == ((ds[i - 1].id,) if i else ()) for i, d in enumerate(ds))
        assert traj.metadata["agentnet"]["unparsed_routes"] == 0


@pytest.mark.parametrize("benchmark", ["toy", "toy_tools"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_framework_runs_toys_with_recorder_memory(make_config, framework, benchmark):
    rd = _run(make_config, framework, benchmark, "recorder")
    runs = _trajectories(rd)
    assert all(rec["status"] == "ok" and rec["success"] for rec, _ in runs)
    snapshot = rd.latest_snapshot(len(runs))
    assert snapshot is not None
    state = snapshot.state["memory"]
    recalls = [c for c in state["calls"] if c["op"] == "recall"]
    earlier: list[str] = []
    for rec, traj in runs:
        check_graph(traj)
        _check_framework_graph(framework, traj)
        scopes = {(d.agent, d.role, d.level) for d in traj.decisions}
        assert scopes <= SCOPES[framework]
        assert {d.level for d in traj.decisions} >= ({"agent"} if framework == "autogen_gmemory" else {"team", "agent"})
        # per-task retrieval: exactly one recall per distinct decision scope, with that scope
        asked = [(c["agent"], c["role"], c["level"]) for c in recalls if c["task"] == rec["sample_id"]]
        assert sorted(asked) == sorted(scopes)
        # recalled ids = the recorder's last k items of the same task type and level from earlier tasks
        for d in traj.decisions:
            pool = [
                i["id"]
                for i in state["items"]
                if i["task_type"] == rec["task_type"]
                and i["level"] == d.level
                and re.match(r"task (\S+) ", i["text"]).group(1) in earlier
            ]
            assert list(d.recalled_memory_ids) == pool[-2:], (d.id, d.level)
        assert rec["recalled_memory_ids"] == traj.recalled_memory_ids()
        earlier.append(rec["sample_id"])
    assert any(rec["recalled_memory_ids"] for rec, _ in runs[1:])


@pytest.mark.parametrize("benchmark", ["toy", "toy_tools"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_framework_runs_toys_without_memory(make_config, framework, benchmark):
    rd = _run(make_config, framework, benchmark, "no_memory", size=2)
    for rec, traj in _trajectories(rd):
        assert rec["status"] == "ok" and rec["success"]
        check_graph(traj)
        _check_framework_graph(framework, traj)
        assert all(d.recalled_memory_ids == () for d in traj.decisions)
        # every call is accounted under its decision's role (MacNet's solver/merger nodes as "node"),
        # and the per-role calls and tokens add up to the sample's totals and to the decision nodes
        by_role = rec["usage"]["by_role"]
        accounted = Counter(
            "node" if d.role in ("solver", "merger") and framework == "macnet" else d.role for d in traj.decisions
        )
        assert {r: u["calls"] for r, u in by_role.items()} == dict(accounted)
        assert sum(u["calls"] for u in by_role.values()) == rec["usage"]["total"]["calls"] == rec["decisions"]
        assert sum(u["input_tokens"] for u in by_role.values()) == rec["usage"]["total"]["input_tokens"]
        assert sum(d.input_tokens for d in traj.decisions) == rec["usage"]["total"]["input_tokens"] > 0
        assert set(by_role) <= set(AGENT_ROLES)
        assert rec["decisions_by"]["level"] == dict(Counter(d.level for d in traj.decisions))


def test_records_show_macnet_costs_more_tokens_than_autogen_and_agentnet(make_config):
    tokens = {}
    for framework in ("agentnet", "autogen", "macnet"):
        rec = _run(make_config, framework, "toy", "no_memory", size=1).records()[0]
        assert rec["steps"] > 0
        tokens[framework] = rec["usage"]["total"]["input_tokens"]
    assert tokens["macnet"] > 2 * tokens["autogen"] > 2 * tokens["agentnet"] > 0


def test_run_json_and_cost_table_split_by_level_agent_and_role(make_config):
    """A 3-task AutoGen run: run.json holds decisions per level, agent and role; the cost table's per-role
    token columns add up to its agent-side tokens."""
    rd = _run(make_config, "autogen", "toy", "no_memory", size=3)
    header = rd.read_header()
    decisions = header["decisions"]
    records = rd.records()
    assert decisions["total"] == sum(r["decisions"] for r in records) > 0
    assert set(decisions["by_level"]) == {"team", "event", "agent"}
    assert set(decisions["by_agent"]) == {"planner", "executor", "critic"}
    assert sum(decisions["share_by_level"].values()) == pytest.approx(1.0, abs=1e-3)
    assert set(header["usage"]["by_role"]) == {"planner", "executor", "critic"}
    table = cost_table(load(rd.path.parents[4]))
    row = table.iloc[0]
    assert row["agent_tokens"] == row["tokens_planner"] + row["tokens_executor"] + row["tokens_critic"] > 0
