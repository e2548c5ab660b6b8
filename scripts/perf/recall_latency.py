"""Recall latency of the memory baselines as memory grows; prints its figures [target < 50 ms at 10,000].

For each baseline, a synthetic memory of N stored units (MemoryBank memories,
ReasoningBank entries of 3 items, G-Memory trials with a query graph and 20
insights, ConMem cards with a relation graph, MacNet-M solutions, EDV shared and
private items) is loaded
through `load_state_dict`, exactly as a resumed run loads a snapshot. The
first recall builds the derived indexes (reported as "load"); then distinct
queries are timed one by one (median and p95). Texts are drawn from a Zipf-like
vocabulary of pseudo-words, so queries overlap some entries and not others, as
task texts do. No LLM is called (G-Memory's optional LLM reranking is off, as
by default); query embedding is included, with the run's default embedder
(MiniLM on ONNX Runtime, one thread, as in a run: runtime.embed_runtime and
runtime.embed_threads; `--runtime torch` for the torch baseline).

Cold embedding memo (issue 36): every method and size gets its own embedder, so
no query vector is served from another measurement's memo, and its own queries
(drawn with a seed of their own and of this invocation), so none is in the
on-disk vector cache either.
Only the stored texts' vectors come from that cache (a file in a temporary
folder, filled by the first method and size that embeds them), as in a resumed
run; each new query's vector is computed and written to it, as in a run. (Until
issue 36 one embedder and the same queries served every method and size: 9 of
10 MiniLM figures were memo hits.)

Usage: python scripts/perf/recall_latency.py [--sizes 1000 10000] [--queries 200] [--embedder minilm]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aecg_bench import registry
from aecg_bench.audit import AuditLog
from aecg_bench.contracts import MemoryMethod, MemoryServices
from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.types import RecallQuery, Task

TARGET_MS = 50.0  # median; p95 target: P95_TARGET_MS
P95_TARGET_MS = 100.0
BASELINES = ("memorybank", "reasoningbank", "g_memory", "conmem", "macnet_m", "edv")
ROLES = ("actor", "planner", "critic")
EDV_POOL = ("m1", "m2", "m3")


class Texts:
    """Task-like sentences over a Zipf-distributed vocabulary of alphabetic pseudo-words."""

    def __init__(self, seed: int = 0, vocabulary: int = 3000) -> None:
        self.rng = random.Random(seed)
        syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
        words = {"".join(self.rng.choice(syllables) for _ in range(self.rng.randint(2, 4))) for _ in range(vocabulary)}
        self.words = sorted(words)
        self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]

    def sentence(self, n: int = 10) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=n))


def _memorybank(t: Texts, n: int) -> dict[str, Any]:
    memories = [
        {
            "id": f"mb-{i}",
            "task_id": f"t{i}",
            "instruction": t.sentence(),
            "summary": t.sentence(30),
            "success": i % 3 != 0,
            "excerpt": t.sentence(60),
            "strength": 1.0 + i % 3,
            "created": i,
            "last_recall": i,
        }
        for i in range(n)
    ]
    return {"clock": n, "next_id": n, "memories": memories}


def _reasoningbank(t: Texts, n: int) -> dict[str, Any]:
    entries = [
        {
            "id": f"rb-{i}",
            "query": t.sentence(),
            "task_id": f"t{i}",
            "success": i % 3 != 0,
            "origin": "induced",
            "label_source": "environment",
            "models": ["mock"],
            "items": [
                {"title": t.sentence(4), "description": t.sentence(12), "content": t.sentence(30)} for _ in range(3)
            ],
        }
        for i in range(n)
    ]
    return {"next_id": n, "entries": entries}


def _g_memory(t: Texts, n: int) -> dict[str, Any]:
    rng = random.Random(1)
    mains = [t.sentence() for _ in range(n)]
    trials = [
        {
            "id": f"gm-t-{i}",
            "task_id": f"t{i}",
            "task_main": mains[i],
            "success": i % 3 != 0,
            "key_steps": t.sentence(40),
            "fail_reason": "" if i % 3 else t.sentence(20),
            "trajectory": t.sentence(120),
            "graph": {
                "nodes": [{"id": "d0", "agent": "solver", "role": "actor", "level": "agent", "step": 0, "output": "x"}],
                "edges": [],
            },
        }
        for i in range(n)
    ]
    adj: dict[str, dict[str, float]] = {m: {} for m in mains}
    for i, m in enumerate(mains):  # a few similarity edges per task, as the query graph holds
        for j in rng.sample(range(n), min(3, n)):
            if j != i:
                adj[m][mains[j]] = adj[mains[j]][m] = 0.9
    rules = [
        {
            "id": f"gm-i-{k}",
            "rule": t.sentence(15) + ", because it helps.",
            "score": 2 + k % 3,
            "positive": rng.sample(mains, min(len(mains), 50)),
            "negative": [],
        }
        for k in range(20)
    ]
    return {
        "next_trial": n,
        "maintained_size": n,
        "trials": trials,
        "graph": {"adj": [[node, [[b, w] for b, w in nbrs.items()]] for node, nbrs in adj.items()]},
        "insights": {"rules": rules, "next_id": 20},
    }


def _conmem(t: Texts, n: int) -> dict[str, Any]:
    rng = random.Random(2)
    outcomes = ("success", "failure", "partial")
    cards = []
    for i in range(n):
        outcome = outcomes[i % 3]
        cards.append(
            {
                "id": f"cm-{i}",
                "task_id": f"t{i}",
                "domain": "perf",
                "task_description": t.sentence(),
                "sections": {"state": t.sentence(15), "plan": t.sentence(20), "exec": "", "eval": t.sentence(15)},
                "triggers": [t.sentence(6), t.sentence(6)],
                "summary": t.sentence(15),
                "evidence": f"outcome: {outcome}.",
                "provenance": {
                    "source_task_id": f"t{i}",
                    "source_agent": "solver",
                    "source_steps": [1],
                    "outcome": outcome,
                    "reflection_quality": 1.0,
                    "label_source": "environment",
                },
                "quality": {"reliability": 0.7, "novelty": 0.8, "relevance": 1.0, "utility": 0.8},
                "admission_score": round(rng.uniform(0.5, 0.95), 6),
                "create_round": i,
                "access_count": 0,
                "last_access_round": i,
            }
        )
    relations = ("supports", "conflicts", "constrains", "satisfies")
    edges = [
        {"src": f"cm-{i}", "dst": f"cm-{j}", "relation": rng.choice(relations), "weight": 0.6}
        for i in range(n)
        for j in rng.sample(range(n), min(2, n))
        if j != i
    ]
    return {"round": n, "next_id": n, "committed_tasks": n, "merge_passes": n // 20, "cards": cards, "edges": edges}


def _macnet_m(t: Texts, n: int) -> dict[str, Any]:
    solutions = []
    for i in range(n):
        instruction = t.sentence()
        solutions.append(
            {
                "id": f"mn-{i}",
                "task_id": f"t{i}",
                "instruction": instruction,
                "key": f"{instruction}\n{t.sentence(20)}",
                "solution": t.sentence(80),
                "critique": t.sentence(20),
                "success": i % 3 != 0,
            }
        )
    return {"next_id": n, "solutions": solutions}


def _edv(t: Texts, n: int) -> dict[str, Any]:
    """Shared and private items keyed by their task's instruction + opening observation (EDV's default key)."""
    pool = EDV_POOL
    items = []
    for i in range(n):
        private = i % 4 == 0
        items.append(
            {
                "id": f"edv-{i}",
                "title": t.sentence(4),
                "description": t.sentence(12),
                "content": t.sentence(30),
                "task_id": f"t{i // 3}",
                "task_type": "perf",
                "query": f"{t.sentence()}\n{t.sentence(12)}",
                "bank": "private" if private else "shared",
                "owners": [pool[i % 3]] if private else [],
                "distiller": pool[i % 3],
                "best_candidate": 0,
                "item_index": i % 3,
                "visit": 0,
            }
        )
    return {"items": items, "ability": [], "visits": {}, "next_id": n, "discarded": 0}


BUILDERS: dict[str, Callable[[Texts, int], dict[str, Any]]] = {
    "memorybank": _memorybank,
    "reasoningbank": _reasoningbank,
    "g_memory": _g_memory,
    "conmem": _conmem,
    "macnet_m": _macnet_m,
    "edv": _edv,
}


def pool_client() -> LLMClient:
    """EDV's model pool, never called by recall (mock models: EDV refuses to start without its pool)."""
    specs = {m: ModelSpec(label=m, provider="mock", model=f"mock/{m}") for m in EDV_POOL}
    return LLMClient(specs, {"default": EDV_POOL[0]}, ResponseCache(None, "off"))


