"""The shared rate limiter: its bucket arithmetic against an injected clock (no wall-clock timing here),
sharing between limiter instances (as between processes) and the client honouring Retry-After for all."""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.llm import LLMClient, ModelSpec
from aecg_bench.llm.providers import Provider, ProviderResult, Request, TransientProviderError
from aecg_bench.llm.ratelimit import Bucket, RateLimit, SharedRateLimiter, block, reserve, settle


class FakeClock:
    """Time that only moves when someone sleeps: limiter instances sharing it act like processes."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_reservations_queue_behind_each_other():
    rate, cap = 2.0, 1.0  # 2 per second, no burst beyond one
    bucket = Bucket(level=cap, updated=0.0)
    waits = []
    for _ in range(4):
        bucket, wait = reserve(bucket, 1.0, rate, cap, now=0.0)
        waits.append(wait)
    assert waits == pytest.approx([0.0, 0.5, 1.0, 1.5])


def test_refill_never_exceeds_capacity():
    bucket, wait = reserve(Bucket(level=3.0, updated=0.0), 1.0, 1.0, 3.0, now=1000.0)
    assert wait == 0.0 and bucket.level == pytest.approx(2.0)


def test_blocked_key_waits_for_retry_after_even_with_tokens_left_then_resumes_without_a_burst():
    bucket = block(Bucket(level=5.0, updated=0.0), until=12.0)
    waits = []
    for _ in range(3):
        bucket, wait = reserve(bucket, 1.0, 1.0, 5.0, now=10.0)
        waits.append(wait)
    assert waits == pytest.approx([3.0, 4.0, 5.0])  # one per second from the end of the block on


def test_settle_refunds_an_overestimate_but_not_past_capacity():
    bucket = settle(Bucket(level=-50.0, updated=0.0), -80.0, 1.0, 100.0, now=0.0)
    assert bucket.level == pytest.approx(30.0)
    assert settle(Bucket(level=90.0, updated=0.0), -80.0, 1.0, 100.0, now=0.0).level == pytest.approx(100.0)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(0.1, 50.0),
    burst=st.floats(1.0, 20.0),
    calls=st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 10.0)), min_size=1, max_size=40),
)
def test_admitted_units_never_exceed_capacity_plus_rate_times_window(rate, burst, calls):
    """Whatever the arrivals and costs, in any window [a, b] of admission times the admitted units are at
    most capacity + rate * (b - a); a single call larger than the bucket counts as a full bucket."""
    cap = burst
    bucket = Bucket(level=cap, updated=0.0)
    now, admitted = 0.0, []
    for gap, cost in calls:
        now += gap
        bucket, wait = reserve(bucket, cost, rate, cap, now)
        admitted.append((now + wait, cost))
    admitted.sort()
    for i, (a, _) in enumerate(admitted):
        total = 0.0
        for b, cost in admitted[i:]:
            total += cost
            assert total <= max(cap, max(c for _, c in calls)) + rate * (b - a) + 1e-6 * (1 + total)


def test_two_limiters_on_one_file_share_the_budget(tmp_path):
    """Two instances (two processes of a sweep) on the same file: the second waits for the first's use."""
    clock = FakeClock()
    limit = RateLimit(requests_per_minute=60)  # one per second
    first = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    second = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    assert first.acquire("k", limit, 0) == 0.0
    assert second.acquire("k", limit, 0) == pytest.approx(1.0)
    assert first.acquire("k", limit, 0) == pytest.approx(1.0)  # time moved by one second while second slept
    assert second.acquire("other-key", limit, 0) == 0.0  # keys are independent


def test_tokens_per_minute_paces_by_estimate_and_settles_by_usage(tmp_path):
    clock = FakeClock()
    limit = RateLimit(tokens_per_minute=6000, burst_s=1.0)  # 100 tokens/s, bucket of 100
    rl = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    assert rl.acquire("k", limit, 100) == 0.0
    assert rl.acquire("k", limit, 100) == pytest.approx(1.0)
    rl.settle("k", limit, estimated=100, actual=0)  # the call used nothing: refunded
    assert rl.acquire("k", limit, 100) == pytest.approx(0.0)


def test_rate_limit_needs_a_limit():
    with pytest.raises(ValueError, match="requests_per_minute or tokens_per_minute"):
        RateLimit()


class AlwaysRateLimited(Provider):
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:
        self.calls += 1
        raise TransientProviderError("429", retry_after=7.0)


def test_a_429_with_retry_after_blocks_the_key_for_every_process(tmp_path):
    from aecg_bench.errors import InfraError
    from aecg_bench.llm.spec import RetryPolicy

    clock = FakeClock()
    limit = RateLimit(requests_per_minute=6000, burst_s=10)
    spec = ModelSpec(label="m", provider="mock", model="mock/x", rate_limit=limit)
    limiter = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    client = LLMClient(
        {"m": spec},
        {"default": "m"},
        retry=RetryPolicy(max_attempts=1),
        providers={"mock": AlwaysRateLimited()},
        sleep=clock.sleep,
        rate_limiter=limiter,
    )
    with pytest.raises(InfraError):
        client.complete([{"role": "user", "content": "hi"}])
    other_process = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    # the Retry-After, then one request interval
    assert other_process.acquire(spec.provider_key, limit, 0) == pytest.approx(7.0 + 60 / 6000)


