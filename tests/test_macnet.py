"""The MacNet adapter: topologies, concurrency that never changes the result, costs, errors."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest
from fw_helpers import ANSWER_TASK, AnswerEnv, check_graph, oracle_llm, run_task, scripted_llm, system_of
from test_autogen import TOY

from aecg_bench.benchmarks.toy import ToyEnv, mock_oracle
from aecg_bench.errors import InfraError
from aecg_bench.llm.providers import Request, TransientProviderError
from aecg_bench.llm.spec import ModelSpec
from aecg_bench.types import Status
from frameworks.macnet import MacNetFramework
from frameworks.macnet.topology import build_dag


@pytest.mark.parametrize(
    ("topology", "edges", "layers", "sinks"),
    [
        ("chain", [(0, 1), (1, 2), (2, 3), (3, 4)], [[0], [1], [2], [3], [4]], [4]),
        ("star", [(0, 1), (0, 2), (0, 3), (0, 4)], [[0], [1, 2, 3, 4]], [1, 2, 3, 4]),
        ("tree", [(0, 1), (0, 2), (1, 3), (1, 4)], [[0], [1, 2], [3, 4]], [2, 3, 4]),
        ("layered", [(0, 2), (0, 3), (1, 2), (1, 3), (2, 4), (3, 4)], [[0, 1], [2, 3], [4]], [4]),
    ],
)
def test_fixed_topologies(topology, edges, layers, sinks):
    dag = build_dag(topology, 5, rng=random.Random(0), width=2)
    assert list(dag.edges) == edges and dag.layers() == layers and dag.sinks() == sinks


def test_full_and_random_topologies_are_acyclic_and_seeded():
    full = build_dag("full", 4, rng=random.Random(0))
    assert len(full.edges) == 6 and full.layers() == [[0], [1], [2], [3]]
    graphs = {seed: build_dag("random", 6, rng=random.Random(seed), edge_prob=0.5).edges for seed in range(6)}
    assert graphs[1] == build_dag("random", 6, rng=random.Random(1), edge_prob=0.5).edges
    assert len(set(graphs.values())) > 1
    assert all(p < s for edges in graphs.values() for p, s in edges)
    with pytest.raises(ValueError, match="valid choices: chain, star"):
        build_dag("ring", 3, rng=random.Random(0))


def _timed_oracle(request: Request, spec: ModelSpec) -> str:
    """The toy oracle, with node 1 and its instructor answering slowest so threads finish out of request order."""
    system = system_of(request)
    time.sleep(0.03 if "node 1" in system else 0.0)
    return mock_oracle(request, spec)


@pytest.mark.parametrize("protocol", ["gmemory", "chatdev"])
def test_concurrent_layers_give_the_same_graph_as_sequential_ones(protocol):
    def shape(workers: int) -> list[tuple]:
        fw = MacNetFramework({"protocol": protocol, "topology": "star", "nodes": 4, "max_workers": workers})
        traj = run_task(fw, TOY, ToyEnv(3, 5, 8), scripted_llm(_timed_oracle), seed=3)
        assert traj.status == Status.OK and len(traj.steps) == 3
        check_graph(traj)
        return [(d.id, d.agent, d.role, d.level, d.parents, d.prompt_hash, d.output) for d in traj.decisions]

    sequential = shape(1)
    assert shape(4) == sequential
    if protocol == "chatdev":
        return
    assert [a for _, a, *_ in sequential[:8]] == [
        "node_0",
        "instructor_0_1",
        "instructor_0_2",
        "instructor_0_3",
        "node_1",
        "node_2",
        "node_3",
        "final",
    ]


def test_the_random_graph_is_drawn_once_per_run_from_the_run_seed_or_per_task():
    """G-Memory builds its graph once per run (build_system); `graph_draw=task` draws one per sample."""
    per_run = MacNetFramework({"topology": "random", "nodes": 5, "edge_prob": 0.6})
    runs = [
        run_task(per_run, TOY, ToyEnv(3, 5, 8), oracle_llm(), seed=seed, run_seed=run).metadata["macnet"]
        for run, seed in ((4, 11), (4, 12), (5, 11))
    ]
    expected = build_dag("random", 5, rng=random.Random("macnet-graph:4"), edge_prob=0.6).edges
    assert runs[0] == runs[1] and runs[0]["edges"] == [list(e) for e in expected]  # same run, other sample
    assert runs[2]["edges"] != runs[0]["edges"] and runs[0]["graph_draw"] == "run"  # another run seed
    per_task = MacNetFramework({"topology": "random", "nodes": 5, "edge_prob": 0.6, "graph_draw": "task"})
    a, b = (run_task(per_task, TOY, ToyEnv(3, 5, 8), oracle_llm(), seed=11).metadata["macnet"] for _ in range(2))
    assert a == b and a["edges"] == [
        list(e) for e in build_dag("random", 5, rng=random.Random(11), edge_prob=0.6).edges
    ]


def test_the_random_graph_follows_g_memorys_draw():
    """G-Memory: randint(0, 1) on every ordered pair, edges added row by row, a cycle-closing one skipped.
    Its exact edge-count distribution on 3 nodes is 1/64, 9/64, 33/64, 21/64 (scripts/macnet_graph_stats.py);
    20,000 seeded draws land within one percentage point of each."""
    counts = Counter(len(build_dag("random", 3, rng=random.Random(f"t{k}")).edges) for k in range(20_000))
    for k, exact in enumerate((1 / 64, 9 / 64, 33 / 64, 21 / 64)):
        assert abs(counts[k] / 20_000 - exact) < 0.01, (k, counts)

    # a 2-cycle is never kept: 0 -> 1 drawn, 1 -> 0 then skipped
    class Always(random.Random):
        def random(self) -> float:
            return 0.0

    assert build_dag("random", 3, rng=Always()).edges == ((0, 1), (0, 2), (1, 2))


def test_a_node_fed_from_two_layers_keeps_its_first_arriving_revision():
    """ChatDev Graph.execute merges only when every predecessor delivered in the same layer; otherwise the
    solution is the revision of the first-arriving predecessor. Full graph on 3 nodes: node 2 hears node 0
    (layer 0) before node 1 (layer 1), so it keeps node 0's revision and merges nothing."""

    def policy(request: Request, spec: ModelSpec) -> str:
        system = system_of(request)
        if "You are node 2" in system and ("proposal of node 1" in system or "Several proposals" in system):
            return "REFUTES"  # node 1's line and any merge at node 2 are wrong
        return "SUPPORTS"

    fw = MacNetFramework({"topology": "full", "nodes": 3})
    traj = run_task(fw, ANSWER_TASK, AnswerEnv(), scripted_llm(policy))
    check_graph(traj)
    assert not any(d.role == "merger" for d in traj.decisions)
    final = next(d for d in traj.decisions if d.id == traj.steps[0].decision_id)
    kept = next(d for d in traj.decisions if d.id in final.parents and d.agent == "node_2")
    assert kept.output == "SUPPORTS" and traj.steps[0].observation.reward == 1.0
    # one layer feeding a node: it merges (layered 2 -> 1)
    merged = run_task(MacNetFramework({"topology": "layered", "nodes": 3}), ANSWER_TASK, AnswerEnv(), oracle_llm())
    assert [d.agent for d in merged.decisions if d.role == "merger"] == ["node_2"]


