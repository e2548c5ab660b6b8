"""G-Memory's task-node index (issue 36): recall reads a node's newest few trials of each label instead of
every trial of a shared instruction, and recalls exactly what the scan over every trial recalled."""

from __future__ import annotations

import random

import baseline_mocks as bm
import pytest

from aecg_bench import registry
from baselines.g_memory.method import GMemory

SHARED = "Follow the procedure of this environment and report the result"  # one instruction, many trials
OTHERS = [bm.SORT, bm.SORT_SIMILAR, bm.TRANSLATE, "Sort the list of words in ascending order"]


class Scanning(GMemory):
    """The recall before the index: every trial of every node in reach, ranked by similarity."""

    def _retrieve_trials(self, qvec, k_success, k_failure, ranking):  # type: ignore[no-untyped-def]
        by_main: dict[str, list[str]] = {}
        for tid, t in self.trials.items():
            by_main.setdefault(t["task_main"], []).append(tid)
        n_nodes = max((k_success + k_failure) // 2, 1)
        nearest = list(dict.fromkeys(self.trials[tid]["task_main"] for tid, _ in ranking.top(n_nodes)))
        found: dict[bool, list[str]] = {True: [], False: []}
        for node in self.graph.within_hops(nearest, self.params.hop):
            for tid in reversed(by_main.get(node, [])):
                found[self.trials[tid]["success"]].append(tid)
        ranked = {}
        for label, k in ((True, k_success), (False, k_failure)):
            graph_ids = found[label]
            extra = (
                [t for t in self._label_search(ranking, k, label) if t not in graph_ids] if len(graph_ids) < k else []
            )
            ranked[label] = (self._by_similarity(qvec, graph_ids) + self._by_similarity(qvec, extra))[:k]
        return ranked[True], ranked[False]


def _pair(**params):
    services = bm.services()
    indexed = registry.build("memory", "g_memory", params, services=services)
    scanning = Scanning(indexed.params, services=bm.services())
    return indexed, scanning


def _recalled(memory: GMemory, text: str) -> list[tuple]:
    return [(i.id, i.kind, round(i.score or 0.0, 9), i.text) for i in memory.recall(bm.query(text, "q"))]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"successful_topk": 3, "failed_topk": 2, "include_failed_trials": True, "edge_similarity": 0.3},
        {"hop": 0, "successful_topk": 2, "include_failed_trials": True, "threshold": 0.2},
        {"hop": 2, "successful_topk": 0, "failed_topk": 3, "include_failed_trials": True, "edge_similarity": 0.2},
    ],
)
def test_recall_over_a_shared_instruction_equals_the_scan_of_every_trial(params):
    indexed, scanning = _pair(**params)
    rng = random.Random(7)
    queries = [SHARED, *OTHERS, "Sort numbers", "Report the result of the procedure"]
    for i in range(80):
        text = SHARED if rng.random() < 0.7 else rng.choice(OTHERS)
        episode = bm.episode(text, f"t{i}", rng.random() < 0.6)
        indexed.observe(episode)
        scanning.observe(episode)
        if i % 9 == 4:  # insights linked to tasks, so recall shows them too
            for m in (indexed, scanning):
                m.book.add(f"Rule {i}, because it helped.", [text])
        for q in rng.sample(queries, 3):
            assert _recalled(indexed, q) == _recalled(scanning, q), (i, q)
    assert indexed.state_dict() == scanning.state_dict()
    reloaded, _ = _pair(**params)
    reloaded.load_state_dict(indexed.state_dict())  # the index is rebuilt from the state
    assert all(_recalled(reloaded, q) == _recalled(scanning, q) for q in queries)


def test_recall_does_not_scan_every_trial_of_a_shared_instruction():
    """Reading a node's trials is bounded by k, whatever their number."""
    memory, _ = _pair()
    for i in range(600):
        memory.observe(bm.episode(SHARED, f"t{i}", i % 3 != 0))
    sizes = {len(v) for v in memory.by_node[memory.trials["gm-t-0"]["task_main"]].values()}
    assert sizes == {200, 400}
    reads: list[int] = []
    real = memory._by_similarity
    memory._by_similarity = lambda qvec, ids: reads.append(len(ids)) or real(qvec, ids)  # type: ignore[method-assign]
    memory.recall(bm.query(SHARED, "q"))
    assert reads and max(reads) <= 2, reads  # 2 x successful_topk newest of the node, not 400


def test_a_label_recall_shows_none_of_is_not_read_at_all():
    """With no slot for successes (successful_topk 0), recall reads no successful trial of the node at all."""
    memory, _ = _pair(successful_topk=0)
    for i in range(60):
        memory.observe(bm.episode(SHARED, f"t{i}", i % 3 != 0))
    reads: list[int] = []
    real = memory._by_similarity
    memory._by_similarity = lambda qvec, ids: reads.append(len(ids)) or real(qvec, ids)  # type: ignore[method-assign]
    assert [item.kind for item in memory.recall(bm.query(SHARED, "q"))].count("trajectory") == 0
    assert reads and max(reads) <= 2, reads  # the 2 x failed_topk newest failures, not the node's 40 successes