def synthetic_memory(name: str, n: int, embedder: Embedder, seed: int = 0) -> tuple[MemoryMethod, dict[str, Any]]:
    """A baseline holding n synthetic units, loaded as a snapshot would be; also returns the state."""
    state = BUILDERS[name](Texts(seed), n)
    services = MemoryServices(
        llm=pool_client() if name == "edv" else None, embedder=embedder, audit=AuditLog(), seed=seed
    )
    memory = registry.build("memory", name, {}, services=services)
    memory.load_state_dict(state)
    return memory, state


def queries(count: int, seed: int = 1) -> list[RecallQuery]:
    t = Texts(0)  # the vocabulary the memories were written in
    t.rng = random.Random(seed)
    return [
        RecallQuery(
            task=Task(id=f"q{i}-{seed}", benchmark="perf", instruction=t.sentence()),
            level="agent",
            agent="solver",
            role=ROLES[i % len(ROLES)],
            context=t.sentence(12),
        )
        for i in range(count)
    ]


def cold_embedder(backend: str, stored_cache: Path, runtime: str = "onnx") -> Embedder:
    """A fresh embedder (empty memo) over the shared on-disk cache of stored texts' vectors."""
    return Embedder(backend, stored_cache, runtime=runtime)


# Queries of this invocation: a vector cache kept from an earlier one (--vector-cache) never holds them.
SALT = f"{os.getpid()}:{time.time_ns()}"


