"""AgentNet's cross-task state: abilities and success counts per agent and task type, edge weights, pools.

The state evolves only through `learn`, a pure function of a finished
trajectory's routing record and outcome, applied in stream order; so it is
deterministic, JSON-serialisable (`to_dict`/`from_dict`) and can be rebuilt by
replaying stored trajectories. Every constant's source is in
docs/frameworks/agentnet.md.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from aecg_bench.types import MemoryItem

POOLS = ("router", "executor")


@dataclass(frozen=True)
class Rates:
    """How the state starts and follows outcomes.

    `rule="paper"`: exponential moving averages, AgentNet eq. (2) for edge weights
    (factor `weight_decay`, the paper's alpha) and eq. (10) for abilities (`ability_decay`,
    beta), toward the task's outcome; abilities and weights go up on success and down on
    failure. `rule="code"`: the released code's updates (src/agent.py `update_abilities`:
    +`ability_gain` on success, capped at 2.0, no change on failure; src/agentgraph.py
    `update_edge_weight`: x1.1 on success, x0.9 on failure, clipped to [0.1, 2.0]).
    """

    initial_abilities: tuple[float, ...] = (0.6, 0.6, 0.6)
    initial_weight: float = 1.0
    rule: Literal["paper", "code"] = "paper"
    ability_decay: float = 0.9
    weight_decay: float = 0.9
    ability_gain: float = 0.1
    prune_at: float = 0.3
    min_forward_ability: float = 0.5
    pool_size: int = 40


@dataclass
class Network:
    agents: list[str]
    rates: Rates
    abilities: dict[str, dict[str, float]] = field(default_factory=dict)  # agent -> task type -> ability
    counts: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # agent -> type -> [executed, succeeded]
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # source -> target -> weight (live edges)
    pools: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # agent -> pool -> fragments
    tasks_seen: int = 0
    fragments_added: int = 0  # sequence number of pool fragments (orders them by age)

    @classmethod
    def initial(cls, n: int, rates: Rates) -> Network:
        """A complete graph with uniform weights (AgentNet Fig. 10; agentgraph.py `graph_type: complete`)."""
        agents = [f"agent_{i}" for i in range(n)]
        weights = {a: {b: rates.initial_weight for b in agents if b != a} for a in agents}
        return cls(agents, rates, {a: {} for a in agents}, {a: {} for a in agents}, weights)

    def __post_init__(self) -> None:
        for a in self.agents:
            self.pools.setdefault(a, {})
            for p in POOLS:
                self.pools[a].setdefault(p, [])

    # -- reading -------------------------------------------------------------

    def ability(self, agent: str, task_type: str) -> float:
        start = self.rates.initial_abilities[self.agents.index(agent) % len(self.rates.initial_abilities)]
        return self.abilities[agent].get(task_type, start)

    def success_rate(self, agent: str, task_type: str) -> float:
        done, ok = self.counts[agent].get(task_type, [0, 0])
        return ok / done if done else 0.0

    def entry(self, task_type: str, rng: random.Random) -> str:
        """The entry agent: the most able on the task type, ties broken at random
        (paper eq. 7; agentgraph.py `select_an_agent` uses random.choice among the best)."""
        best = max(self.ability(a, task_type) for a in self.agents)
        return rng.choice([a for a in self.agents if self.ability(a, task_type) == best])

    def neighbours(self, agent: str, exclude: set[str]) -> list[str]:
        """Agents `agent` still has an edge to, not in `exclude`, in index order."""
        return [b for b in self.agents if b in self.weights[agent] and b not in exclude]

    def redirect(
        self, agent: str, named: str, task_type: str, exclude: set[str], rng: random.Random
    ) -> tuple[str, str]:
        """The agent a task goes to when `agent`'s router names `named`, and how it was chosen (src/agent.py
        `router_decide_action`, `router_decide_next_agent_id`, `find_best_alternative_agent`):

        - `named`: the named agent, if it is a neighbour off `exclude` with ability >= `min_forward_ability`;
        - `best`: else the best such neighbour by 0.4 x ability + 0.2 x success rate (the code's load and
          connection terms are constant here);
        - `random`: else, no neighbour being able enough, a neighbour off `exclude` drawn at random (the code's
          `random.choice` over the neighbours; here from the sample's rng).

        Callers offer a forward or a hand-off only while such a neighbour exists."""
        neighbours = self.neighbours(agent, exclude)
        if not neighbours:
            raise ValueError(f"{agent} has no neighbour off {sorted(exclude)} to pass the task to")
        able = [b for b in neighbours if self.ability(b, task_type) >= self.rates.min_forward_ability]
        if named in able:
            return named, "named"
        if able:
            best = max(
                able,
                key=lambda b: (
                    0.4 * self.ability(b, task_type) + 0.2 * self.success_rate(b, task_type),
                    -self.agents.index(b),
                ),
            )
            return best, "best"
        return rng.choice(neighbours), "random"

    def recall(self, agent: str, pool: str, task_type: str, text: str, k: int) -> list[MemoryItem]:
        """The agent's k most relevant fragments: same task type first, then word overlap, then newest."""
        words = _words(text)
        fragments = self.pools[agent][pool]
        ranked = sorted(
            range(len(fragments)),
            key=lambda i: (
                fragments[i]["task_type"] != task_type,
                -len(words & _words(fragments[i]["text"])),
                -fragments[i]["seq"],
            ),
        )
        return [
            MemoryItem(
                id=f"agentnet:{agent}:{pool}:{fragments[i]['seq']}",
                text=fragments[i]["text"],
                kind=f"agentnet-{pool}-experience",
            )
            for i in ranked[:k]
        ]

    # -- learning ------------------------------------------------------------

    def learn(self, task_type: str, record: dict[str, Any], value: float, pools: bool) -> None:
        """Update every executing agent's ability and every used edge's weight from the outcome `value` in [0, 1]
        (experiment.py `update_agent_graph`: per execution and per routing decision that named a next agent);
        then cut edges at or below `prune_at` (paper eq. 3)."""
        r, success = self.rates, value >= 0.5
        for ex in record["executions"]:
            if not ex["decisions"]:
                continue
            agent = ex["agent"]
            done, ok = self.counts[agent].get(task_type, [0, 0])
            self.counts[agent][task_type] = [done + 1, ok + int(success)]
            old = self.ability(agent, task_type)
            if r.rule == "paper":
                self.abilities[agent][task_type] = r.ability_decay * old + (1 - r.ability_decay) * value
            else:
                self.abilities[agent][task_type] = min(2.0, old + r.ability_gain) if success else old
        for source, target in record["edges_used"]:
            if target not in self.weights[source]:
                continue
            old = self.weights[source][target]
            if r.rule == "paper":
                new = r.weight_decay * old + (1 - r.weight_decay) * value
            else:
                new = max(0.1, min(2.0, old * (1.1 if success else 0.9)))
            if new <= r.prune_at:
                del self.weights[source][target]
            else:
                self.weights[source][target] = new
        if pools:
            self._remember(task_type, record, value)
        self.tasks_seen += 1

    def _remember(self, task_type: str, record: dict[str, Any], value: float) -> None:
        for route in record["routes"]:
            text = f"{route['task'][:300]} -> {route['route']} {route.get('target') or ''}".strip()
            self._add(route["agent"], "router", task_type, f"{text} (outcome {value:.2f})", value)
        for ex in record["executions"]:
            if ex["decisions"]:
                text = f"{ex['task'][:300]} -> {ex['steps']} steps (outcome {value:.2f})"
                self._add(ex["agent"], "executor", task_type, text, value)

    def _add(self, agent: str, pool: str, task_type: str, text: str, value: float) -> None:
        """Append a fragment; a full pool drops its least useful fragment (lowest outcome, then oldest)."""
        fragments = self.pools[agent][pool]
        self.fragments_added += 1
        fragments.append({"seq": self.fragments_added, "task_type": task_type, "text": text, "value": value})
        while len(fragments) > self.rates.pool_size:
            fragments.remove(min(fragments, key=lambda f: (f["value"], f["seq"])))

    # -- persistence ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": list(self.agents),
            "abilities": {a: dict(v) for a, v in self.abilities.items()},
            "counts": {a: {t: list(c) for t, c in v.items()} for a, v in self.counts.items()},
            "weights": {a: dict(v) for a, v in self.weights.items()},
            "pools": {a: {p: [dict(f) for f in fs] for p, fs in v.items()} for a, v in self.pools.items()},
            "tasks_seen": self.tasks_seen,
            "fragments_added": self.fragments_added,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any], rates: Rates) -> Network:
        return cls(
            list(state["agents"]),
            rates,
            {a: dict(v) for a, v in state["abilities"].items()},
            {a: {t: list(c) for t, c in v.items()} for a, v in state.get("counts", {}).items()}
            or {a: {} for a in state["agents"]},
            {a: dict(v) for a, v in state["weights"].items()},
            {a: {p: [dict(f) for f in fs] for p, fs in v.items()} for a, v in state["pools"].items()},
            int(state["tasks_seen"]),
            int(state["fragments_added"]),
        )


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))