def test_gmemory_protocol_decodes_at_temperature_zero():
    """G-Memory's MacNet nodes, critics and decision node run with ReasoningConfig(temperature=0)."""
    seen: list[Request] = []
    llm = _recording_oracle(seen)
    llm.models["mock"] = llm.models["mock"].model_copy(update={"temperature": 0.7})
    run_task(MacNetFramework({"protocol": "gmemory", "topology": "chain", "nodes": 2}), TOY, ToyEnv(3, 5, 8), llm)
    assert seen and {r.params["temperature"] for r in seen} == {0.0}


def test_without_instructors_nodes_see_predecessors_directly():
    fw = MacNetFramework({"protocol": "gmemory", "topology": "chain", "nodes": 3, "instructors": False})
    traj = run_task(fw, ANSWER_TASK, AnswerEnv(), oracle_llm(default="SUPPORTS"))
    assert [(d.agent, d.role, d.level, d.parents) for d in traj.decisions] == [
        ("node_0", "solver", "agent", ()),
        ("node_1", "solver", "agent", ("d0",)),
        ("node_2", "solver", "agent", ("d1",)),
        ("final", "decider", "team", ("d2",)),
    ]
    assert traj.steps[0].action.text == "SUPPORTS"


def test_provider_failure_in_a_worker_thread_propagates():
    def policy(request: Request, spec: ModelSpec) -> str:
        if "node 1" in system_of(request):
            raise TransientProviderError("rate limited")
        return mock_oracle(request, spec)

    with pytest.raises(InfraError, match="rate limited"):
        run_task(MacNetFramework(), TOY, ToyEnv(3, 5, 8), scripted_llm(policy))


def test_unparsable_final_decisions_are_bounded():
    def policy(request: Request, spec: ModelSpec) -> str:
        return "```\n```" if "final decision" in system_of(request) else "stop"

    fw = MacNetFramework({"protocol": "gmemory", "nodes": 1})
    traj = run_task(fw, TOY, ToyEnv(3, 5, 8), scripted_llm(policy), max_invalid_actions=1)
    assert traj.status == Status.MODEL_ERROR and traj.invalid_actions == 2
    assert [d.agent for d in traj.decisions] == ["node_0", "final"] * 2


