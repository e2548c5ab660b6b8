"""`g_memory`: G-Memory (Zhang et al., 2025, "G-Memory: Tracing Hierarchical Memory for
Multi-Agent Systems", arXiv 2506.07398; code: github.com/bingreeky/GMemory,
mas/memory/mas_memory/GMemory.py and prompt.py).

What is stored, in three tiers:
- interaction graphs: one per trial, built from the trajectory's decision
  graph (utterance nodes: agent, role, level, step, output; edges: which
  decision consumed which). Each trial also keeps its task text, label,
  rendered trajectory (steps with negative reward dropped, other agents'
  utterances under each step), the LLM-extracted key steps and, for failures,
  the LLM's diagnosis of the mistake.
- the query graph: one node per distinct task text, linked to the
  `edge_candidates` most similar earlier tasks whose similarity reaches
  `edge_similarity`.
- insights: rules ("X, because Y") with scores and the tasks that support or
  contradict them.

When and how it is recalled (G-Memory's retrieve_memory with the frameworks'
settings): the nearest task nodes (by embedding) are expanded by `hop` hops
in the query graph; their trials are split by label and ranked by
similarity, then topped up by plain similarity search when fewer than twice
the wanted number were found, and filtered by `threshold`; the first
`successful_topk` successful trials are returned with their key steps.
Insights are ranked by how many of the query and its 4 most similar
successful and 2 most similar failed trials they are linked to; the best
`insights_topk` are returned. Failed trials are retrieved but not shown, as
in every G-Memory framework (`include_failed_trials` shows them).

How it learns from outcomes: when a task's episode is observed, every insight
that task recalled gets +1 on success and -2 on failure (G-Memory's
`backward`), and insights whose score drops to 0 are removed. Periodically
(`maintain`): critique-based finetuning after `start_insights_threshold`
trials and then every `rounds_per_insights` trials: for `insights_point_num`
sampled trials, similar successes and failures are compared (success/failure
pairs, then chunks of successes) and the LLM edits the related rules with
AGREE/REMOVE/EDIT/ADD operations; every `merge_every` trials the tasks are
clustered and each cluster's rules are merged by the LLM. The original runs
both inside add_memory when the trial count reaches a multiple; here
`maintain` runs every round that came due since the last call, so with
`protocol.maintain_every=5` the cadence is exactly the original's and with a
larger interval the same rounds run a little later.

Hyperparameters (sources): hop 1, start_insights_threshold 5,
rounds_per_insights 5, insights_point_num 5, merge every 20 trials, at most 10
rules before REMOVE costs 3 and ADD is discouraged, rewards +1/-2, 3+1
comparison trials, chunks of 5 successes, merge batches of 10: GMemory.py.
successful_topk 1, failed_topk 1, insights_topk 3, threshold 0: the
frameworks' defaults (tasks/mas_workflow/*). edge_similarity 0.85: the code
keeps edges with 1 - d >= 0.7 where d is Chroma's default squared L2
distance; for unit vectors that is cosine >= 0.85. key-step temperature 0.1.

Defects of the public code, fixed here:
1. Insight scores are never updated under DyLAN (its schedule() never calls
   `backward`); here every observed episode updates the insights it recalled,
   whatever the framework.
2. The graph-retrieval results are overwritten by the fallback: when fewer
   than k successes come out of the query graph, `true_tasks_doc` is
   reassigned to the similarity-search result (and the loop meant to merge
   them compares the list with itself), so hop-expanded neighbours never
   survive a top-up. Here the fallback only tops up: graph-retrieved trials
   keep their places and similarity-search results fill the remaining slots.
Further defects, also fixed:
3. A node's trial is found again by `similarity_search(task_main, k=1)[0]`,
   which can return another task's trial; here nodes map to their trials.
4. The LLM relevance scores of retrieved successes are computed and then
   discarded (`top_success = successful[:k]` right after sorting). Default
   `rerank_with_llm: false` keeps the effective behaviour without the wasted
   calls; `true` applies the intended reranking.
5. AGREE looks its rule up by text and, when the text was paraphrased, hits
   the last rule (index -1); here AGREE uses the rule number.
6. The merge limit is (batch // 3) // 3, i.e. "no more than 0 insights" for
   fewer than 9 rules; here it is max(1, batch // 3). A merge reply without
   a numbered list keeps the batch's rules instead of deleting them.
7. Insight backward matches rules by substring; here by id. Sampling and
   shuffling use seeded generators (the original uses the global RNG) and
   task lists keep their order (the original uses set(), whose order varies),
   so runs are deterministic.
8. finetune_insights appends the drawn trial to its comparison group even
   when the similarity search already returned it (its own nearest trial),
   so it is shown twice; here it is added only when missing.
Deviations: tasks are clustered for merging by the connected components of
the query graph instead of FINCH (no extra dependency; same role); role
projection of insights (`use_projector`, off by default) and the
'analyze_pattern' heuristic (off by default) are not implemented; prompts
are reworded for agent tasks in general.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

import numpy as np
from pydantic import Field

from aecg_bench.contracts import MemoryMethod, MemoryServices, Params
from aecg_bench.types import Episode, MemoryItem, RecallQuery, task_text
from baselines.g_memory import prompts as P
from baselines.g_memory.insights import InsightBook, parse_operations
from baselines.g_memory.task_graph import TaskGraph
from baselines.index import Ranking, VectorIndex, embedder_of
from baselines.llm_calls import ask, numbered_list, skip, stable_seed
from baselines.trajectory_text import clip, interaction_graph, render_trajectory

INSIGHT_PREFIX = "gm-i-"


class GMemoryParams(Params):
    hop: int = Field(1, ge=0, description="query-graph hops around the nearest task nodes")
    successful_topk: int = Field(1, ge=0)
    failed_topk: int = Field(1, ge=0)
    include_failed_trials: bool = Field(False, description="show retrieved failed trials (frameworks discard them)")
    insights_topk: int = Field(3, ge=0)
    threshold: float = Field(0.0, description="minimum cosine of a recalled trial")
    edge_similarity: float = Field(0.85, description="cosine needed for a query-graph edge")
    edge_candidates: int = Field(10, ge=1)
    start_insights_threshold: int = Field(5, ge=1)
    rounds_per_insights: int = Field(5, ge=1)
    insights_point_num: int = Field(5, ge=0)
    merge_every: int = Field(20, ge=1)
    max_rules: int = Field(10, ge=1)
    success_reward: float = 1.0
    failure_reward: float = -2.0
    rerank_with_llm: bool = Field(False, description="apply the LLM relevance reranking the original discards")
    strip_digits: bool = Field(True, description="remove digits from trajectories shown for key-step extraction")
    key_steps_temperature: float = Field(0.1, ge=0)
    max_tokens: int = Field(512, ge=32)
    max_trajectory_chars: int = Field(5000, ge=200)
    recall_chars: int = Field(1500, ge=100)


class GMemory(MemoryMethod):
    name = "g_memory"
    version = "1"
    Params = GMemoryParams
    params: GMemoryParams

    def __init__(self, params: Any = None, *, services: MemoryServices) -> None:
        super().__init__(params, services=services)
        self.trials: dict[str, dict[str, Any]] = {}
        self.graph = TaskGraph()
        self.book = InsightBook()
        self.next_trial = 0
        self.maintained_size = 0
        self._index: VectorIndex | None = None
        self._by_node: dict[str, dict[bool, list[str]]] | None = None

    # -- derived structures (rebuilt after load) ---------------------------------

    @property
    def index(self) -> VectorIndex:
        if self._index is None:
            self._index = VectorIndex(embedder_of(self.services))
            self._index.add_many(list(self.trials), [t["task_main"] for t in self.trials.values()])
        return self._index

    @property
    def by_node(self) -> dict[str, dict[bool, list[str]]]:
        """Task node -> label -> its trials, oldest first: recall reads a node's newest few of each
        label and its counts, never every trial of a task many trials share (issue 36)."""
        if self._by_node is None:
            self._by_node = {}
            for tid, t in self.trials.items():
                _file(self._by_node, t["task_main"], t["success"], tid)
        return self._by_node

    # -- recall ----------------------------------------------------------------

    def recall(self, query: RecallQuery) -> list[MemoryItem]:
        if not self.trials:
            return []
        p = self.params
        task = task_text(query.task, query.context)
        qvec = self.index.embed(task)
        ranking = self.index.rank(qvec)  # one scan serves every search of this recall
        successes, failures = self._retrieve_trials(qvec, 2 * p.successful_topk, 2 * p.failed_topk, ranking)
        if p.rerank_with_llm and successes:
            successes = self._rerank(successes, task)
        shown = successes[: p.successful_topk] + (failures[: p.failed_topk] if p.include_failed_trials else [])
        items = [self._trial_item(self.trials[tid], score, query) for tid, score in shown]
        for rule in self._insights_for(ranking, task, 2 * p.insights_topk)[: p.insights_topk]:
            items.append(
                MemoryItem(
                    id=rule["id"],
                    text=rule["rule"],
                    level=query.level,
                    kind="insight",
                    score=float(rule["score"]),
                    metadata={"score": rule["score"]},
                )
            )
        return items

    def _label_search(self, ranking: Ranking, k: int, success: bool) -> list[str]:
        return [tid for tid, _ in ranking.top(k, allow=lambda tid: self.trials[tid]["success"] is success)]

    def _retrieve_trials(
        self, qvec: np.ndarray, k_success: int, k_failure: int, ranking: Ranking
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """Trials of the nearest task nodes and their hop neighbours, topped up by similarity search
        when there are too few (fix 2): graph results keep their places, each group ranked by similarity."""
        n_nodes = max((k_success + k_failure) // 2, 1)
        nearest = list(dict.fromkeys(self.trials[tid]["task_main"] for tid, _ in ranking.top(n_nodes)))
        nodes = self.graph.within_hops(nearest, self.params.hop)
        ranked = {}
        for label, k in ((True, k_success), (False, k_failure)):
            # A node's trials share its task text, hence its vector and similarity: the stable sort below
            # keeps them newest first, so no more than a node's k newest can reach the top k. Only those
            # are read (a shared instruction hangs every trial off one node); the count of all decides
            # the top-up.
            graph_ids, found = [], 0
            for node in nodes:
                trials = self.by_node.get(node, {}).get(label, [])
                found += len(trials)
                graph_ids += reversed(trials[-k:]) if k else []
            extra = [t for t in self._label_search(ranking, k, label) if t not in graph_ids] if found < k else []
            ranked[label] = (self._by_similarity(qvec, graph_ids) + self._by_similarity(qvec, extra))[:k]
        return ranked[True], ranked[False]

    def _by_similarity(self, qvec: np.ndarray, ids: list[str]) -> list[tuple[str, float]]:
        sims = self.index.similarity(qvec, ids)
        scored = [(t, sims[t]) for t in ids if sims[t] >= self.params.threshold]
        scored.sort(key=lambda x: -x[1])
        return scored

    def _rerank(self, successes: list[tuple[str, float]], task: str) -> list[tuple[str, float]]:
        scores = []
        for tid, _ in successes:
            t = self.trials[tid]
            reply = ask(
                self,
                system=P.RELEVANCE_SYSTEM,
                user=P.RELEVANCE_USER.format(trajectory=f"{t['task_main']}\n{t['trajectory']}", task=task),
                purpose="rerank",
                max_tokens=16,
            )
            m = re.search(r"\d+", reply or "")
            scores.append(int(m.group()) if m else 0)
        order = sorted(range(len(successes)), key=lambda i: -scores[i])
        return [successes[i] for i in order]

    def _insights_for(self, ranking: Ranking, task: str, k: int) -> list[dict[str, Any]]:
        related = self._label_search(ranking, 4, True) + self._label_search(ranking, 2, False)
        mains = [self.trials[t]["task_main"] for t in related] + [task]
        counts: Counter[str] = Counter()
        for rule in self.book.rules:
            positive = set(rule["positive"])
            counts[rule["id"]] = sum(m in positive for m in mains)
        ranked = [r for r in self.book.rules if counts[r["id"]] >= 1]
        ranked.sort(key=lambda r: -counts[r["id"]])
        return ranked[:k]

    def _trial_item(self, t: dict[str, Any], score: float, query: RecallQuery) -> MemoryItem:
        head = "Successful trial of a similar task" if t["success"] else "Failed trial of a similar task"
        parts = [f"{head}: {t['task_main']}"]
        if t["key_steps"]:
            parts.append(f"Key steps:\n{t['key_steps']}")
        if t["fail_reason"]:
            parts.append(f"Why it failed: {t['fail_reason']}")
        parts.append(f"Trajectory:\n{t['trajectory']}")
        return MemoryItem(
            id=t["id"],
            text=clip("\n".join(parts), self.params.recall_chars),
            level=query.level,
            kind="trajectory",
            score=score,
            metadata={"source_task": t["task_id"], "success": t["success"]},
        )

    # -- learning from one episode ----------------------------------------------

    def observe(self, episode: Episode) -> None:
        success = episode.outcome.success
        if success is None:
            self.audit.record("skip", purpose="store", reason="no_label", task=episode.task.id)
            return
        traj = episode.trajectory
        task_main = task_text(episode.task, traj.initial_observation)
        shown = render_trajectory(traj, max_chars=self.params.max_trajectory_chars, skip_negative_reward=True)
        clean = re.sub(r"\d+", "", shown) if self.params.strip_digits else shown
        key_steps = self._ask_text(P.KEY_STEPS_SYSTEM, P.KEY_STEPS_USER, "key_steps", task_main, clean)
        fail_reason = (
            "" if success else self._ask_text(P.MISTAKES_SYSTEM, P.MISTAKES_USER, "mistakes", task_main, clean)
        )
        # state changes only from here on
        reward = self.params.success_reward if success else self.params.failure_reward
        for rid in traj.recalled_memory_ids():
            if rid.startswith(INSIGHT_PREFIX):
                self.book.reward(rid, reward, episode.task.id)
        self.book.prune()
        self._flush_events(self.book)
        self._add_task_node(task_main)
        index, by_node = self.index, self.by_node  # built before the new trial exists
        tid = f"gm-t-{self.next_trial}"
        self.next_trial += 1
        self.trials[tid] = {
            "id": tid,
            "task_id": episode.task.id,
            "task_main": task_main,
            "success": bool(success),
            "key_steps": key_steps,
            "fail_reason": fail_reason,
            "trajectory": shown,
            "graph": interaction_graph(traj),
        }
        index.add(tid, task_main)
        _file(by_node, task_main, bool(success), tid)
        self.audit.record("admit", memory_id=tid, kind="trial", task=episode.task.id, success=bool(success))

    def _ask_text(self, system: str, user: str, purpose: str, task: str, trajectory: str) -> str:
        reply = ask(
            self,
            system=system,
            user=user.format(task=task, trajectory=trajectory),
            purpose=purpose,
            max_tokens=self.params.max_tokens,
            temperature=self.params.key_steps_temperature,
        )
        text = (reply or "").strip()
        if not text:
            skip(self, purpose, reply)
        return clip(text, 2000)

    def _add_task_node(self, task_main: str) -> None:
        if task_main in self.graph:
            return
        hits = self.index.search(task_main, self.params.edge_candidates, min_score=self.params.edge_similarity)
        self.graph.add_node(task_main)
        for tid, sim in hits:
            self.graph.add_edge(task_main, self.trials[tid]["task_main"], round(sim, 6))

    # -- periodic consolidation ---------------------------------------------------

    def maintain(self, round_index: int) -> None:
        """Finetune insights and merge them when G-Memory's trial-count cadence says so.

        Everything happens on a copy of the insights, committed at the end: a
        failure half-way leaves them unchanged and the work is redone later.
        """
        p = self.params
        size = len(self.trials)
        sizes = range(self.maintained_size + 1, size + 1)
        finetunes = [m for m in sizes if m >= p.start_insights_threshold and m % p.rounds_per_insights == 0]
        merge = any(m % p.merge_every == 0 for m in sizes)
        if finetunes or merge:
            book = self.book.copy()
            for m in finetunes:
                self._finetune(book, random.Random(stable_seed(self.services.seed, self.name, "finetune", m)))
            if merge:
                self._merge(book)
            self.book = book
            self._flush_events(book)
        self.maintained_size = size

    def _finetune(self, book: InsightBook, rng: random.Random) -> None:
        trial_ids = list(self.trials)
        for _ in range(self.params.insights_point_num):
            t = self.trials[rng.choice(trial_ids)]
            ranking = self.index.rank(t["task_main"])
            succ = self._label_search(ranking, 3, True)
            fail = self._label_search(ranking, 1, False)
            own = succ if t["success"] else fail
            if t["id"] not in own:
                own.append(t["id"])
            mains = [self.trials[x]["task_main"] for x in succ + fail]
            shown = [r["id"] for r in book.related(mains, threshold=len(mains) / 2)]
            self._critique(book, succ, fail, shown, rng)

    def _rules_text(self, book: InsightBook, shown: list[str]) -> str:
        rules = [book.by_id(rid) for rid in shown]
        lines = [f"{i}. {r['rule']}" for i, r in enumerate(rules, 1) if r is not None]
        return "\n".join(lines) or "(none yet)"

    def _critique(
        self, book: InsightBook, succ: list[str], fail: list[str], shown: list[str], rng: random.Random
    ) -> None:
        p = self.params
        rules = self._rules_text(book, shown)
        suffix = P.FULL_SUFFIX if len(book.rules) > p.max_rules else ""
        for s_id, f_id in zip(succ, fail, strict=False):
            s, f = self.trials[s_id], self.trials[f_id]
            user = P.COMPARE_USER.format(
                task1=s["task_main"],
                trajectory1=s["trajectory"],
                fail_reason=f["fail_reason"],
                task2=f["task_main"],
                trajectory2=f["trajectory"],
                rules=rules,
            )
            self._apply_reply(book, P.COMPARE_SYSTEM + suffix, user, shown, [s["task_main"], f["task_main"]])
        shuffled = list(succ)
        rng.shuffle(shuffled)
        for chunk in _chunks(shuffled, 5):
            history = "\n".join(
                f"task{i}:\n{self.trials[x]['task_main']}\n{self.trials[x]['key_steps']}" for i, x in enumerate(chunk)
            )
            user = P.SUCCESS_USER.format(history=history, rules=rules)
            self._apply_reply(
                book, P.SUCCESS_SYSTEM + suffix, user, shown, [self.trials[x]["task_main"] for x in chunk]
            )
        book.prune()

    def _apply_reply(self, book: InsightBook, system: str, user: str, shown: list[str], tasks: list[str]) -> None:
        reply = ask(self, system=system, user=user, purpose="critique", max_tokens=self.params.max_tokens)
        ops = parse_operations(reply)
        if not ops:
            skip(self, "critique", reply)
            return
        book.apply(ops, shown, tasks, self.params.max_rules)

    def _merge(self, book: InsightBook) -> None:
        """Per task cluster, the LLM merges the cluster's rules; they replace all rules (score 2)."""
        if not book.rules:
            return
        merged: list[tuple[list[str], list[str]]] = []
        for cluster in self.graph.components():
            texts = [r["rule"] for r in book.related(cluster, 1)]
            out: list[str] = []
            for batch in (texts[i : i + 10] for i in range(0, len(texts), 10)):  # consecutive batches of 10
                reply = ask(
                    self,
                    system=P.MERGE_SYSTEM,
                    user=P.MERGE_USER.format(rules="\n".join(batch), limit=max(1, len(batch) // 3)),
                    purpose="merge",
                    max_tokens=self.params.max_tokens,
                )
                items = numbered_list(reply)
                if not items:
                    skip(self, "merge", reply)
                out += items or batch
            if out:
                merged.append((cluster, out))
        old = [r["id"] for r in book.rules]
        book.rules = []
        for cluster, texts in merged:
            for text in texts:
                book.add(text, cluster)
        book.events.append(("merge", {"replaced": old, "into": [r["id"] for r in book.rules]}))

    def _flush_events(self, book: InsightBook) -> None:
        for event, data in book.events:
            self.audit.record(event, **data)
        book.events.clear()

    # -- state -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "next_trial": self.next_trial,
            "maintained_size": self.maintained_size,
            "trials": [_copy(t) for t in self.trials.values()],
            "graph": self.graph.state(),
            "insights": self.book.state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.next_trial = int(state["next_trial"])
        self.maintained_size = int(state["maintained_size"])
        self.trials = {t["id"]: _copy(t) for t in state["trials"]}
        self.graph = TaskGraph.from_state(state["graph"])
        self.book = InsightBook.from_state(state["insights"])
        self._index, self._by_node = None, None

    def stats(self) -> dict[str, float]:
        return {
            "trials": float(len(self.trials)),
            "insights": float(len(self.book.rules)),
            "tasks": float(len(self.graph)),
        }


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    """G-Memory's random_divide_list after its shuffle: at most `size` per chunk, sizes balanced."""
    if not items:
        return []
    n = -(-len(items) // size)
    step = -(-len(items) // n)
    return [items[i * step : (i + 1) * step] for i in range(n)]


def _copy(trial: dict[str, Any]) -> dict[str, Any]:
    graph = trial["graph"]
    return {
        **trial,
        "graph": {"nodes": [dict(n) for n in graph["nodes"]], "edges": [list(e) for e in graph["edges"]]},
    }


def _file(by_node: dict[str, dict[bool, list[str]]], node: str, success: bool, tid: str) -> None:
    by_node.setdefault(node, {True: [], False: []})[success].append(tid)
