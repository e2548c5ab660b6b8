"""Structural exposure of a skill in a decision graph (AECG sec. 3.4.1, B.3).

In one trajectory, the decisions that recalled the skill are the sources.
Every decision reachable from a source along parent -> child edges is
potentially influenced by it; a decision at hop distance h (shortest, over
all sources) counts discount**h, the sources themselves count 1, and each
decision counts once however many paths converge on it:

    reach = sum over v in reachable(sources) of discount ** dist(sources, v)

A skill's exposure is the sum of its reach over the most recent decision
graphs in which it was used (`triage.exposure_window` of them), so it grows
with both downstream reach and how often the skill is used. It is a
structural proxy for potential propagation, not a causal effect estimate.
Edges to decisions that are not in the graph are ignored; cycles (which a
well-formed decision graph does not have) cannot loop because each node is
visited once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from aecg_bench.types import DecisionNode


def children_map(decisions: Sequence[DecisionNode]) -> dict[str, list[str]]:
    ids = {d.id for d in decisions}
    children: dict[str, list[str]] = {d.id: [] for d in decisions}
    for d in decisions:
        for p in d.parents:
            if p in ids and p != d.id:
                children[p].append(d.id)
    return children


def distances(children: dict[str, list[str]], sources: Iterable[str]) -> dict[str, int]:
    """Shortest hop distance from any source to every reachable decision (multi-source BFS)."""
    dist: dict[str, int] = {}
    queue: deque[str] = deque()
    for s in sources:
        if s in children and s not in dist:
            dist[s] = 0
            queue.append(s)
    while queue:
        node = queue.popleft()
        for child in children[node]:
            if child not in dist:
                dist[child] = dist[node] + 1
                queue.append(child)
    return dist


def downstream_reach(decisions: Sequence[DecisionNode], sources: Iterable[str], discount: float) -> float:
    dist = distances(children_map(decisions), sources)
    return float(sum(discount**h for h in dist.values()))
