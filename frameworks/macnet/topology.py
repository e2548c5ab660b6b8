"""MacNet's graph shapes as directed acyclic graphs over nodes 0..n-1.

Every edge goes from a lower to a higher index, so each graph is acyclic by
construction and node order is a topological order. Layers (nodes at the same
longest-path depth) depend only on earlier layers and may run concurrently.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal, get_args

Topology = Literal["chain", "star", "tree", "full", "layered", "random"]
TOPOLOGIES: tuple[str, ...] = get_args(Topology)


@dataclass(frozen=True)
class Dag:
    n: int
    edges: tuple[tuple[int, int], ...]  # (predecessor, successor), predecessor < successor

    def preds(self, node: int) -> list[int]:
        return [p for p, s in self.edges if s == node]

    def sinks(self) -> list[int]:
        """Nodes without successors: their proposals reach the final decision."""
        has_succ = {p for p, _ in self.edges}
        return [i for i in range(self.n) if i not in has_succ]

    def layers(self) -> list[list[int]]:
        """Nodes grouped by longest-path depth from a source, in index order."""
        depth: dict[int, int] = {}
        for i in range(self.n):  # indices are a topological order
            depth[i] = 1 + max((depth[p] for p in self.preds(i)), default=-1)
        return [[i for i in range(self.n) if depth[i] == d] for d in range(max(depth.values()) + 1)]


def build_dag(
    topology: str, n: int, *, rng: random.Random, width: int = 2, edge_prob: float = 0.5, reverse: bool = False
) -> Dag:
    """The graph of `topology` on `n` nodes.

    chain: 0->1->...; star: hub 0 -> every other node; tree: `width`-ary tree
    rooted at 0; full: every i->j with i<j (MacNet's mesh as a DAG); layered:
    consecutive layers of `width` nodes, fully connected layer to layer;
    random: each i->j (i<j) kept with probability `edge_prob`, drawn from
    `rng` in a fixed pair order (seeded per sample, so reruns get the same graph).
    `reverse` turns every edge around (MacNet's convergent graphs; ChatDev macnet
    generate_graph.py `reverse`), relabelling node k as n-1-k so edges still run
    from lower to higher index.
    """
    if n < 1:
        raise ValueError(f"a MacNet graph needs at least one node, got {n}")
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if topology == "chain":
        edges = [(i, i + 1) for i in range(n - 1)]
    elif topology == "star":
        edges = [(0, i) for i in range(1, n)]
    elif topology == "tree":
        edges = [((i - 1) // width, i) for i in range(1, n)]
    elif topology == "full":
        edges = pairs
    elif topology == "layered":
        edges = [(i, j) for i, j in pairs if j // width == i // width + 1]
    elif topology == "random":
        edges = [pair for pair in pairs if rng.random() < edge_prob]
    else:
        raise ValueError(f"unknown MacNet topology {topology!r}; valid choices: {', '.join(TOPOLOGIES)}")
    if reverse:
        edges = sorted((n - 1 - j, n - 1 - i) for i, j in edges)
    return Dag(n, tuple(edges))
