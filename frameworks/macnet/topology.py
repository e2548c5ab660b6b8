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
    random: G-Memory's draw (`random_edges`) from `rng`, so a seed gives the same graph.
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
        edges = random_edges(n, rng, edge_prob)
    else:
        raise ValueError(f"unknown MacNet topology {topology!r}; valid choices: {', '.join(TOPOLOGIES)}")
    if reverse:
        edges = sorted((n - 1 - j, n - 1 - i) for i, j in edges)
    return Dag(n, tuple(edges))


def random_edges(n: int, rng: random.Random, edge_prob: float) -> list[tuple[int, int]]:
    """G-Memory's random graph as a DAG over 0..n-1 (bingreeky/GMemory tasks/mas_workflow/macnet/graph.py
    `gen_graph_mask_info('Random')` and graph_mas.py `_construct_spatial_connection`).

    Every ordered pair i -> j, i != j, row by row, is kept with probability `edge_prob` (G-Memory:
    `random.randint(0, 1)`, i.e. 0.5); an edge that would close a cycle with the edges kept before it is
    skipped. The nodes are then numbered in the order G-Memory's schedule visits them (Kahn's algorithm,
    first in first out), so every edge runs from a lower to a higher index. Nodes are interchangeable
    (one prompt), so the numbering changes no graph, only its labels.
    """
    kept: list[tuple[int, int]] = []
    for i in range(n):
        for j in range(n):
            if i != j and rng.random() < edge_prob and not _reaches(kept, j, i):
                kept.append((i, j))
    indegree = {v: sum(t == v for _, t in kept) for v in range(n)}
    queue, order = [v for v in range(n) if indegree[v] == 0], []
    while queue:
        v = queue.pop(0)
        order.append(v)
        for s, t in kept:
            if s == v:
                indegree[t] -= 1
                if indegree[t] == 0:
                    queue.append(t)
    rank = {v: k for k, v in enumerate(order)}
    return sorted((rank[s], rank[t]) for s, t in kept)


def _reaches(edges: list[tuple[int, int]], start: int, goal: int) -> bool:
    """Whether `goal` can be reached from `start` along `edges`."""
    seen, stack = {start}, [start]
    while stack:
        v = stack.pop()
        if v == goal:
            return True
        for s, t in edges:
            if s == v and t not in seen:
                seen.add(t)
                stack.append(t)
    return False
