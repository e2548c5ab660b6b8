"""A small greedy best-first planner (FF heuristic) for testing the PDDL environment.

Test-only: it plans on the engine's ground actions, and the tests then replay
each plan through the environment's TEXT interface (rendered words in, parsed
actions out), so the rendering, the parser and the transition function are
checked together. Bounded by `max_expansions`.
"""

from __future__ import annotations

import heapq
import itertools

from aecg_bench.benchmarks.pddl.engine import GroundAction, State, World

INF = float("inf")


class HFF:
    """FF's relaxed-plan heuristic: h_add costs by Knuth's generalised Dijkstra, then the number of
    distinct best supporters needed for the goal."""

    def __init__(self, world: World) -> None:
        self.actions = world.actions
        self.goal = world.goal
        self.pre_of: dict[tuple[str, ...], list[int]] = {}
        for i, a in enumerate(self.actions):
            for p in a.pre:
                self.pre_of.setdefault(p, []).append(i)
        self.free = [i for i, a in enumerate(self.actions) if not a.pre]

    def __call__(self, state: State) -> tuple[float, set[int]]:
        """(relaxed plan length, indices of the relaxed plan's actions applicable in `state`)."""
        unsat = [len(a.pre) for a in self.actions]
        acc = [0.0] * len(self.actions)
        cost: dict[tuple[str, ...], float] = {}
        support: dict[tuple[str, ...], int] = {}
        heap: list[tuple[float, int, tuple[str, ...]]] = [(0.0, -1, p) for p in state]
        heap += [(1.0, i, q) for i in self.free for q in self.actions[i].add]
        heapq.heapify(heap)
        while heap:
            c, via, atom = heapq.heappop(heap)
            if atom in cost:
                continue
            cost[atom] = c
            support[atom] = via
            for i in self.pre_of.get(atom, ()):
                acc[i] += c
                unsat[i] -= 1
                if unsat[i] == 0:
                    for q in self.actions[i].add:
                        if q not in cost:
                            heapq.heappush(heap, (acc[i] + 1.0, i, q))
        if any(g not in cost for g in self.goal):
            return INF, set()
        chosen: set[int] = set()
        todo = [g for g in self.goal]
        while todo:
            i = support[todo.pop()]
            if i >= 0 and i not in chosen:
                chosen.add(i)
                todo.extend(self.actions[i].pre)
        return float(len(chosen)), {i for i in chosen if self.actions[i].pre <= state}


def plan(world: World, max_expansions: int = 20_000) -> list[GroundAction] | None:
    """A plan from the initial state to the goal, or None if the search budget runs out.

    Greedy best-first search with FF's heuristic and helpful actions: successors
    reached by an action of the relaxed plan also go to a preferred queue, and
    the two queues are popped in turn (Fast Downward's dual-queue scheme)."""
    h = HFF(world)
    tie = itertools.count()
    start = world.init
    parents: dict[State, tuple[State, GroundAction] | None] = {start: None}
    queues: list[list[tuple[float, int, State]]] = [[], []]
    helpful: dict[State, set[int]] = {}
    value, helpful[start] = h(start)
    queues[0].append((value, next(tie), start))
    index = {(a.name, a.args): i for i, a in enumerate(world.actions)}
    for expansion in range(max_expansions):
        queue = queues[expansion % 2] or queues[(expansion + 1) % 2]
        if not queue:
            return None
        _, _, state = heapq.heappop(queue)
        if world.satisfied(state):
            steps: list[GroundAction] = []
            while parents[state] is not None:
                state, action = parents[state]  # type: ignore[misc]
                steps.append(action)
            return steps[::-1]
        for action in world.applicable(state):
            nxt = world.successor(state, action)
            if nxt in parents:
                continue
            parents[nxt] = (state, action)
            value, helpful[nxt] = h(nxt)
            if value < INF:
                entry = (value, next(tie), nxt)
                heapq.heappush(queues[0], entry)
                if index[(action.name, action.args)] in helpful[state]:
                    heapq.heappush(queues[1], entry)
    return None
