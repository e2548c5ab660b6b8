"""AgentNet's cross-task state: per-agent abilities by task type, edge weights, experience pools.

The state evolves only through `learn`, a pure function of a finished
trajectory's routing record and feedback, applied in stream order; so it is
deterministic, JSON-serialisable (`to_dict`/`from_dict`) and can be rebuilt by
replaying stored trajectories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from aecg_bench.types import MemoryItem

POOLS = ("router", "executor")


@dataclass(frozen=True)
class Rates:
    """How fast the state follows outcomes (exponential moving averages) and when edges are cut."""

    initial_ability: float = 0.5
    initial_weight: float = 0.5
    ability_rate: float = 0.2
    weight_rate: float = 0.2
    prune_below: float = 0.1
    pool_size: int = 20


@dataclass
class Network:
    agents: list[str]
    rates: Rates
    abilities: dict[str, dict[str, float]] = field(default_factory=dict)  # agent -> task type -> ability
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # source -> target -> weight
    pools: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # agent -> pool -> fragments
    tasks_seen: int = 0
    fragments_added: int = 0  # sequence number of pool fragments (orders them by age)

    @classmethod
    def initial(cls, n: int, rates: Rates) -> Network:
        agents = [f"agent_{i}" for i in range(n)]
        weights = {a: {b: rates.initial_weight for b in agents if b != a} for a in agents}
        return cls(agents, rates, {a: {} for a in agents}, weights, {a: {p: [] for p in POOLS} for a in agents})

    # -- reading -------------------------------------------------------------

    def ability(self, agent: str, task_type: str) -> float:
        return self.abilities[agent].get(task_type, self.rates.initial_ability)

    def entry(self, task_type: str) -> str:
        """The agent a task enters at: the most able for its type (ties: lowest index)."""
        return max(self.agents, key=lambda a: (self.ability(a, task_type), -self.agents.index(a)))

    def neighbours(self, agent: str, task_type: str, exclude: set[str]) -> list[str]:
        """Connected agents not in `exclude`, best first by connection strength x ability."""
        targets = [b for b in self.weights[agent] if b not in exclude]
        return sorted(
            targets, key=lambda b: (-self.weights[agent][b] * self.ability(b, task_type), self.agents.index(b))
        )

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
        """Move executors' abilities and used edges' weights toward the outcome `value` in [0, 1]."""
        r = self.rates
        for agent in dict.fromkeys(a["agent"] for a in record["parts"] if a["decisions"]):
            old = self.ability(agent, task_type)
            self.abilities[agent][task_type] = (1 - r.ability_rate) * old + r.ability_rate * value
        for source, target in record["edges_used"]:
            if target in self.weights[source]:
                old = self.weights[source][target]
                self.weights[source][target] = (1 - r.weight_rate) * old + r.weight_rate * value
        self._prune()
        if pools:
            self._remember(task_type, record, value)
        self.tasks_seen += 1

    def _prune(self) -> None:
        """Cut edges whose weight fell below the threshold; every agent keeps its strongest edge."""
        for source, out in self.weights.items():
            if not out:
                continue
            keep = max(out, key=lambda b: (out[b], -self.agents.index(b)))
            self.weights[source] = {b: w for b, w in out.items() if w >= self.rates.prune_below or b == keep}

    def _remember(self, task_type: str, record: dict[str, Any], value: float) -> None:
        for route in record["routes"]:
            text = f"{route['task'][:300]} -> {route['route']} {route.get('detail', '')}".strip()
            self._add(route["agent"], "router", task_type, f"{text} (outcome {value:.2f})", value)
        for part in record["parts"]:
            if part["decisions"]:
                text = f"{part['task'][:300]} -> {part['steps']} steps (outcome {value:.2f})"
                self._add(part["agent"], "executor", task_type, text, value)

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
            {a: dict(v) for a, v in state["weights"].items()},
            {a: {p: [dict(f) for f in fs] for p, fs in v.items()} for a, v in state["pools"].items()},
            int(state["tasks_seen"]),
            int(state["fragments_added"]),
        )


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))
