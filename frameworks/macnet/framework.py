"""The MacNet adapter: node agents on a DAG; per step a pass through the graph, then one action.

See the package docstring (`frameworks.macnet`) and docs/frameworks/macnet.md for the spec.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import AgentContext, Environment, Framework, Params
from aecg_bench.types import Task, Trajectory
from frameworks.base import (
    ACT_INSTRUCTIONS,
    ENDINGS,
    Decider,
    Decision,
    DecisionRequest,
    EnvLoop,
    Transcript,
    with_notes,
)
from frameworks.macnet.topology import Dag, Topology, build_dag

GRAPH = "a team of agents arranged as a directed acyclic graph"

# protocol=chatdev: after OpenBMB/ChatDev (macnet branch) config.yaml instructor_prompt, assistant_prompt, cc_prompt
REVIEW = (
    "You are node {i} of " + GRAPH + ", reviewing the proposal of {src} for the current step against the task "
    "and the current state. Propose the one comment with the highest priority and tell how to fix it. "
    "If the proposal is perfect, reply only: <INFO> Finished"
)
SOURCE = "You are node {i} of " + GRAPH + ". Propose what the team should do now."
REVISE = (
    "You are node {i} of " + GRAPH + ". Revise the proposal of {src} according to the comments on it, "
    "and give the complete revised proposal."
)
AGGREGATE = (
    "You are node {i} of " + GRAPH + ". Several proposals serving the same purpose reached you. Compare their "
    "strengths and weaknesses, then give one improved proposal that keeps their strengths and drops their "
    "weaknesses (with a single proposal, return it unchanged)."
)

# protocol=gmemory: after bingreeky/GMemory tasks/mas_workflow/macnet (critic per upstream output, decision node)
NODE = {
    0: "Propose what the team should do now.",
    1: "Improve the proposal of the agent before you, following its instructor's advice.",
    2: "Merge the proposals of the agents before you into the best single proposal, following the instructors' advice.",
}
INSTRUCTOR = (
    "You are the instructor on the edge from node {p} to node {i} of " + GRAPH + ". Review node {p}'s proposal "
    "for the current step against the task and the current state, and give node {i} at most two short, concrete "
    "instructions to improve it. Do not act yourself."
)
FINAL = (
    f"You make the final decision of {GRAPH}. Turn the proposals of the team's last agents (below) into the one "
    "action to take now."
)


class MacNetParams(Params):
    protocol: Literal["chatdev", "gmemory"] = Field(
        "chatdev",
        description="chatdev: MacNet's original (instructor + assistant call per edge, aggregation per node, "
        "output node, temperature by depth); gmemory: G-Memory's workflow (critic per edge, one call per node, "
        "a decision node)",
    )
    topology: Topology = Field("random", description="chain | star | tree | full | layered | random")
    nodes: int = Field(3, ge=1, le=32, description="node agents in the graph (the output / final node is extra)")
    width: int = Field(2, ge=1, description="layer width (layered) and branching factor (tree)")
    edge_prob: float = Field(0.5, ge=0.0, le=1.0, description="random topology: probability of each ordered pair")
    graph_draw: Literal["run", "task"] = Field(
        "run",
        description="random topology: one graph for the whole run, from the run seed (G-Memory draws one per run), "
        "or a new graph per task, from the sample's seed",
    )
    reverse: bool = Field(False, description="convergent graph: every edge reversed (ChatDev generate_graph.py)")
    instructors: bool = Field(True, description="a review (instructor / critic) of each edge's proposal")
    aggregate_unit: int = Field(
        2, ge=2, description="chatdev: a node aggregates when at least this many proposals reach it"
    )
    temperature_schedule: bool = Field(
        True, description="chatdev: a node at depth d of D samples at temperature 1 - d/D"
    )
    max_workers: int = Field(4, ge=1, description="threads for the nodes (and instructors) of one layer")
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


@dataclass
class _Step:
    """The decisions of one environment step, by node and by edge."""

    previous: str | None  # decision whose action produced the current observation
    note: str
    proposals: dict[int, Decision] = field(default_factory=dict)  # a node's solution
    critiques: dict[tuple[int, int], Decision] = field(default_factory=dict)  # review of p's solution for i
    revisions: dict[tuple[int, int], Decision] = field(default_factory=dict)  # i's revision of p's solution


class MacNetFramework(Framework):
    name = "macnet"
    version = "3"
    Params = MacNetParams

    def randomness(self) -> list[str]:
        if self.params.topology != "random":
            return []
        return [f"the random graph's edges (one per {self.params.graph_draw})"]

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        p = self.params
        traj = ctx.trajectory
        rng = random.Random(f"macnet-graph:{ctx.run_seed}") if p.graph_draw == "run" else ctx.rng
        dag = build_dag(p.topology, p.nodes, rng=rng, width=p.width, edge_prob=p.edge_prob, reverse=p.reverse)
        traj.metadata["macnet"] = {
            "protocol": p.protocol,
            "topology": p.topology,
            "graph_draw": p.graph_draw,
            "reverse": p.reverse,
            "nodes": dag.n,
            "edges": [list(e) for e in dag.edges],
            "layers": dag.layers(),
            "sinks": dag.sinks(),
        }
        decider = Decider(task, ctx, traj)
        loop = EnvLoop(env, task, traj, ctx, p.max_steps)
        transcript = Transcript(task, traj, p.history_window)
        transcript.start(loop.reset())
        # ChatDev macnet graph.py `agent_deployment`: temperature = 1 - depth / D; a temperature the caller
        # imposes on every call (EDV's rollout sampling) takes precedence
        schedule = p.temperature_schedule and ctx.llm.temperature is None
        # G-Memory's nodes and critics decode at temperature 0 (node.py, graph_mas.py ReasoningConfig)
        greedy = 0.0 if ctx.llm.temperature is None else None
        while not loop.finished:
            step = _Step(traj.steps[-1].decision_id if traj.steps else None, loop.note)
            if p.protocol == "chatdev":
                final = self._chatdev_pass(decider, transcript, loop, dag, step, schedule)
            else:
                final = self._gmemory_pass(decider, transcript, loop, dag, step, greedy)
            loop.take(decider, transcript, final)
        loop.close_out()
        return traj

    # -- protocol=chatdev ------------------------------------------------------

    def _chatdev_pass(
        self, decider: Decider, transcript: Transcript, loop: EnvLoop, dag: Dag, step: _Step, schedule: bool
    ) -> Decision:
        """ChatDev macnet graph.py `Graph.execute`: layer by layer, each in-edge p->i makes node i review p's
        solution (instructor) and revise it (assistant). A node whose predecessors all sit in one layer and number
        at least `aggregate_unit` merges their revisions; any other node keeps the revision of its first-arriving
        predecessor (earliest layer, then node order), as `Graph.execute` does when `pre_solutions` outnumber the
        predecessors still in the graph. The output node (after the sinks) does the same; its solution is the
        step's action."""
        out = dag.n
        layers = [*dag.layers(), [out]]
        preds = {i: dag.preds(i) for i in range(dag.n)} | {out: dag.sinks()}
        layer_of = {i: d for d, layer in enumerate(layers) for i in layer}
        depth = len(layers)  # the original's D: the virtual input node is depth 0, the output node depth D
        for d, layer in enumerate(layers, start=1):
            temp = {i: round(1 - d / depth, 4) if schedule else None for i in layer}
            edges = [(src, i) for i in layer for src in preds[i]]
            if self.params.instructors and edges:
                requests = [self._review(transcript, loop, step, src, i, out, temp[i]) for src, i in edges]
                step.critiques.update(zip(edges, decider.decide_many(requests, self.params.max_workers), strict=True))
            units = [(src, i) for src, i in edges] + [(None, i) for i in layer if not preds[i]]
            requests = [self._revise(transcript, loop, step, src, i, out, temp[i]) for src, i in units]
            for (src, i), decision in zip(units, decider.decide_many(requests, self.params.max_workers), strict=True):
                if src is None:
                    step.proposals[i] = decision
                else:
                    step.revisions[(src, i)] = decision
            merging = [
                i
                for i in layer
                if len(preds[i]) >= self.params.aggregate_unit and len({layer_of[q] for q in preds[i]}) == 1
            ]
            requests = [self._aggregate(transcript, loop, step, i, preds[i], out, temp[i]) for i in merging]
            step.proposals.update(zip(merging, decider.decide_many(requests, self.params.max_workers), strict=True))
            for i in layer:  # no merge: the revision of the first-arriving predecessor is the node's solution
                if i not in step.proposals:
                    first = min(preds[i], key=lambda q: (layer_of[q], q))
                    step.proposals[i] = step.revisions[(first, i)]
        return step.proposals[out]

    def _who(self, i: int, out: int) -> dict[str, Any]:
        """Agent, role, level and accounting of node `i`'s own outputs (the output node acts for the team)."""
        if i == out:
            return {"agent": "final", "role": "decider", "level": "team", "account": "decider"}
        return {"agent": f"node_{i}", "level": "agent", "account": "node"}

    def _review(
        self, transcript: Transcript, loop: EnvLoop, step: _Step, src: int, i: int, out: int, temp: float | None
    ) -> DecisionRequest:
        """Node i, as instructor, reviews p's solution (ChatDev `Node.optimize`, instructor_prompt)."""
        label = f"node {src}"
        return DecisionRequest(
            **self._base(transcript, loop, step, acting=False, ending=ENDINGS["review"]),
            agent=self._who(i, out)["agent"],
            role="instructor",
            level="event",
            system=with_notes(REVIEW.format(i=_name(i, out), src=label), [(label, step.proposals[src].node.output)]),
            parents=(step.proposals[src].node.id, *_opt(step.previous)),
            temperature=temp,
        )

    def _revise(
        self, transcript: Transcript, loop: EnvLoop, step: _Step, src: int | None, i: int, out: int, temp: float | None
    ) -> DecisionRequest:
        task = transcript.task
        who = self._who(i, out)
        name = _name(i, out)
        if src is None:
            system, notes, parents = SOURCE.format(i=name), [], []
        else:
            label = f"node {src}"
            notes = [(label, step.proposals[src].node.output)]
            parents = [step.proposals[src].node.id]
            if (src, i) in step.critiques:
                notes.append((f"comments on {label}", step.critiques[(src, i)].node.output))
                parents.append(step.critiques[(src, i)].node.id)
            system = REVISE.format(i=name, src=label)
        return DecisionRequest(
            **self._base(transcript, loop, step, acting=True),
            **{"role": "solver", **who},
            system=with_notes(f"{system} {ACT_INSTRUCTIONS[task.mode]}", notes),
            parents=(*parents, *_opt(step.previous)),
            temperature=temp,
        )

    def _aggregate(
        self, transcript: Transcript, loop: EnvLoop, step: _Step, i: int, preds: list[int], out: int, temp: float | None
    ) -> DecisionRequest:
        task = transcript.task
        revisions = [step.revisions[(src, i)] for src in preds]
        notes = [(f"proposal {k + 1}", r.node.output) for k, r in enumerate(revisions)]
        return DecisionRequest(
            **self._base(transcript, loop, step, acting=True),
            **{"role": "merger", **self._who(i, out)},
            system=with_notes(f"{AGGREGATE.format(i=_name(i, out))} {ACT_INSTRUCTIONS[task.mode]}", notes),
            parents=(*(r.node.id for r in revisions), *_opt(step.previous)),
            temperature=temp,
        )

    # -- protocol=gmemory --------------------------------------------------------

    def _gmemory_pass(
        self, decider: Decider, transcript: Transcript, loop: EnvLoop, dag: Dag, step: _Step, temp: float | None
    ) -> Decision:
        """G-Memory graph_mas.py `MacNet.schedule`: nodes in topological order, a critic on each upstream
        output (`use_critic`), then the decision node turns the sinks' outputs into the action."""
        task = transcript.task
        for layer in dag.layers():
            self._gmemory_layer(decider, transcript, loop, dag, layer, step, temp)
        return decider.decide(
            **self._base(transcript, loop, step, acting=True),
            agent="final",
            role="decider",
            level="team",
            system=with_notes(f"{FINAL} {ACT_INSTRUCTIONS[task.mode]}", self._sink_notes(dag, step)),
            parents=(*(step.proposals[s].node.id for s in dag.sinks()), *_opt(step.previous)),
            temperature=temp,
        )

    def _gmemory_layer(
        self,
        decider: Decider,
        transcript: Transcript,
        loop: EnvLoop,
        dag: Dag,
        layer: list[int],
        step: _Step,
        temp: float | None,
    ) -> None:
        """Instructors of the layer's in-edges, then the layer's nodes; each group concurrently."""
        task, workers = transcript.task, self.params.max_workers
        if self.params.instructors:
            edges = [(p, i) for i in layer for p in dag.preds(i)]
            requests = [
                DecisionRequest(
                    **self._base(transcript, loop, step, acting=False, ending=ENDINGS["instructor"]),
                    agent=f"instructor_{p}_{i}",
                    role="instructor",
                    level="event",
                    system=with_notes(INSTRUCTOR.format(p=p, i=i), [(f"node {p}", step.proposals[p].node.output)]),
                    parents=(step.proposals[p].node.id, *_opt(step.previous)),
                    temperature=temp,
                )
                for p, i in edges
            ]
            step.critiques.update(zip(edges, decider.decide_many(requests, workers), strict=True))
        requests = []
        for i in layer:
            preds = dag.preds(i)
            notes, parents = [], []
            for p in preds:
                notes.append((f"node {p}", step.proposals[p].node.output))
                parents.append(step.proposals[p].node.id)
                if (p, i) in step.critiques:
                    notes.append((f"instructor {p}->{i}", step.critiques[(p, i)].node.output))
                    parents.append(step.critiques[(p, i)].node.id)
            system = f"You are node {i} of {GRAPH}. {NODE[min(len(preds), 2)]} {ACT_INSTRUCTIONS[task.mode]}"
            requests.append(
                DecisionRequest(
                    **self._base(transcript, loop, step, acting=True),
                    agent=f"node_{i}",
                    role="merger" if len(preds) > 1 else "solver",
                    account="node",
                    level="agent",
                    system=with_notes(system, notes),
                    parents=(*parents, *_opt(step.previous)),
                    temperature=temp,
                )
            )
        step.proposals.update(zip(layer, decider.decide_many(requests, workers), strict=True))

    # -- shared ------------------------------------------------------------------

    @staticmethod
    def _base(transcript: Transcript, loop: EnvLoop, step: _Step, *, acting: bool, ending: str = "") -> dict[str, Any]:
        """Keywords every decision of a step shares: the environment view, tools, grammar, step."""
        task = transcript.task
        tools = transcript.tools if acting and task.mode == "conversation" else None
        return {
            **transcript.view(step.note if acting else "", acting=acting, ending=ending),
            "tools": tools,
            "action_grammar": acting,
            "step": loop.steps_taken,
            "recall_context": transcript.observation,
        }

    @staticmethod
    def _sink_notes(dag: Dag, step: _Step) -> list[tuple[str, str]]:
        return [(f"node {s}", step.proposals[s].node.output) for s in dag.sinks()]


def _name(i: int, out: int) -> str:
    return "'output'" if i == out else str(i)


def _opt(decision_id: str | None) -> tuple[str, ...]:
    return (decision_id,) if decision_id else ()
