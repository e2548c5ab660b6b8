"""The MacNet adapter: node agents on a DAG, instructors on its edges, a final decision per step.

See the package docstring (`frameworks.macnet`) for the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    action_from_completion,
    unparsable_note,
    with_notes,
)
from frameworks.macnet.topology import Dag, Topology, build_dag

GRAPH = "a team of agents arranged as a directed acyclic graph"
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
    topology: Topology = Field("layered", description="chain | star | tree | full | layered | random")
    nodes: int = Field(4, ge=1, le=32, description="node agents in the graph (the final decision is extra)")
    width: int = Field(2, ge=1, description="layer width (layered) and branching factor (tree)")
    edge_prob: float = Field(0.5, ge=0.0, le=1.0, description="edge probability of the random topology")
    instructors: bool = Field(True, description="an instructor critiques each edge's proposal for its successor")
    max_workers: int = Field(4, ge=1, description="threads for the nodes (and instructors) of one layer")
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


@dataclass
class _Step:
    """The decisions of one environment step, by node and by edge."""

    previous: str | None  # decision whose action produced the current observation
    note: str
    proposals: dict[int, Decision]
    critiques: dict[tuple[int, int], Decision]


class MacNetFramework(Framework):
    name = "macnet"
    version = "1"
    Params = MacNetParams

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        p = self.params
        traj = ctx.trajectory
        dag = build_dag(p.topology, p.nodes, rng=ctx.rng, width=p.width, edge_prob=p.edge_prob)
        traj.metadata["macnet"] = {
            "topology": p.topology,
            "nodes": dag.n,
            "edges": [list(e) for e in dag.edges],
            "layers": dag.layers(),
            "sinks": dag.sinks(),
        }
        decider = Decider(task, ctx, traj)
        loop = EnvLoop(env, task, traj, ctx, p.max_steps)
        transcript = Transcript(task, traj, p.history_window)
        transcript.start(loop.reset())
        note = ""
        while not loop.finished:
            step = _Step(traj.steps[-1].decision_id if traj.steps else None, note, {}, {})
            for layer in dag.layers():
                self._layer(decider, transcript, loop, dag, layer, step)
            final = decider.decide(
                **self._base(task, transcript, loop, step, acting=True),
                agent="final",
                role="decider",
                level="team",
                system=with_notes(f"{FINAL} {ACT_INSTRUCTIONS[task.mode]}", self._sink_notes(dag, step)),
                parents=(*(step.proposals[s].node.id for s in dag.sinks()), *_opt(step.previous)),
            )
            action = action_from_completion(task, final.completion)
            if action is None:
                note = unparsable_note(task, final.completion.text)
                if loop.unparsable(final.completion.text):
                    break
                continue
            note = ""
            decider.attach_action(final.node, action)
            transcript.record(action, loop.act(action, final.node.id))
        loop.close_out()
        return traj

    def _layer(
        self, decider: Decider, transcript: Transcript, loop: EnvLoop, dag: Dag, layer: list[int], step: _Step
    ) -> None:
        """Instructors of the layer's in-edges, then the layer's nodes; each group concurrently."""
        task, workers = transcript.task, self.params.max_workers
        if self.params.instructors:
            edges = [(p, i) for i in layer for p in dag.preds(i)]
            requests = [
                DecisionRequest(
                    **self._base(task, transcript, loop, step, acting=False, ending=ENDINGS["instructor"]),
                    agent=f"instructor_{p}_{i}",
                    role="instructor",
                    level="event",
                    system=with_notes(INSTRUCTOR.format(p=p, i=i), [(f"node {p}", step.proposals[p].node.output)]),
                    parents=(step.proposals[p].node.id, *_opt(step.previous)),
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
                    **self._base(task, transcript, loop, step, acting=True),
                    agent=f"node_{i}",
                    role="merger" if len(preds) > 1 else "solver",
                    account="node",
                    level="agent",
                    system=with_notes(system, notes),
                    parents=(*parents, *_opt(step.previous)),
                )
            )
        step.proposals.update(zip(layer, decider.decide_many(requests, workers), strict=True))

    @staticmethod
    def _base(
        task: Task, transcript: Transcript, loop: EnvLoop, step: _Step, *, acting: bool, ending: str = ""
    ) -> dict[str, Any]:
        """Keywords every decision of a step shares: the environment view, tools, grammar, step."""
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


def _opt(decision_id: str | None) -> tuple[str, ...]:
    return (decision_id,) if decision_id else ()