def test_reversed_topologies_converge():
    assert build_dag("star", 4, rng=random.Random(0), reverse=True).edges == ((0, 3), (1, 3), (2, 3))
    tree = build_dag("tree", 5, rng=random.Random(0), width=2, reverse=True)
    assert tree.sinks() == [4] and len(tree.edges) == 4


def _recording_oracle(seen: list[Request]):
    def policy(request: Request, spec: ModelSpec) -> str:
        seen.append(request)
        if "reviewing the proposal" in system_of(request):
            return "Comment: mind the target cell."
        return mock_oracle(request, spec)

    return scripted_llm(policy)


def test_chatdev_protocol_reviews_and_revises_on_every_edge_and_aggregates_with_a_depth_schedule():
    seen: list[Request] = []
    fw = MacNetFramework({"topology": "layered", "nodes": 4, "width": 2})
    traj = run_task(fw, TOY, ToyEnv(3, 5, 8), _recording_oracle(seen), max_steps=1)
    check_graph(traj)
    ds = traj.decisions
    shape = [(d.agent, d.role, d.level) for d in ds]
    review, revise = ("instructor", "event"), ("solver", "agent")
    assert shape == [
        ("node_0", *revise),  # sources propose (no instructor: nothing to review yet)
        ("node_1", *revise),
        *[(f"node_{i}", *review) for i in (2, 2, 3, 3)],  # node i reviews each predecessor's proposal...
        *[(f"node_{i}", *revise) for i in (2, 2, 3, 3)],  # ...and revises it: two calls per edge
        ("node_2", "merger", "agent"),  # two revisions reach each node: it aggregates them
        ("node_3", "merger", "agent"),
        ("final", "instructor", "event"),  # the output node does the same over the sinks
        ("final", "instructor", "event"),
        ("final", "decider", "team"),
        ("final", "decider", "team"),
        ("final", "decider", "team"),
    ]
    assert len(ds) == 17 and traj.steps[0].decision_id == ds[-1].id
    by = {d.id: d for d in ds}
    revision_0_2 = ds[6]
    assert revision_0_2.parents == (ds[0].id, ds[2].id)  # node 0's proposal and node 2's comments on it
    assert "[comments on node 0] Comment: mind the target cell." in system_of(seen[6])
    endings = [str(r.messages[-1]["content"]).splitlines()[-1] for r in seen]
    assert endings[2].startswith("Your comment with the highest priority") and endings[6] == "Next action:"
    assert ds[10].parents == (ds[6].id, ds[7].id)  # node 2 merges its two revisions
    assert by[ds[-1].parents[0]].agent == "final"
    # temperature 1 - depth / D over input (0), two layers, output (D = 3)
    temps = [r.params["temperature"] for r in seen]
    assert temps[:2] == [0.6667, 0.6667] and set(temps[2:12]) == {0.3333} and set(temps[12:]) == {0.0}
    # the step cost is visible per role: 2 + 4 x 2 + 2 node calls, 2 x 2 + 1 output-node calls
    assert sum(d.role == "instructor" for d in ds) == 6


def test_chatdev_without_schedule_or_instructors():
    seen: list[Request] = []
    fw = MacNetFramework({"topology": "chain", "nodes": 2, "instructors": False, "temperature_schedule": False})
    traj = run_task(fw, ANSWER_TASK, AnswerEnv(), _recording_oracle(seen))
    assert [(d.agent, d.role) for d in traj.decisions] == [
        ("node_0", "solver"),
        ("node_1", "solver"),
        ("final", "decider"),
    ]
    assert len({r.params["temperature"] for r in seen}) == 1  # the model's own, at every depth
    seen.clear()  # a temperature imposed by the caller (EDV's rollouts) wins over the schedule
    llm = _recording_oracle(seen).with_context(temperature=0.7)
    run_task(MacNetFramework({"topology": "chain", "nodes": 2}), ANSWER_TASK, AnswerEnv(), llm)
    assert {r.params["temperature"] for r in seen} == {0.7}


def test_the_default_graph_is_g_memorys_random_three_nodes_and_run_seeds_vary_it():
    fw = MacNetFramework()
    assert fw.params.protocol == "chatdev" and fw.params.topology == "random" and fw.params.nodes == 3
    assert fw.params.graph_draw == "run"
    graphs = {
        str(
            run_task(fw, ANSWER_TASK, AnswerEnv(), oracle_llm(default="SUPPORTS"), seed=s, run_seed=s).metadata[
                "macnet"
            ]["edges"]
        )
        for s in range(6)
    }
    assert len(graphs) > 1
