"""The AgentNet adapter: route the task through the network, execute its parts, evolve.

See the package docstring (`frameworks.agentnet`) for the spec.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from aecg_bench.contracts import AgentContext, Environment, Framework, Params
from aecg_bench.types import Episode, Level, MemoryItem, Task, Trajectory
from frameworks.agentnet.network import Network, Rates
from frameworks.agentnet.routing import HANDOVER, Route, grammar, read_route, router_prompt, schema
from frameworks.base import (
    ACT_INSTRUCTIONS,
    ENDINGS,
    Decider,
    Decision,
    EnvLoop,
    Transcript,
    unreadable_note,
    with_notes,
)

EXECUTOR = (
    "You are the executor of {agent} in a decentralized network of agents. Based on the task and its "
    "progress, execute your part and contribute toward the system's main objective."
)


class AgentNetParams(Params):
    agents: int = Field(3, ge=1, le=16, description="agents in the network, each with a router and an executor")
    max_hops: int = Field(
        3, ge=0, description="forwards before an agent must execute or split (forward_path_max_length)"
    )
    max_executions: int = Field(5, ge=1, description="executions (split parts) along one task's relay")
    split: bool = Field(True, description="routers may split: do a part, then pass the rest on")
    evolve: bool = Field(True, description="abilities and edge weights follow outcomes across tasks")
    rule: Literal["paper", "code"] = Field(
        "paper", description="paper: moving averages (eqs. 2, 10); code: the released code's +0.1 / x1.1 / x0.9"
    )
    learn_from: Literal["reward", "outcome"] = Field(
        "outcome",
        description="outcome: the labelled Outcome (environment or judge, as memory methods see it); "
        "reward: the best reward the environment showed in the trajectory",
    )
    initial_ability: float = Field(0.6, ge=0.0, le=2.0, description="every agent's starting ability (identical start)")
    initial_abilities: list[float] | None = Field(
        None, description="differentiated start: one starting ability per agent (overrides initial_ability)"
    )
    models: list[str] | None = Field(
        None, description="model label per agent (LLM heterogeneity); default: the run's agent model for all"
    )
    initial_weight: float = Field(1.0, ge=0.0, le=2.0)
    ability_decay: float = Field(0.9, ge=0.0, le=1.0, description="paper rule: beta of eq. (10)")
    weight_decay: float = Field(0.9, ge=0.0, le=1.0, description="paper rule: alpha of eq. (2)")
    ability_gain: float = Field(0.1, ge=0.0, description="code rule: ability gained per successful execution")
    prune_at: float = Field(0.3, ge=0.0, description="edges at or below this weight are cut")
    min_forward_ability: float = Field(
        0.5, ge=0.0, description="a named target needs this ability, else the best such neighbour (else a random one)"
    )
    experience_pools: bool = Field(
        False, description="AgentNet's own router/executor pools (off: No-Memory keeps no cross-task memory)"
    )
    pool_size: int = Field(40, ge=1, description="fragments kept per agent and pool")
    pool_k: int = Field(3, ge=1, description="fragments recalled into a router or executor prompt")
    history_window: int = Field(8, ge=0, description="recent steps shown in each step prompt")
    max_steps: int | None = Field(None, ge=1, description="cap below the task's own step limit")


@dataclass
class _Run:
    """One task's relay state; `record` is stored in the trajectory's metadata."""

    task: Task
    decider: Decider
    loop: EnvLoop
    transcript: Transcript
    record: dict[str, Any] = field(default_factory=dict)
    progress: list[tuple[str, str]] = field(default_factory=list)  # (agent, result of its part)
    pending: Decision | None = None  # answer tasks: the latest part's result, submitted when the relay ends


class AgentNetFramework(Framework):
    name = "agentnet"
    version = "3"
    Params = AgentNetParams

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.network = Network.initial(self.params.agents, self._rates())

    def _rates(self) -> Rates:
        p = self.params
        starts = tuple(p.initial_abilities) if p.initial_abilities else (p.initial_ability,)
        return Rates(
            starts,
            p.initial_weight,
            p.rule,
            p.ability_decay,
            p.weight_decay,
            p.ability_gain,
            p.prune_at,
            p.min_forward_ability,
            p.pool_size,
        )

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
        resume replay. Under `learn_from=outcome` an unlabelled episode teaches nothing; under
        `learn_from=reward` only an episode labelled by the environment does (otherwise the runner
        withholds the rewards, which may be computed from gold, and their zeros would read as failures)."""
        if not self.params.evolve:
            return
        if self.params.learn_from == "reward":
            if episode.outcome.source != "environment":
                return
            value = feedback_value(episode.trajectory)
        else:
            outcome = episode.outcome
            if outcome.success is None:
                return
            value = outcome.value if outcome.value is not None else float(outcome.success)
        self.learn(episode.task, episode.trajectory, min(1.0, max(0.0, value)))

    # -- one task --------------------------------------------------------------

    def randomness(self) -> list[str]:
        return [
            "entry agent among the agents tied for the best ability",
            "forward or hand-off target when no neighbour is able enough (a random neighbour)",
        ]

    def run(self, task: Task, env: Environment, ctx: AgentContext) -> Trajectory:
        """The relay (AgentNet experiment.py `solve_a_single_task`): the holder's router forwards,
        executes or splits; after a split part its router names the next agent or declares completion."""
        p, net, task_type = self.params, self.network, task.task_type
        traj = ctx.trajectory
        loop = EnvLoop(env, task, traj, ctx, p.max_steps)
        run = _Run(task, Decider(task, ctx, traj), loop, Transcript(task, traj, p.history_window))
        first = loop.reset()
        run.transcript.start(first)
        holder = net.entry(task_type, ctx.rng)
        run.record = {
            "entry": holder,
            "abilities": {a: round(net.ability(a, task_type), 6) for a in net.agents},  # as this task found them
            "routes": [],
            "executions": [],
            "edges_used": [],
            "unparsed_routes": 0,
            "completes_unfinished": 0,
        }
        traj.metadata["agentnet"] = run.record
        # the task to route: its instruction; in a conversation, whose instruction is the standing policy (in
        # every system message), the customer's opening request
        what = first.text if task.mode == "conversation" else task.instruction
        hops, path, parent, level = p.max_hops, [holder], None, "team"
        while not loop.finished:
            can_forward = hops > 0 and bool(net.neighbours(holder, set(path)))
            can_split = (
                p.split and len(run.record["executions"]) + 1 < p.max_executions and bool(net.neighbours(holder, set()))
            )
            offered = ("execute", *(("forward",) if can_forward else ()), *(("split",) if can_split else ()))
            if offered == ("execute",):  # nothing to decide: the holder executes without a router call
                route = Route("execute")
            else:
                route, parent = self._ask(run, holder, level, offered, parent, what, set(path))
            if route is None:  # unreadable until the bound on unparsable outputs ended the sample
                break
            if route.kind == "forward":
                holder = self._pass(run, holder, route.target, set(path), ctx.rng)
                hops -= 1
                path.append(holder)
                continue
            last = route.kind != "split"
            parent = self._execute(run, holder, route.text if not last else what, parent, last)
            if last or loop.finished:
                break
            nxt, parent = self._ask(run, holder, "event", ("complete", "incomplete"), parent, what, {holder})
            if nxt is None:
                break
            if nxt.kind == "complete":
                if task.mode != "answer":  # the environment still runs: the holder finishes the task
                    run.record["completes_unfinished"] += 1
                    parent = self._execute(run, holder, what, parent, last=True)
                break
            holder = self._pass(run, holder, nxt.target, {holder}, ctx.rng)
            hops, path, level, what = p.max_hops, [holder], "event", nxt.text or what
        if run.pending is not None and not loop.finished:  # answer task: the relay's latest result is the answer
            self._act(run, run.pending)
        loop.close_out()
        return traj

    def _pass(self, run: _Run, holder: str, named: str, exclude: set[str], rng: random.Random) -> str:
        """The agent the task goes to when `holder`'s router names `named` (forward or incomplete); the
        choice and how it was made are recorded on the route."""
        target, how = self.network.redirect(holder, named, run.task.task_type, exclude, rng)
        run.record["routes"][-1].update({"to": target, "chosen": how})
        run.record["edges_used"].append([holder, target])
        return target

    def _ask(
        self,
        run: _Run,
        agent: str,
        level: Level,
        offered: tuple[str, ...],
        parent: str | None,
        what: str,
        exclude: set[str],
    ) -> tuple[Route | None, str | None]:
        """One router decision with its own grammar. An unreadable reply is recorded as `unparsed` and the router
        is asked again, as AgentNet's loop does, each time counted toward the bound on consecutive unparsable
        outputs (`protocol.max_invalid_actions`); at the bound the sample ends as model_error and the route is None."""
        net, task_type = self.network, run.task.task_type
        shown = [
            (b, net.ability(b, task_type), net.success_rate(b, task_type), net.weights[agent][b])
            for b in net.neighbours(agent, exclude)
        ]
        own = (net.ability(agent, task_type), net.success_rate(agent, task_type))
        system = router_prompt(agent, task_type, own, shown, offered, run.progress)
        label = "Task" if level == "team" else "Remaining task"
        note, attempt = "", 0
        while True:
            decision = run.decider.decide(
                agent=agent,
                role="router",
                level=level,
                system=system,
                parents=tuple(i for i in (parent,) if i),
                step=run.loop.steps_taken,
                recall_context=what,
                grammar=grammar(offered, [b for b, *_ in shown]),
                schema=schema(offered, [b for b, *_ in shown]),
                action_grammar=False,
                model=self._model(agent),
                framework_memory=self._pool(agent, "router", run.task, what),
                **run.transcript.view(f"{label} to route: {what}{note}", acting=False, ending=ENDINGS["router"]),
            )
            parent = decision.node.id
            route = read_route(decision.node.output, offered, bool(decision.completion.structured))
            run.record["routes"].append(
                {
                    "decision": decision.node.id,
                    "agent": agent,
                    "level": level,
                    "task": what,
                    "offered": list(offered),
                    "route": route.kind,
                    "target": route.target,
                    "attempt": attempt,
                }
            )
            if route.kind != "unparsed":
                run.loop.readable()
                return route, parent
            run.record["unparsed_routes"] += 1
            if run.loop.unparsable(decision.node.output, action=False):
                return None, parent
            note, attempt = f"\n\n{unreadable_note(decision.node.output)}", attempt + 1

    def _execute(self, run: _Run, agent: str, part: str, parent: str | None, last: bool) -> str | None:
        """`agent`'s executor works on `part`: to the end of the task (`last`), or within an even share of
        the remaining steps until it hands over. Returns the part's last decision id."""
        task, loop, p = run.task, run.loop, self.params
        done = len(run.record["executions"])
        ex = {"agent": agent, "task": part, "last": last, "decisions": 0, "steps": 0}
        run.record["executions"].append(ex)
        left = loop.max_steps - loop.steps_taken
        budget = left if last else max(1, left // max(1, p.max_executions - done))
        start, previous = loop.steps_taken, parent
        while not loop.finished and loop.steps_taken - start < budget:
            env_decision = loop.trajectory.steps[-1].decision_id if loop.trajectory.steps else None
            intermediate = task.mode == "answer" and not last
            handing_over = not last and task.mode == "steps" and bool(task.action_grammar)
            decision = run.decider.decide(
                agent=agent,
                role="executor",
                level="agent",
                system=self._executor_prompt(task, agent, part, last, run.progress),
                parents=tuple(dict.fromkeys(i for i in (previous, env_decision) if i)),
                step=loop.steps_taken,
                recall_context=run.transcript.observation,
                tools=run.transcript.tools if task.mode == "conversation" else None,
                model=self._model(agent),
                framework_memory=self._pool(agent, "executor", task, part),
                grammar=handover_grammar(task.action_grammar) if handing_over else None,
                **run.transcript.view(loop.note),
            )
            previous = decision.node.id
            ex["decisions"] += 1
            text = decision.completion.text
            if intermediate:  # an answer task's part result: shown to the next agents, submitted if it is the last
                run.pending = decision
                run.progress.append((agent, text))
                break
            if not last and not decision.completion.tool_calls and text.strip().upper().startswith(HANDOVER):
                loop.readable()
                run.progress.append((agent, f"did: {part}"))
                break
            if not self._act(run, decision) and loop.finished:
                break
        else:
            if not last:
                run.progress.append((agent, f"worked on: {part}"))
        ex["steps"] = loop.steps_taken - start
        return previous

    def _act(self, run: _Run, decision: Decision) -> bool:
        """Step the environment with the decision's action; False when the reply gave none."""
        if not run.loop.take(run.decider, run.transcript, decision):
            return False
        run.pending = None
        return True

    def _executor_prompt(self, task: Task, agent: str, part: str, last: bool, progress: list[tuple[str, str]]) -> str:
        """After AgentNet config/setting.py EXECUTOR_SYSTEM_PROMPT / SPLIT_EXECUTOR_SYSTEM_PROMPT."""
        lines = [EXECUTOR.format(agent=agent)]
        if not last:
            lines.append(f"Your part of the task: {part}")
            lines.append(
                "Reply with your result for this part; it need not be the final answer."
                if task.mode == "answer"
                else f"When your part is done, reply {HANDOVER} instead of an action."
            )
        if last or task.mode != "answer":
            lines.append(ACT_INSTRUCTIONS[task.mode])
        return with_notes(" ".join(lines), progress, "Completed parts and results")

    def _model(self, agent: str) -> str | None:
        models = self.params.models
        return models[self.network.agents.index(agent) % len(models)] if models else None

    def _pool(self, agent: str, pool: str, task: Task, text: str) -> tuple[MemoryItem, ...]:
        if not self.params.experience_pools:
            return ()
        return tuple(self.network.recall(agent, pool, task.task_type, text, self.params.pool_k))


def feedback_value(trajectory: Trajectory) -> float:
    """The outcome the network learns from: the best reward the environment gave, clipped to [0, 1].

    It is what the agents themselves observed; environments that reward only
    at scoring time (no reward in observations) teach nothing until the runner
    passes the labelled outcome (see the package docstring).
    """
    return max((min(1.0, max(0.0, s.observation.reward)) for s in trajectory.steps), default=0.0)


def handover_grammar(action_grammar: str) -> str:
    """The task's action grammar (GBNF) with `SUBTASK DONE` as one more reply, for an executor working on a split
    part: its root rule is renamed and offered beside the hand-over, so grammar-constrained models can hand over."""
    renamed = re.sub(r'("(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\])|\broot\b', _rename_root, action_grammar)
    return f'root ::= "{HANDOVER}" | agentnet-action\n{renamed}'


def _rename_root(m: re.Match[str]) -> str:
    return m.group(1) or "agentnet-action"  # quoted literals and character classes stay as they are
