"""Measure the LLM client's own overhead; prints its figures (targets in brackets).

1. Cached-call throughput through `LLMClient.complete` (cache hit: key, SQLite
   lookup, parse, accounting) [>= 10,000 calls/s, issue 20]. For scale: a bare
   SQLite hash-lookup-parse loop does about 24,000/s on the 2-core dev machine
   and litellm's own mock path about 340/s.
2. Parallel efficiency of real provider calls (litellm -> OpenAI-compatible
   HTTP) against a loopback server with a fixed 200 ms latency at 8-way
   concurrency: ideal time / measured time [>= 0.9].
3. The same 8-way load sent as bare HTTP POSTs (one persistent httpx client per
   thread, no harness, no litellm), so a low figure in 2. can be told apart: if
   the bare requests are as far from ideal, the machine (CPU contention, the
   server's own threads) is the cause; if they are near 1.0, the harness is.
   Every figure is printed with the load average.

3. With --scale: throughput (calls/s) at 8, 32 and 64 concurrent calls against
   the same loopback server (docs/infra/scale-out.md).

Usage: python scripts/perf/llm_overhead.py [--calls 5000] [--parallel-calls 64] [--scale]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy
from aecg_bench.llm.cache import ResponseCache
from aecg_bench.testing.fake_server import FakeOpenAIServer

SYSTEM = "You are an agent solving a task step by step. " * 12


def _messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Task {i}: walk to the target cell. Current observation: cell {i % 7}. " * 6},
    ]


def _client(base_url: str, cache: ResponseCache, concurrency: int) -> LLMClient:
    spec = ModelSpec(
        label="served", model="openai/fake-model", api_base=base_url, max_concurrency=concurrency, timeout_s=30
    )
    return LLMClient({"served": spec}, {"default": "served"}, cache, RetryPolicy(max_attempts=2))


def cached_throughput(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(lambda m: "move right") as server:
        client = _client(server.base_url, ResponseCache(Path(tmp) / "c.sqlite", "read_write"), 8)
        distinct = 500
        for i in range(distinct):  # fill through the real provider path
            client.complete(_messages(i))
        start = time.perf_counter()
        for i in range(n):
            out = client.complete(_messages(i % distinct))
            assert out.cached
        return n / (time.perf_counter() - start)


def _fixed_reply(messages: list[dict[str, str]]) -> str:
    return "move right"


def _serve(latency: float, urls: mp.Queue, stop: mp.Event) -> None:  # type: ignore[type-arg]
    with FakeOpenAIServer(_fixed_reply, latency_s=latency) as server:
        urls.put(server.base_url)
        stop.wait()


def parallel_efficiency(n: int, workers: int = 8, latency: float = 0.2) -> tuple[float, float]:
    """The server runs in its own process, as a real endpoint would, so it takes no share of our GIL."""
    urls: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    stop = mp.Event()
    proc = mp.Process(target=_serve, args=(latency, urls, stop), daemon=True)
    proc.start()
    try:
        client = _client(urls.get(timeout=30), ResponseCache(None, "off"), workers)
        client.complete(_messages(-1))  # warm up litellm and the HTTP client
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda i: client.complete(_messages(i)), range(n)))
        elapsed = time.perf_counter() - start
    finally:
        stop.set()
        proc.join(timeout=10)
    ideal = n * latency / workers
    return ideal / elapsed, elapsed


def _bare_post(url: str, n: int, workers: int) -> float:
    """Elapsed seconds for n chat POSTs at `workers`-way concurrency, no harness in the way."""
    import threading

    import httpx

    local = threading.local()

    def post(i: int) -> None:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(timeout=30)
        r = client.post(f"{url}/chat/completions", json={"model": "fake-model", "messages": _messages(i)})
        r.raise_for_status()

    post(-1)
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(post, range(n)))
    return time.perf_counter() - start


def bare_efficiency(n: int, workers: int = 8, latency: float = 0.2) -> tuple[float, float]:
    urls: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    stop = mp.Event()
    proc = mp.Process(target=_serve, args=(latency, urls, stop), daemon=True)
    proc.start()
    try:
        elapsed = _bare_post(urls.get(timeout=30), n, workers)
    finally:
        stop.set()
        proc.join(timeout=10)
    return n * latency / workers / elapsed, elapsed


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--parallel-calls", type=int, default=64)
    parser.add_argument("--scale", action="store_true", help="only the throughput at 8/32/64 concurrent calls")
    args = parser.parse_args()
    if args.scale:
        for workers in (8, 32, 64):
            n = 4 * workers
            eff, elapsed = parallel_efficiency(n, workers)
            print(f"{workers:>2} concurrent calls (200 ms loopback): {n / elapsed:6.1f} calls/s, efficiency {eff:.2f}")
        return
    rate = cached_throughput(args.calls)
    print(
        f"cached-call throughput: {rate:,.0f} calls/s  [target >= 10,000]  "
        f"{'OK' if rate >= 10000 else 'BELOW TARGET'}  [{_load()}]"
    )
    eff, elapsed = parallel_efficiency(args.parallel_calls)
    print(
        f"parallel efficiency (8-way, 200 ms loopback, {args.parallel_calls} calls): {eff:.3f} "
        f"({elapsed:.2f} s vs ideal {args.parallel_calls * 0.2 / 8:.2f} s)  [target >= 0.9]  "
        f"{'OK' if eff >= 0.9 else 'BELOW TARGET'}  [{_load()}]"
    )
    bare, bare_s = bare_efficiency(args.parallel_calls)
    print(
        f"  same load as bare HTTP POSTs (no harness): {bare:.3f} ({bare_s:.2f} s); harness share of the gap: "
        f"{max(bare - eff, 0.0) / max(1.0 - eff, 1e-9):.0%}  [{_load()}]"
    )


if __name__ == "__main__":
    main()