def test_client_paces_calls_through_the_shared_bucket(tmp_path):
    clock = FakeClock()
    spec = ModelSpec(
        label="m",
        provider="mock",
        model="mock/x",
        options={"policy": "echo"},
        rate_limit=RateLimit(requests_per_minute=30),  # one call every 2 s
    )
    limiter = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    client = LLMClient({"m": spec}, {"default": "m"}, sleep=clock.sleep, rate_limiter=limiter)
    for i in range(3):
        client.complete([{"role": "user", "content": f"call {i}"}])
    assert clock.slept == pytest.approx([2.0, 2.0])


def test_blocked_key_makes_another_process_wait(tmp_path):
    clock = FakeClock()
    limit = RateLimit(requests_per_minute=6000, burst_s=10)
    one = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    other = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
    one.block("k", limit, 7.0)
    assert other.acquire("k", limit, 0) == pytest.approx(7.0 + 60 / 6000)


def test_a_model_with_a_rate_limit_needs_a_limiter():
    from aecg_bench.errors import ConfigError

    spec = ModelSpec(label="m", provider="mock", model="mock/x", rate_limit=RateLimit(requests_per_minute=60))
    with pytest.raises(ConfigError, match="rate_limit"):
        LLMClient({"m": spec}, {"default": "m"})


def test_a_caller_that_wakes_into_a_block_queues_again_behind_it(tmp_path):
    """A 429 elsewhere while this caller slept: it must not fire inside the Retry-After window."""
    clock = FakeClock()
    limit = RateLimit(requests_per_minute=60)
    other = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)

    def sleep_while_another_process_gets_a_429(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 1:
            other.block("k", limit, 5.0)

    rl = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=sleep_while_another_process_gets_a_429)
    assert rl.acquire("k", limit, 0) == 0.0
    block_end = clock.now + 1.0 + 5.0
    rl.acquire("k", limit, 0)  # due in 1 s; wakes into a 5 s block
    assert clock.now == pytest.approx(block_end + 1.0)  # first in line after the block: its lapsed slot returned


class VirtualTime:
    """Time for several threads (processes of a sweep): it jumps to the next wake-up once every thread
    sleeps, so concurrent callers interleave as they would in real time, without real waiting."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.cv = threading.Condition()
        self.active = 0
        self.wakes: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.cv:
            wake = self.now + seconds
            if wake <= self.now:
                return
            self.wakes.append(wake)
            self.active -= 1
            self._advance()
            while self.now < wake:
                self.cv.wait()

    def _advance(self) -> None:
        if self.active == 0 and self.wakes:
            self.now = max(self.now, min(self.wakes))
            woken = [w for w in self.wakes if w <= self.now]
            self.wakes = [w for w in self.wakes if w > self.now]
            self.active += len(woken)
            self.cv.notify_all()

    def run(self, callers: list) -> None:
        def wrapped(fn) -> None:  # type: ignore[no-untyped-def]
            try:
                fn()
            finally:
                with self.cv:
                    self.active -= 1
                    self._advance()

        self.active = len(callers)
        threads = [threading.Thread(target=wrapped, args=(fn,)) for fn in callers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)


def test_callers_waiting_through_a_retry_after_resume_paced_not_bunched(tmp_path):
    """Six processes queue at 3 requests/s; the first request meets a 429 with Retry-After 3 s. Every
    caller waiting meanwhile is released after the block one interval apart: never two in one third of
    a second, never more than 3 in any second, none inside the block."""
    clock = VirtualTime()
    limit = RateLimit(requests_per_minute=180, burst_s=1 / 3)
    admitted: list[float] = []
    block_at: list[float] = []

    def caller(who: int):  # type: ignore[no-untyped-def]
        def go() -> None:
            rl = SharedRateLimiter(tmp_path / "rl.sqlite", clock=clock, sleep=clock.sleep)
            for i in range(3):
                rl.acquire("k", limit, 0)
                if who == 0 and i == 0:  # the provider answers 429, Retry-After: 3
                    block_at.append(clock.now)
                    rl.block("k", limit, 3.0)
                    continue
                admitted.append(clock.now)

        return go

    clock.run([caller(i) for i in range(6)])
    assert len(admitted) == 17
    (blocked,) = block_at
    assert not [t for t in admitted if blocked < t < blocked + 3.0], "nothing inside the Retry-After window"
    after = sorted(t for t in admitted if t >= blocked + 3.0)
    gaps = [b - a for a, b in itertools.pairwise(after)]
    assert min(gaps) == pytest.approx(1 / 3), "one interval apart, none released together"
    assert max(sum(1 for b in after if a <= b < a + 1.0 - 1e-9) for a in after) <= 3
