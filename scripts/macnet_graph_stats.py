"""MacNet's default random graph against G-Memory's: edge counts and shapes over many draws.

G-Memory (bingreeky/GMemory at 7b581c5, tasks/mas_workflow/macnet/graph.py `gen_graph_mask_info('Random')`
and graph_mas.py `_construct_spatial_connection`) draws a 0/1 mask over every ordered pair of its 3 nodes,
adds the edges row by row and skips one that would close a cycle. Its distribution is computed here exactly,
by enumerating every mask with that rule (a re-implementation for this comparison; it shares no code with
`frameworks.macnet.topology`). Ours is sampled with `build_dag("random", ...)` from seeded rngs, as a run
draws it. The script prints both side by side, the largest difference in percentage points, and the model
calls per environment step under `protocol=chatdev` for each shape and on average.

    python scripts/macnet_graph_stats.py [--draws 100000] [--nodes 3]
"""

from __future__ import annotations

import argparse
import itertools
import random
from collections import Counter

from frameworks.macnet.topology import Dag, build_dag


def gmemory_distribution(n: int) -> dict[tuple[tuple[int, int], ...], float]:
    """Exact probability of each graph (as a canonical shape) under G-Memory's draw on `n` nodes."""
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    out: Counter[tuple[tuple[int, int], ...]] = Counter()
    for bits in itertools.product((0, 1), repeat=len(pairs)):
        edges: list[tuple[int, int]] = []
        for (i, j), bit in zip(pairs, bits, strict=True):
            if bit and not _cyclic([*edges, (i, j)], n):
                edges.append((i, j))
        out[canonical(edges, n)] += 0.5 ** len(pairs)
    return dict(out)


def _cyclic(edges: list[tuple[int, int]], n: int) -> bool:
    indegree = [sum(t == v for _, t in edges) for v in range(n)]
    ready, seen = [v for v in range(n) if indegree[v] == 0], 0
    while ready:
        v = ready.pop()
        seen += 1
        for s, t in edges:
            if s == v:
                indegree[t] -= 1
                if indegree[t] == 0:
                    ready.append(t)
    return seen != n


def canonical(edges: list[tuple[int, int]] | tuple[tuple[int, int], ...], n: int) -> tuple[tuple[int, int], ...]:
    """The graph up to relabelling: the smallest sorted edge list over the node permutations that keep every
    edge running from a lower to a higher index (so the shape is a `Dag` as the framework runs it)."""
    return min(
        tuple(sorted((p[s], p[t]) for s, t in edges))
        for p in itertools.permutations(range(n))
        if all(p[s] < p[t] for s, t in edges)
    )


def chatdev_calls(dag: Dag, aggregate_unit: int = 2) -> int:
    """Model calls per environment step under protocol=chatdev with reviews (frameworks/macnet/framework.py):
    one per source, two per edge and per sink (review and revision; the sinks feed the output node), one merge
    per node (output node included) whose predecessors, at least `aggregate_unit`, all sit in one layer."""
    layers = [*dag.layers(), [dag.n]]
    layer_of = {i: d for d, layer in enumerate(layers) for i in layer}
    preds = {i: dag.preds(i) for i in range(dag.n)} | {dag.n: dag.sinks()}
    sources = sum(1 for i in range(dag.n) if not preds[i])
    merges = sum(1 for ps in preds.values() if len(ps) >= aggregate_unit and len({layer_of[q] for q in ps}) == 1)
    return sources + 2 * (len(dag.edges) + len(dag.sinks())) + merges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args()
    n = args.nodes
    theirs = gmemory_distribution(n)
    ours_counts = Counter(
        canonical(build_dag("random", n, rng=random.Random(f"stats:{k}")).edges, n) for k in range(args.draws)
    )
    ours = {shape: c / args.draws for shape, c in ours_counts.items()}
    shapes = sorted(set(theirs) | set(ours), key=lambda s: (len(s), s))
    print(f"MacNet random graph on {n} nodes: ours ({args.draws:,} draws) vs G-Memory's (exact)")
    print(f"{'shape (edges)':<32}{'ours %':>9}{'G-Memory %':>12}{'diff pp':>9}{'calls/step':>12}")
    for shape in shapes:
        a, b = 100 * ours.get(shape, 0.0), 100 * theirs.get(shape, 0.0)
        calls = chatdev_calls(Dag(n, shape))
        print(f"{list(shape)!s:<32}{a:>9.2f}{b:>12.2f}{a - b:>9.2f}{calls:>12}")
    by_count_ours = Counter[int]()
    by_count_theirs = Counter[int]()
    for shape, p in ours.items():
        by_count_ours[len(shape)] += p
    for shape, p in theirs.items():
        by_count_theirs[len(shape)] += p
    print(f"\n{'edges':<8}{'ours %':>9}{'G-Memory %':>12}")
    for k in sorted(set(by_count_ours) | set(by_count_theirs)):
        print(f"{k:<8}{100 * by_count_ours[k]:>9.2f}{100 * by_count_theirs[k]:>12.2f}")
    mean_ours = sum(len(s) * p for s, p in ours.items())
    mean_theirs = sum(len(s) * p for s, p in theirs.items())
    print(f"mean edges: ours {mean_ours:.3f}, G-Memory {mean_theirs:.3f}")
    worst = max(abs(ours.get(s, 0.0) - theirs.get(s, 0.0)) for s in shapes)
    print(f"largest difference over shapes: {100 * worst:.2f} percentage points")
    calls_ours = sum(chatdev_calls(Dag(n, s)) * p for s, p in ours.items())
    calls_theirs = sum(chatdev_calls(Dag(n, s)) * p for s, p in theirs.items())
    print(f"chatdev calls per step: expected {calls_ours:.2f} (ours), {calls_theirs:.2f} (G-Memory's graphs)")


if __name__ == "__main__":
    main()
