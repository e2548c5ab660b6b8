"""The AgentNet adapter: route the task through the network, execute its parts, evolve.

See the package docstring (`frameworks.agentnet`) for the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import AgentContext, Environment, Framework, Params
from aecg_bench.types import Episode, Level, MemoryItem, Task, Trajectory
from frameworks.agentnet.network import Network, Rates
from frameworks.agentnet.routing import HANDOVER, parse_route, router_prompt
from frameworks.base import (
    ACT_INSTRUCTIONS,
    Decider,
    EnvLoop,
    Transcript,
    action_from_completion,
    unparsable_note,
    with_notes,
)

EXECUTOR = "You are the executor of {agent} in a decentralized network of agents."


class AgentNetParams(Params):
    agents: int = Field(3, ge=1, le=16, description="agents in the network, each with a router and an executor")
    max_hops: int = Field(3, ge=0, description="forwards along one routing path (bounds path length)")
    split: bool = Field(True, description="routers may split the whole task into parts")
    max_subtasks: int = Field(3, ge=2, le=8, description="parts of one split")
    evolve: bool = Field(True, description="abilities and edge weights follow outcomes across tasks")
    learn_from: Literal["reward", "outcome"] = Field(
        "outcome",
        description="outcome: the labelled Outcome (environment or judge, as memory methods see it); "
        "reward: the best reward the environment showed in the trajectory",
    )
    initial_ability: float = Field(0.5, ge=0.0, le=1.0)
    initial_weight: float = Field(0.5, ge=0.0, le=1.0)
    ability_rate: float = Field(0.2, ge=0.0, le=1.0, description="EMA rate of an executor's ability update")
    weight_rate: float = Field(0.2, ge=0.0, le=1.0, description="EMA rate of a used edge's weight update")
    prune_below: float = Field(0.1, ge=0.0, le=1.0, description="edges below this weight are cut")
    experience_pools: bool = Field(
        False, description="AgentNet's own router/executor pools (off when comparing memory methods)"
    )
    pool_size: int = Field(20, ge=1, description="fragments kept per agent and pool")
    pool_k: int = Field(2, ge=1, description="fragments recalled into a router or executor prompt")
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


@dataclass
class _Run:
    """One task's routing and execution state; `record` is stored in the trajectory's metadata."""

    task: Task
    decider: Decider
    loop: EnvLoop
    transcript: Transcript
    record: dict[str, Any] = field(default_factory=dict)
    note: str = ""


class AgentNetFramework(Framework):
    name = "agentnet"
    version = "1"
    Params = AgentNetParams

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.network = Network.initial(self.params.agents, self._rates())

    def _rates(self) -> Rates:
        p = self.params
        return Rates(p.initial_ability, p.initial_weight, p.ability_rate, p.weight_rate, p.prune_below, p.pool_size)

    # -- cross-task state ----------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The evolved network (abilities, weights, pools): JSON, to snapshot beside the memory."""
        return self.network.to_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        expected = [f"agent_{i}" for i in range(self.params.agents)]
        if state.get("agents") != expected:
            raise ValueError(f"AgentNet state is for agents {state.get('agents')}, this network has {expected}")
        self.network = Network.from_dict(state, self._rates())

    def learn(self, task: Task, trajectory: Trajectory, value: float) -> None:
        """Evolve the network from a finished trajectory and its outcome value in [0, 1].

        A pure function of the trajectory's routing record and the value, so
        replaying stored trajectories in stream order rebuilds the state exactly.
        """
        self.network.learn(task.task_type, trajectory.metadata["agentnet"], value, self.params.experience_pools)

    def observe(self, episode: Episode) -> None:
        """Learn from a finished episode; the runner calls it for every rollout, live and on
        resume replay. Under `learn_from=outcome` an unlabelled episode teaches nothing."""
        if not self.params.evolve:
            return
        if self.params.learn_from == "reward":
            value = feedback_value(episode.trajectory)
        else:
            outcome = episode.outcome
            if outcome.success is None:
                return
            value = outcome.value if outcome.value is not None else float(outcome.success)
        self.learn(episode.task, episode.trajectory, min(1.0, max(0.0, value)))

    # -- one task --------------------------------------------------------------

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        traj = ctx.trajectory
        loop = EnvLoop(env, task, traj, ctx, self.params.max_steps)
        run = _Run(task, Decider(task, ctx, traj), loop, Transcript(task, traj, self.params.history_window))
        run.transcript.start(loop.reset())
        entry = self.network.entry(task.task_type)
        run.record = {"entry": entry, "routes": [], "parts": [], "edges_used": [], "invalid_routes": 0}
        traj.metadata["agentnet"] = run.record
        parts = self._route(run, entry, task.instruction, "team", (), [entry], allow_split=self.params.split)
        run.record["parts"] = [{**part, "index": k, "of": len(parts)} for k, part in enumerate(parts)]
        self._execute(run)
        loop.close_out()
        return traj

    def _route(
        self,
        run: _Run,
        agent: str,
        text: str,
        level: Level,
        parents: tuple[str, ...],
        path: list[str],
        allow_split: bool,
    ) -> list[dict[str, Any]]:
        """Parts of `text` and who executes them, from `agent`'s router on; recursion depth <= max_hops."""
        p, task_type = self.params, run.task.task_type
        hops_left = p.max_hops - (len(path) - 1)
        targets = self.network.neighbours(agent, task_type, set(path)) if hops_left > 0 else []
        if not targets and not allow_split:  # nothing to decide: the agent executes
            return [_part(agent, text, parents[0] if parents else None)]
        offered = [(b, self.network.ability(b, task_type), self.network.weights[agent][b]) for b in targets]
        what = "Task" if level == "team" else "Sub-task"
        decision = run.decider.decide(
            agent=agent,
            role="router",
            level=level,
            system=router_prompt(
                agent, task_type, self.network.ability(agent, task_type), offered, allow_split, p.max_subtasks
            ),
            parents=parents,
            step=run.loop.steps_taken,
            recall_context=text,
            action_grammar=False,
            framework_memory=self._pool(agent, "router", run.task, text),
            **run.transcript.view(f"{what} to route: {text}", acting=False),
        )
        route = parse_route(decision.node.output, targets, allow_split, p.max_subtasks)
        run.record["routes"].append(
            {
                "decision": decision.node.id,
                "agent": agent,
                "level": level,
                "task": text,
                "route": route.kind,
                "detail": route.detail,
                "valid": route.valid,
            }
        )
        run.record["invalid_routes"] += int(not route.valid)
        here = (decision.node.id,)
        if route.kind == "forward":
            run.record["edges_used"].append([agent, route.target])
            return self._route(run, route.target, text, level, here, [*path, route.target], allow_split)
        if route.kind == "execute":
            return [_part(agent, text, decision.node.id)]
        parts = [_part(agent, route.parts[0], decision.node.id)]
        taken = {agent}
        for sub in route.parts[1:]:
            free = self.network.neighbours(agent, task_type, taken) or [agent]
            target = free[0]
            taken.add(target)
            if target == agent:
                parts.append(_part(agent, sub, decision.node.id))
                continue
            run.record["edges_used"].append([agent, target])
            parts += self._route(run, target, sub, "event", here, [agent, target], allow_split=False)
        return parts

    def _execute(self, run: _Run) -> None:
        """Each part's executor acts in turn; a part's step budget is an even share of what is left."""
        task, loop, parts = run.task, run.loop, run.record["parts"]
        previous: str | None = None  # the last executor decision so far
        for k, part in enumerate(parts):
            if loop.finished:
                return
            last = k == len(parts) - 1
            budget = loop.max_steps if last else max(1, (loop.max_steps - loop.steps_taken) // (len(parts) - k))
            start, first = loop.steps_taken, True
            while not loop.finished and loop.steps_taken - start < budget:
                env_decision = loop.trajectory.steps[-1].decision_id if loop.trajectory.steps else None
                intermediate = task.mode == "answer" and not last
                decision = run.decider.decide(
                    agent=part["agent"],
                    role="executor",
                    level="agent",
                    system=self._executor_prompt(task, parts, k),
                    parents=tuple(i for i in (part["decision"] if first else None, previous, env_decision) if i),
                    step=loop.steps_taken,
                    recall_context=run.transcript.observation,
                    tools=run.transcript.tools if task.mode == "conversation" else None,
                    action_grammar=not intermediate,
                    framework_memory=self._pool(part["agent"], "executor", task, part["task"]),
                    **run.transcript.view(run.note),
                )
                previous, first = decision.node.id, False
                part["decisions"] += 1
                if intermediate:  # a part's result for the later parts, not an answer yet
                    part["result"] = decision.node.output
                    break
                text = decision.completion.text
                if not last and not decision.completion.tool_calls and text.strip().upper().startswith(HANDOVER):
                    break
                action = action_from_completion(task, decision.completion)
                if action is None:
                    run.note = unparsable_note(task, text)
                    if loop.unparsable(text):
                        return
                    continue
                run.note = ""
                run.decider.attach_action(decision.node, action)
                run.transcript.record(action, loop.act(action, decision.node.id))
            part["steps"] = loop.steps_taken - start

    def _executor_prompt(self, task: Task, parts: list[dict[str, Any]], k: int) -> str:
        part, last = parts[k], k == len(parts) - 1
        lines = [EXECUTOR.format(agent=part["agent"])]
        if len(parts) > 1:
            lines.append(f"The task was split into {len(parts)} parts; yours is part {k + 1}: {part['task']}")
            if not last:
                lines.append(
                    "Reply with your result for this part only."
                    if task.mode == "answer"
                    else f"When your part is done, reply {HANDOVER} instead of an action."
                )
        if last or task.mode != "answer":
            lines.append(ACT_INSTRUCTIONS[task.mode])
        notes = [(p["agent"], p.get("result") or f"worked on part {p['index'] + 1}: {p['task']}") for p in parts[:k]]
        return with_notes(" ".join(lines), notes, "Parts handled before yours")

    def _pool(self, agent: str, pool: str, task: Task, text: str) -> tuple[MemoryItem, ...]:
        if not self.params.experience_pools:
            return ()
        return tuple(self.network.recall(agent, pool, task.task_type, text, self.params.pool_k))


def _part(agent: str, task: str, decision: str | None) -> dict[str, Any]:
    return {"agent": agent, "task": task, "decision": decision, "decisions": 0, "steps": 0}


def feedback_value(trajectory: Trajectory) -> float:
    """The outcome the network learns from: the best reward the environment gave, clipped to [0, 1].

    It is what the agents themselves observed; environments that reward only
    at scoring time (no reward in observations) teach nothing until the runner
    passes the labelled outcome (see the package docstring).
    """
    return max((min(1.0, max(0.0, s.observation.reward)) for s in trajectory.steps), default=0.0)
