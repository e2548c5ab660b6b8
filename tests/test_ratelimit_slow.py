"""Real time, real processes: four processes share one rate limit against the fake loopback server, which
enforces N requests per second itself (429 + Retry-After beyond it) and records when requests arrive.
Tolerances are generous (loaded CI machines); the default tier tests the same logic with a fake clock."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aecg_bench.testing.fake_server import FakeOpenAIServer

pytestmark = pytest.mark.slow

N_PER_S = 8
PROCESSES = 4
CALLS = 12
RETRY_AFTER_S = 2.0


def _worker(base_url: str, db: str, who: int, out) -> None:  # type: ignore[no-untyped-def]
    from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy
    from aecg_bench.llm.ratelimit import RateLimit, SharedRateLimiter

    spec = ModelSpec(
        label="served",
        model="openai/fake-model",
        api_base=base_url,
        timeout_s=30,
        rate_limit=RateLimit(requests_per_minute=N_PER_S * 60, burst_s=1 / N_PER_S),
    )
    client = LLMClient(
        {"served": spec},
        {"default": "served"},
        retry=RetryPolicy(max_attempts=10, base_delay_s=0.05, max_delay_s=0.5),
        rate_limiter=SharedRateLimiter(Path(db)),
    )
    with ThreadPoolExecutor(2) as pool:
        texts = list(
            pool.map(lambda i: client.complete([{"role": "user", "content": f"p{who} c{i}"}]).text, range(CALLS))
        )
    out.put(texts)


def test_four_processes_stay_under_the_servers_limit_and_lose_nothing(tmp_path):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with FakeOpenAIServer(
        lambda messages: "ok " + str(messages[-1]["content"]), max_per_second=N_PER_S, retry_after=str(RETRY_AFTER_S)
    ) as server:
        procs = [
            ctx.Process(target=_worker, args=(server.base_url, str(tmp_path / "rl.sqlite"), i, out))
            for i in range(PROCESSES)
        ]
        for p in procs:
            p.start()
        answers = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
    total = PROCESSES * CALLS
    assert sorted(t for texts in answers for t in texts) == sorted(
        f"ok p{who} c{i}" for who in range(PROCESSES) for i in range(CALLS)
    )  # nothing lost
    arrivals = sorted(server.arrivals)
    rejected = len(arrivals) - len(server.admitted)
    assert server.served["429"] == rejected
    # Paced to N per second across processes: few rejections (the server enforces a sliding second, so jitter
    # between processes costs a 429 now and then),
    # and the admitted calls spread over at least the time the limit demands.
    assert rejected <= total // 4, f"{rejected} of {len(arrivals)} requests rejected"
    span = max(server.admitted) - min(server.admitted)
    print(f"{total} calls, {len(arrivals)} requests, {rejected} rejected (429), admitted over {span:.1f} s")
    assert span >= (total - N_PER_S) / N_PER_S * 0.8, span
    # Retry-After is honoured by every process: after a 429 the key stays all but quiet. Without the shared
    # block (measured here with it disabled) 4.1 requests on average, up to 8, land in this one-second window;
    # a caller that woke before the block was written (the 429's process still parsing the error) may slip
    # through on a loaded machine.
    windows = [
        [a for a in arrivals if t + 0.5 < a < t + RETRY_AFTER_S - 0.5]
        for t in (a for a, status in _statuses(server) if status == 429)
    ]
    assert all(len(w) <= 3 for w in windows), windows
    assert sum(len(w) for w in windows) <= 1.5 * max(len(windows), 1), windows


def _statuses(server: FakeOpenAIServer) -> list[tuple[float, int]]:
    admitted = set(server.admitted)
    return [(a, 200 if a in admitted else 429) for a in server.arrivals]
