"""G-Memory's query (task) tier: task texts linked by similarity edges, expanded by hops.

Mirrors TaskLayer in G-Memory's GMemory.py without networkx: an undirected
weighted graph over distinct task texts, kept in insertion order so that hop
expansion and clustering are deterministic.
"""

from __future__ import annotations

from collections import deque
from typing import Any


class TaskGraph:
    def __init__(self) -> None:
        self.adj: dict[str, dict[str, float]] = {}

    def __contains__(self, node: str) -> bool:
        return node in self.adj

    def __len__(self) -> int:
        return len(self.adj)

    def add_node(self, node: str) -> None:
        self.adj.setdefault(node, {})

    def add_edge(self, a: str, b: str, weight: float) -> None:
        if a == b:
            return
        self.add_node(a)
        self.add_node(b)
        self.adj[a][b] = weight
        self.adj[b][a] = weight

    def within_hops(self, sources: list[str], hops: int) -> list[str]:
        """Sources and every node at most `hops` edges away from one of them, sources first."""
        seen: dict[str, None] = {}
        for src in sources:
            if src not in self.adj:
                continue
            seen.setdefault(src, None)
            frontier = deque([(src, 0)])
            visited = {src}
            while frontier:
                node, depth = frontier.popleft()
                if depth >= hops:
                    continue
                for nxt in self.adj[node]:
                    if nxt not in visited:
                        visited.add(nxt)
                        seen.setdefault(nxt, None)
                        frontier.append((nxt, depth + 1))
        return list(seen)

    def components(self) -> list[list[str]]:
        """Connected components in node-insertion order (G-Memory clusters tasks before merging insights)."""
        out, done = [], set()
        for start in self.adj:
            if start in done:
                continue
            comp, queue = [], deque([start])
            done.add(start)
            while queue:
                node = queue.popleft()
                comp.append(node)
                for nxt in self.adj[node]:
                    if nxt not in done:
                        done.add(nxt)
                        queue.append(nxt)
            out.append(comp)
        return out

    def state(self) -> dict[str, Any]:
        """Adjacency with its order (hop expansion and clustering follow it)."""
        return {"adj": [[node, [[b, w] for b, w in nbrs.items()]] for node, nbrs in self.adj.items()]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TaskGraph:
        g = cls()
        g.adj = {node: {b: w for b, w in nbrs} for node, nbrs in state["adj"]}
        return g