def measure(name: str, n: int, n_queries: int, embedder: Embedder) -> dict[str, float]:
    memory, _ = synthetic_memory(name, n, embedder)
    qs = queries(n_queries + 1, seed=zlib.crc32(f"{name}:{n}:{SALT}".encode()))  # this measurement's own queries
    start = time.perf_counter()
    memory.recall(qs[0])  # builds the derived indexes
    load_s = time.perf_counter() - start
    embedding = {"s": 0.0}
    embed = embedder.embed

    def timed_embed(texts: list[str]) -> Any:  # the query embeddings' share of a recall
        t0 = time.perf_counter()
        try:
            return embed(texts)
        finally:
            embedding["s"] += time.perf_counter() - t0

    embedder.embed = timed_embed  # type: ignore[method-assign]
    times, cpu, embeds, returned = [], [], [], 0
    for q in qs[1:]:
        embedding["s"] = 0.0
        start, start_cpu = time.perf_counter(), time.process_time()
        items = memory.recall(q)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        embeds.append(embedding["s"] * 1000)
        returned += len(items)
    return {
        "load_s": load_s,
        "median_ms": statistics.median(times),
        "p95_ms": p95(times),
        "cpu_median_ms": statistics.median(cpu),
        "cpu_p95_ms": p95(cpu),
        "embed_median_ms": statistics.median(embeds),
        "items_per_recall": returned / len(times),
    }


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(0.95 * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", choices=["lexical", "minilm"], default="minilm")
    parser.add_argument("--only", nargs="+", choices=BASELINES, default=list(BASELINES))
    parser.add_argument("--runtime", choices=["onnx", "torch"], default="onnx", help="how MiniLM is computed")
    parser.add_argument("--vector-cache", type=Path, default=None, help="on-disk cache of the stored texts' vectors")
    args = parser.parse_args()
    print(
        f"recall latency, {args.queries} distinct queries, embedder={args.embedder} ({args.runtime}), cold memo per method and size "
        f"[targets: median < {TARGET_MS:.0f} ms, p95 < {P95_TARGET_MS:.0f} ms]"
    )
    print(f"{cpu_model()}, {os.cpu_count()} cores, load {load()}")
    print("wall = elapsed; cpu = this process's CPU time (what an idle core would take); embed = the query embeddings")
    print(
        f"{'baseline':<14}{'stored':>8}{'load s':>9}{'median ms':>11}{'p95 ms':>9}{'cpu med':>9}{'cpu p95':>9}"
        f"{'embed med':>10}{'items':>7}  verdict  load"
    )
    with tempfile.TemporaryDirectory(prefix="aecg-recall-") as tmp:
        stored_cache = args.vector_cache or Path(tmp) / "vectors.sqlite"
        for name in args.only:
            for n in args.sizes:
                r = measure(name, n, args.queries, cold_embedder(args.embedder, stored_cache, args.runtime))
                ok = r["median_ms"] < TARGET_MS and r["p95_ms"] < P95_TARGET_MS
                print(
                    f"{name:<14}{n:>8}{r['load_s']:>9.2f}{r['median_ms']:>11.2f}{r['p95_ms']:>9.2f}"
                    f"{r['cpu_median_ms']:>9.2f}{r['cpu_p95_ms']:>9.2f}{r['embed_median_ms']:>10.2f}"
                    f"{r['items_per_recall']:>7.1f}  {'OK' if ok else 'ABOVE TARGET'}  {load()}",
                    flush=True,
                )


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


if __name__ == "__main__":
    main()
