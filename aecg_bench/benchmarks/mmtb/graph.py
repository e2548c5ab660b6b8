"""MMTB's decision tree of golden tool-call paths (`bench_test/tool_call_graph.py`, our own code).

A mission's golden answer is a dependency graph of nodes (a tool call with its
recorded observation, an `ask_user_for_required_parameters` turn with the
user's reply, or the closing `prepare_to_answer`). Every topological order of
the graph, with independent calls grouped into one parallel step, is a valid
path; the shortest paths are the optimal ones. The original's enumeration rules
are kept exactly, including how runs of same-named calls are handled (they are
either issued all in one step or one per step, never split otherwise) and the
deduplication of steps by the names they call.

Evaluation walks the tree: at step s the agent's calls, sorted by name, must
equal the sorted names of step s on some remaining path; the first such path
step is taken, its golden observations are fed back, and paths that disagree
are pruned. A text reply is accepted only where a remaining path asks the user
(the golden user reply comes back) or answers (the mission ends correct).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

ASK = "ask_user_for_required_parameters"
ANSWER = "prepare_to_answer"


def all_paths(names: list[str], deps: list[list[int]]) -> list[list[list[int]]]:
    """Every path (list of steps, each a list of node indices) as the original's `dfs` builds them."""
    n = len(names)
    graph: dict[int, list[int]] = {i: [] for i in range(n)}
    in_degree = {i: 0 for i in range(n)}
    for idx, node_deps in enumerate(deps):
        for d in node_deps:
            graph[d].append(idx)
            in_degree[idx] += 1
    paths: list[list[list[int]]] = []

    def dfs(in_deg: dict[int, int], visited: list[bool], path: list[list[int]]) -> None:
        if sum(len(p) for p in path) == n:
            paths.append([list(p) for p in path])
            return
        zero = [i for i in in_deg if in_deg[i] == 0 and not visited[i]]
        runs: list[list[int]] = []
        current: list[int] = []
        last = ""
        for j, i in enumerate(zero):
            if j == 0 or names[i] == last:
                current.append(i)
            else:
                runs.append(current)
                current = [i]
            last = names[i]
        if current:
            runs.append(current)
        need_filter: list[tuple[int, ...]] = []
        whole_runs: list[tuple[int, ...]] = []
        for run in runs:
            if len(run) > 1:
                for r in range(1, len(run)):
                    need_filter.extend(combinations(run, r))
                whole_runs.append(tuple(run))
        seen: set[str] = set()
        deduped: list[tuple[int, ...]] = []
        for r in range(1, len(zero) + 1):
            for comb in combinations(zero, r):
                key = "|".join(names[c] for c in comb)
                if key not in seen:
                    seen.add(key)
                    deduped.append(comb)
        for comb in deduped:
            if len(comb) > 1:
                prefixes = [comb[: i + 1] for i in range(len(comb))]
                drop = comb in need_filter or any(p in need_filter for p in prefixes)
                if any(p in whole_runs for p in prefixes):
                    drop = False
                if drop:
                    continue
            serial = False
            if len(comb) == 1:
                for run in whole_runs:
                    if comb[0] == run[0]:
                        comb, serial = run, True
                        break
            visited2 = list(visited)
            in_deg2 = dict(in_deg)
            for c in comb:
                visited2[c] = True
                for nb in graph[c]:
                    in_deg2[nb] -= 1
            path2 = [*path, *([[c] for c in comb] if serial else [list(comb)])]
            dfs(in_deg2, visited2, path2)

    dfs(in_degree, [False] * n, [])
    return paths


def _sorted_by_name(idx: list[int], names: list[str]) -> list[int]:
    return [i for i, _ in sorted(((i, names[i]) for i in idx), key=lambda x: x[1])]


@dataclass
class Walk:
    """The evaluation of one mission: the remaining paths, the step, the outcome."""

    nodes: list[dict[str, Any]]
    paths: list[list[list[int]]] = field(default_factory=list)
    min_length: int = 0
    step: int = 0
    label: str | None = None  # None while running, then "correct" | "error"

    def __post_init__(self) -> None:
        names = self.names
        self.paths = all_paths(names, [list(n.get("dependency_list", [])) for n in self.nodes])
        self.min_length = min((len(p) for p in self.paths), default=0)

    @property
    def names(self) -> list[str]:
        return [n["action"]["name"] for n in self.nodes]

    def options(self) -> list[list[int]]:
        """Step `step` of every remaining path (duplicates kept), node indices sorted by name."""
        return [_sorted_by_name(p[self.step], self.names) for p in self.paths if self.step < len(p)]

    def tool_step(self, called: list[str]) -> list[dict[str, Any]] | None:
        """Golden nodes for a step of calls (sorted by name), pruning the tree; None = mismatch (error)."""
        wanted = sorted(called)
        for path_step in (p[self.step] for p in self.paths if self.step < len(p)):
            ordered = _sorted_by_name(path_step, self.names)
            if [self.names[i] for i in ordered] == wanted:
                self.paths = [p for p in self.paths if self.step < len(p) and p[self.step] == path_step]
                self.step += 1
                return [self.nodes[i] for i in ordered]
        self.label = "error"
        return None

    def text_step(self) -> dict[str, Any] | None:
        """A text reply: the golden ask-user node (its reply goes back) or answer node (mission correct)."""
        for option in self.options():
            names = [self.names[i] for i in option]
            if ASK in names or ANSWER in names:
                node = self.nodes[option[0]]
                self.step += 1
                if ANSWER in names:
                    self.label = "correct"
                return node
        self.label = "error"
        return None

    @property
    def optimal(self) -> bool:
        """The original's `is_optimal`: correct, finishing at the last step of a shortest path."""
        return self.label == "correct" and self.step - 1 == self.min_length - 1
