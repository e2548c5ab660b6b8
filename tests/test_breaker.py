"""The endpoint circuit breaker (llm/breaker.py) and the client's use of it, with scripted providers, an
injected clock and no network: which failures count, who probes, who waits, when an outage ends a run.
The loopback end-to-end cases are in tests/test_endpoint_faults.py."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import socket
import ssl
import threading
import time

import httpx
import openai
import pytest
from test_ratelimit import FakeClock as Clock  # time that moves only when someone sleeps

from aecg_bench.errors import InfraError, ProviderOutage
from aecg_bench.llm import LLMClient, ModelSpec, RetryPolicy, UsageMeter
from aecg_bench.llm.breaker import (
    EndpointState,
    EndpointUnreachable,
    EndpointWatch,
    SqliteStore,
    Store,
    caller_gone,
    caller_id,
    claim,
    role_of,
)
from aecg_bench.llm.client import REPLY_CHARS_PER_TOKEN, capped, endpoint_of, unreachable_line
from aecg_bench.llm.providers import (
    ConnectionFailure,
    ContextLimitError,
    Provider,
    ProviderResult,
    Request,
    TransientProviderError,
    transport_failure,
)

URL = "http://10.0.0.1:8000/v1"


@pytest.fixture(autouse=True)
def _no_endless_wait():
    """A wait that never ends fails the test in seconds instead of hanging it (loops under test)."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("still waiting after 20 s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# -- the pure transitions ------------------------------------------------------------------------


def never_gone(owner: str) -> bool:
    return False


def test_claim_makes_the_first_caller_the_prober_and_keeps_a_live_one():
    fresh = claim(EndpointState(), "a", 10.0, 60.0, never_gone)
    assert fresh == EndpointState(prober="a", beat=10.0)
    assert claim(fresh, "b", 20.0, 60.0, never_gone) == fresh, "a live prober within its lease stays"
    assert claim(fresh, "a", 20.0, 60.0, never_gone) == EndpointState(prober="a", beat=20.0), "its own beat"
    assert claim(fresh, "b", 70.0, 60.0, never_gone).prober == "a", "at the lease: still alive"
    assert claim(fresh, "b", 70.5, 60.0, never_gone) == EndpointState(prober="b", beat=70.5), "past it: replaced"
    assert claim(fresh, "b", 20.0, 60.0, lambda o: o == "a").prober == "b", "a gone prober is replaced"
    for final in (EndpointState(answered=True), EndpointState(dead="refused")):
        assert claim(final, "b", 20.0, 60.0, never_gone) == final, "a verdict is final"


def test_role_of_reads_the_verdict_first():
    assert role_of(EndpointState(answered=True, dead="x", prober="a"), "a") == "dead"
    assert role_of(EndpointState(answered=True, prober="a"), "a") == "answered"
    assert role_of(EndpointState(prober="a"), "a") == "probe"
    assert role_of(EndpointState(prober="a"), "b") == "wait"
    assert role_of(EndpointState(), "b") == "wait"


def test_caller_gone_knows_ended_threads_and_processes_on_this_host_only():
    assert not caller_gone(caller_id())
    done = threading.Thread(target=lambda: None)
    done.start()
    done.join()
    assert caller_gone(f"{socket.gethostname()}:{os.getpid()}:{done.ident}") or done.ident in {
        t.ident for t in threading.enumerate()
    }
    proc = mp.get_context("fork").Process(target=lambda: None)
    proc.start()
    proc.join()
    assert caller_gone(f"{socket.gethostname()}:{proc.pid}:1")
    assert not caller_gone(f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}")
    assert not caller_gone(f"other-host-{socket.gethostname()}:{proc.pid}:1"), "another machine: only its lease"
    assert not caller_gone(f"{socket.gethostname()}:not-a-pid:1")


def test_a_live_prober_process_is_not_gone_and_asking_does_not_signal_it(monkeypatch):
    ctx = mp.get_context("fork")
    started = ctx.Event()

    def live() -> None:
        started.set()
        time.sleep(30)

    proc = ctx.Process(target=live)
    proc.start()
    try:
        assert started.wait(10)
        assert not caller_gone(f"{socket.gethostname()}:{proc.pid}:1")
        time.sleep(0.2)
        assert proc.is_alive(), "the liveness probe sent no signal that ends it"
    finally:
        proc.kill()
        proc.join()

    def not_ours(pid: int, signum: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_ours)
    assert not caller_gone(f"{socket.gethostname()}:{proc.pid}:1"), "another user's process: alive"


# -- the watch -------------------------------------------------------------------------------------


class CountingStore(Store):
    def __init__(self) -> None:
        super().__init__()
        self.updates = 0
        self.reads = 0

    def update(self, key, change):  # type: ignore[no-untyped-def]
        self.updates += 1
        return super().update(key, change)

    def read(self, key):  # type: ignore[no-untyped-def]
        self.reads += 1
        return super().read(key)


def test_an_answer_is_written_once_and_then_no_call_reads_the_store():
    store, clock = CountingStore(), Clock()
    watch = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep)
    assert watch.check(URL) is None and store.reads == 1
    watch.answered(URL)
    watch.answered(URL)
    assert store.updates == 1 and store.read("s|" + URL).answered
    assert watch.check(URL) is None and store.reads == 2, "known to answer: no read"
    assert EndpointWatch(store, scope="other").check(URL) is None


def test_an_answer_lifts_a_verdict_reached_meanwhile():
    store = Store()
    store.update("s|" + URL, lambda s: EndpointState(dead="refused", prober="x"))
    watch = EndpointWatch(store, scope="s")
    watch.answered(URL)
    assert store.read("s|" + URL).dead is None and EndpointWatch(store, scope="s").check(URL) is None


def test_the_first_failure_probes_others_wait_for_its_verdict_and_then_stop():
    store, clock = Store(), Clock()
    prober = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep)
    assert prober.failed(URL, connected=False, lease_s=60) == "probe"
    assert prober.failed(URL, connected=True, lease_s=60) == "probe", "a silent server counts too"

    waiter_clock = Clock()

    def verdict_arrives(seconds: float) -> None:
        waiter_clock.sleep(seconds)
        assert prober.give_up(URL, "connection refused (3 attempts)") == "connection refused (3 attempts)"

    waiter = EndpointWatch(store, scope="s", clock=clock, sleep=verdict_arrives, poll_s=0.5)
    assert _other_caller(lambda: waiter.failed(URL, connected=False, lease_s=60)) == "dead"
    assert waiter_clock.slept == [0.5]
    assert waiter.check(URL) == "connection refused (3 attempts)"
    assert prober.give_up(URL, "another reason") == "connection refused (3 attempts)", "the first verdict stays"


def _other_caller(fn):  # type: ignore[no-untyped-def]
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)  # a mutant that loops forever must not keep the process
    t.start()
    t.join(timeout=30)
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_a_waiter_whose_prober_sees_an_answer_retries_as_an_ordinary_failure():
    store, clock = Store(), Clock()
    prober = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep)
    assert prober.failed(URL, connected=False, lease_s=60) == "probe"

    def answer_arrives(seconds: float) -> None:
        prober.answered(URL)

    waiter = EndpointWatch(store, scope="s", clock=clock, sleep=answer_arrives)
    assert _other_caller(lambda: waiter.failed(URL, connected=False, lease_s=60)) == "outage"
    assert _other_caller(lambda: waiter.failed(URL, connected=True, lease_s=60)) == "transient"
    assert prober.give_up(URL, "refused") is None, "it answered meanwhile: no verdict"


def test_check_waits_while_another_caller_probes_and_not_past_its_lease():
    store, clock = Store(), Clock()
    prober = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep)
    prober.failed(URL, connected=False, lease_s=60)
    naps: list[float] = []

    def verdict(seconds: float) -> None:
        naps.append(seconds)
        prober.give_up(URL, "TLS handshake failed")

    late = EndpointWatch(store, scope="s", clock=clock, sleep=verdict, poll_s=0.25)
    assert _other_caller(lambda: late.check(URL, 60)) == "TLS handshake failed" and naps == [0.25]

    store2 = Store()
    EndpointWatch(store2, scope="s", clock=clock).failed(URL, connected=False, lease_s=60)
    clock.now += 61
    stale = EndpointWatch(store2, scope="s", clock=clock, sleep=lambda s: pytest.fail("must not wait"))
    assert _other_caller(lambda: stale.check(URL, 60)) is None, "a prober silent past its lease is not waited for"
    assert prober.check(URL, 60) is not None
    own = EndpointWatch(store2, scope="s", clock=clock, sleep=lambda s: pytest.fail("must not wait"))
    own.failed(URL, connected=False, lease_s=60)  # this thread probes now
    assert own.check(URL, 60) is None, "a prober does not wait for itself"


def test_an_outage_is_timed_from_its_first_failure_and_an_answer_ends_it():
    store, clock = Store(), Clock()
    watch = EndpointWatch(store, scope="s", outage_window_s=300, clock=clock, sleep=clock.sleep)
    watch.answered(URL)
    assert watch.outage_over(URL) is None
    assert watch.failed(URL, connected=False, lease_s=60) == "outage"
    clock.now += 299
    assert watch.failed(URL, connected=False, lease_s=60) == "outage", "not restarted by a later failure"
    assert watch.outage_over(URL) is None
    clock.now += 1
    assert watch.outage_over(URL) == pytest.approx(300)
    watch.answered(URL)
    assert watch.outage_over(URL) is None
    error = watch.outage("served", URL, 301.4, "connection refused")
    assert isinstance(error, ProviderOutage)
    assert str(error) == (
        f"model 'served' at {URL} stopped answering 301 s ago, longer than the outage window "
        "(runtime.retry.outage_window_s=300); last error: connection refused; the sample in flight was not "
        "recorded: rerun the same command to resume once it is back"
    )


def test_the_sqlite_store_keeps_every_field_and_changes_read_the_stored_state(tmp_path):
    path = tmp_path / "not" / "yet" / "endpoints.sqlite"
    one, two = SqliteStore(path), SqliteStore(path)
    full = EndpointState(answered=False, prober="h:1:2", beat=12.5, dead="connection refused")
    one.update("k", lambda s: full)
    assert two.read("k") == full
    assert two.update("k", lambda s: claim(s, "h:3:4", 13.0, 60, never_gone)) == full, "the dead verdict read back"
    one.update("j", lambda s: claim(s, "h:1:2", 5.0, 60, never_gone))
    assert two.update("j", lambda s: claim(s, "h:3:4", 6.0, 60, never_gone)).prober == "h:1:2"


def test_a_day_old_sweep_is_dropped_and_a_younger_one_kept(tmp_path):
    from aecg_bench.llm.breaker import STALE_S

    path = tmp_path / "endpoints.sqlite"
    store = SqliteStore(path)
    for key, age in (("young", STALE_S - 60), ("old", STALE_S + 60)):
        store.update(key, lambda s: EndpointState(dead="refused"))
        store._conn().execute("UPDATE endpoints SET updated = updated - ? WHERE key = ?", (age, key))
    again = SqliteStore(path)
    assert again.read("young").dead == "refused" and again.read("old") == EndpointState()


def test_the_sqlite_store_is_shared_and_drops_rows_of_old_sweeps(tmp_path):
    path = tmp_path / "endpoints.sqlite"
    one = SqliteStore(path)
    one.update("old|x", lambda s: EndpointState(dead="refused"))
    one._conn().execute("UPDATE endpoints SET updated = updated - 2 * 86400 WHERE key = 'old|x'")
    one.update("new|x", lambda s: EndpointState(answered=True, prober=None, beat=3.0))
    two = SqliteStore(path)
    assert two.read("old|x") == EndpointState(), "a day-old sweep's verdict is gone"
    assert two.read("new|x") == EndpointState(answered=True, beat=3.0)
    with pytest.raises(RuntimeError):
        two.update("new|x", lambda s: (_ for _ in ()).throw(RuntimeError("boom")))
    assert two.read("new|x").answered, "a failed change is rolled back"


# -- the client ------------------------------------------------------------------------------------


class Scripted(Provider):
    """Raises or answers as scripted, one entry per attempt (the last repeats)."""

    def __init__(self, *script: object) -> None:
        self.script = list(script)
        self.calls = 0

    def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if isinstance(step, BaseException):
            raise step
        return ProviderResult(text=str(step))


def refused() -> ConnectionFailure:
    return ConnectionFailure("InternalServerError: connection refused", "connection refused")


def silent() -> ConnectionFailure:
    return ConnectionFailure("Timeout: no answer", "the server sent no answer in time", connected=True)


def _client(provider: Provider, clock: Clock, *, attempts: int = 3, window: float = 300.0) -> LLMClient:
    spec = ModelSpec(label="served", model="openai/x", api_base=URL + "/", max_tokens=8)
    watch = EndpointWatch(Store(), scope="s", outage_window_s=window, clock=clock, sleep=clock.sleep)
    return LLMClient(
        {"served": spec},
        {"default": "served"},
        retry=RetryPolicy(max_attempts=attempts, base_delay_s=1.0, max_delay_s=8.0),
        providers={"litellm": provider},
        sleep=clock.sleep,
        endpoints=watch,
    )


def test_an_endpoint_that_never_answers_stops_after_one_cycle_with_the_line():
    clock, provider = Clock(), Scripted(refused())
    meter = UsageMeter()
    client = _client(provider, clock).with_context(meter=meter)
    with pytest.raises(EndpointUnreachable) as info:
        client.complete([{"role": "user", "content": "hi"}])
    assert provider.calls == 3 and len(clock.slept) == 2
    assert str(info.value).startswith(f"model 'served' cannot reach {URL}: connection refused (3 attempts;")
    assert meter.total()["errors"] == 1 and meter.total()["retries"] == 2
    with pytest.raises(EndpointUnreachable):  # the verdict holds: no further attempt
        client.complete([{"role": "user", "content": "another"}])
    assert provider.calls == 3


def test_after_an_answer_refused_connections_are_retried_until_the_outage_window_ends():
    clock, provider = Clock(), Scripted("ok", refused())
    client = _client(provider, clock, window=60.0)
    assert client.complete([{"role": "user", "content": "hi"}]).text == "ok"
    with pytest.raises(ProviderOutage, match=r"stopped answering \d+ s ago"):
        client.complete([{"role": "user", "content": "next"}])
    assert provider.calls > 1 + 3, "past max_attempts: an outage is not counted against them"
    assert 60.0 <= sum(clock.slept) < 60.0 + 8.0 + 1e-9, "stopped at the first retry past the window"


def test_an_outage_that_ends_within_the_window_loses_nothing():
    clock, provider = Clock(), Scripted("ok", refused(), refused(), refused(), refused(), "back")
    client = _client(provider, clock)
    client.complete([{"role": "user", "content": "hi"}])
    out = client.complete([{"role": "user", "content": "next"}])
    assert out.text == "back" and out.retries == 4


def test_a_slow_answer_from_a_live_endpoint_is_an_ordinary_counted_retry():
    clock, provider = Clock(), Scripted("ok", silent())
    client = _client(provider, clock)
    client.complete([{"role": "user", "content": "hi"}])
    with pytest.raises(InfraError, match="failed 3 times; last error: Timeout"):
        client.complete([{"role": "user", "content": "next"}])
    assert provider.calls == 1 + 3


def test_any_http_reply_counts_as_an_answer():
    for first in (TransientProviderError("HTTP 500"), ContextLimitError("too long")):
        clock = Clock()
        provider = Scripted(first, refused())
        client = _client(provider, clock, window=5.0)
        with pytest.raises((ContextLimitError, ProviderOutage)):
            client.complete([{"role": "user", "content": "hi"}])
        with pytest.raises(ProviderOutage):  # answered once: refusals are an outage, not a dead endpoint
            client.complete([{"role": "user", "content": "next"}])


def test_the_empty_reply_of_a_live_endpoint_is_retried_and_counted():
    clock, provider = Clock(), Scripted("", "ok")
    out = _client(provider, clock).complete([{"role": "user", "content": "hi"}])
    assert out.text == "ok" and out.retries == 1 and clock.slept and clock.slept[0] <= 1.0


def test_where_a_model_is_reached_and_what_the_line_advises():
    assert endpoint_of(ModelSpec(label="m", model="openai/x", api_base=URL + "/")) == URL
    assert endpoint_of(ModelSpec(label="m", model="openai/gpt-4o")) == "openai (provider endpoint)"
    assert endpoint_of(ModelSpec(label="m", provider="mock", model="mock/x")) is None
    assert endpoint_of(ModelSpec(label="m", model="aecg-local/smol")) is None, "in-process"
    served = ModelSpec(label="m", model="aecg-local/smol", options={"serve": "server"})
    assert endpoint_of(served) == "aecg-local/smol (llama-server)"
    line = unreachable_line(ModelSpec(label="served", model="openai/x", api_base=URL), URL, "refused")
    assert line == (
        f"model 'served' cannot reach {URL}: refused; start its server there (vLLM: vllm serve <model> --port "
        "<port>; llama.cpp: llama-server -m <gguf> --port <port>) or point the model at the right URL (model=server "
        "reads AECG_API_BASE; or set model.models.served.api_base), then rerun to resume"
    )
    hosted = unreachable_line(ModelSpec(label="g", model="openai/gpt-4o"), "openai", "refused", then="")
    assert "HTTPS_PROXY" in hosted and "AECG_API_BASE" not in hosted and hosted.endswith("status")


def test_a_reply_is_capped_by_its_max_tokens_only_when_far_past_it(caplog):
    fits = ProviderResult(text="x" * (8 * REPLY_CHARS_PER_TOKEN))
    assert capped(fits, 8, "m") is fits
    cut = capped(ProviderResult(text="x" * (8 * REPLY_CHARS_PER_TOKEN + 1)), 8, "m")
    assert cut.text == "x" * (8 * REPLY_CHARS_PER_TOKEN) and cut.finish_reason == "length"
    assert len(capped(ProviderResult(text="xy" * 100), 0, "m").text) == REPLY_CHARS_PER_TOKEN
    with caplog.at_level(logging.WARNING, logger="aecg_bench.llm"):
        capped(ProviderResult(text="x" * 1000), 8, "served")
    assert caplog.messages[-1] == (
        "model 'served' sent 1000 characters for max_tokens=8 (the server ignored the limit); kept the first 256"
    )


# -- which exceptions are transport failures -----------------------------------------------------------


def _raised(*chain: BaseException) -> BaseException:
    """The last exception, raised while handling each earlier one (as litellm and openai wrap)."""
    caught: BaseException | None = None
    for exc in chain:
        try:
            if caught is None:
                raise exc
            try:
                raise caught
            except BaseException:
                raise exc  # noqa: B904 (the implicit __context__ is what is under test)
        except BaseException as now:
            caught = now
    assert caught is not None
    return caught


def _verify_failed() -> ssl.SSLCertVerificationError:
    exc = ssl.SSLCertVerificationError(1, "certificate verify failed")
    exc.verify_message = "self-signed certificate"
    return exc


def _ssl_reason() -> ssl.SSLError:
    exc = ssl.SSLError(1, "alert")
    exc.reason = "TLSV1_ALERT_PROTOCOL_VERSION"
    return exc


_REQUEST = httpx.Request("POST", URL)


@pytest.mark.parametrize(
    ("root", "reason", "connected"),
    [
        (_verify_failed(), "TLS handshake failed (self-signed certificate)", False),
        (_ssl_reason(), "TLS handshake failed (TLSV1_ALERT_PROTOCOL_VERSION)", False),
        (ssl.SSLError(1, "eof"), "TLS handshake failed (handshake failed)", False),
        (socket.gaierror(-2, "Name or service not known"), "the host name does not resolve", False),
        (ConnectionRefusedError(111, "Connection refused"), "connection refused", False),
        (httpx.ProxyError("proxy down"), "the proxy failed", False),
        (httpx.ConnectTimeout("connect timed out"), "connecting timed out", False),
        (httpx.ReadTimeout("read timed out"), "the server accepted the connection but sent no answer in time", True),
        (httpx.WriteTimeout("write timed out"), "the server accepted the connection but sent no answer in time", True),
        (httpx.PoolTimeout("pool timed out"), "the server accepted the connection but sent no answer in time", True),
        (
            openai.APITimeoutError(request=_REQUEST),
            "the server accepted the connection but sent no answer in time",
            True,
        ),
        (httpx.RemoteProtocolError("Server disconnected"), "the server closed the connection without an answer", True),
        (httpx.ConnectError("[Errno 101] Network is unreachable"), "cannot connect", False),
        (openai.APIConnectionError(request=_REQUEST), "cannot connect", False),
    ],
)
def test_transport_failures_are_read_from_the_exception_chain(root, reason, connected):
    exc = _raised(root, RuntimeError("openai wrapper"), RuntimeError("litellm.InternalServerError"))
    failure = transport_failure(exc)
    assert failure is not None and failure.reason == reason and failure.connected is connected
    assert str(failure) == f"RuntimeError: {reason} ({str(root) or type(root).__name__})"


def test_the_detail_is_the_root_cause_in_one_short_line():
    long = transport_failure(_raised(ConnectionRefusedError(111, "x\n" * 150), RuntimeError("wrapper")))
    detail = "[Errno 111] " + "x " * 92 + "x..."
    assert len(detail) == 200 and long is not None and str(long) == f"RuntimeError: connection refused ({detail})"
    empty = transport_failure(_raised(httpx.ReadTimeout(""), ValueError("openai"), RuntimeError("litellm")))
    assert empty is not None and str(empty).endswith("(ReadTimeout)"), "an empty message: the exception's type"


def test_an_http_reply_is_never_a_transport_failure_whatever_its_text_says():
    assert transport_failure(RuntimeError("502 Bad Gateway: upstream connect error, connection refused")) is None
    assert transport_failure(_raised(ValueError("bad json"), RuntimeError("wrapped"))) is None


def test_connection_failures_are_transient_for_callers_that_do_not_know_them():
    assert issubclass(ConnectionFailure, TransientProviderError)


def test_runs_that_meet_the_verdict_stop_with_the_same_line_without_calling():
    clock, store = Clock(), Store()
    spec = ModelSpec(label="served", model="openai/x", api_base=URL, max_tokens=8)

    def client(provider: Provider) -> LLMClient:
        watch = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep)
        retry = RetryPolicy(max_attempts=2, base_delay_s=1.0, max_delay_s=8.0)
        return LLMClient({"served": spec}, {"default": "served"}, retry=retry, providers={"litellm": provider},
                         sleep=clock.sleep, endpoints=watch)  # fmt: skip

    first = Scripted(refused())
    with pytest.raises(EndpointUnreachable):
        client(first).complete([{"role": "user", "content": "hi"}])
    later = Scripted("never asked")
    with pytest.raises(EndpointUnreachable) as info:
        client(later).complete([{"role": "user", "content": "hi"}])
    assert later.calls == 0
    reason = "connection refused (2 attempts; it has not answered once in this run)"
    assert str(info.value) == unreachable_line(spec, URL, reason)


def test_a_caller_that_failed_while_another_probed_stops_with_the_probers_line():
    clock, store = Clock(), Store()
    spec = ModelSpec(label="served", model="openai/x", api_base=URL, max_tokens=8)
    prober = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep)
    assert prober.failed(URL, connected=False, lease_s=60) == "probe"

    def verdict(seconds: float) -> None:
        prober.give_up(URL, "TLS handshake failed (self-signed certificate) (6 attempts; ...)")

    waiter = EndpointWatch(store, scope="s", clock=clock, sleep=verdict)
    first_check = {"done": False}
    real_check = waiter.check

    def check_once_idle(endpoint: str, lease_s: float = 0.0) -> str | None:
        if not first_check["done"]:  # it started before the probe: its first call goes out
            first_check["done"] = True
            return None
        return real_check(endpoint, lease_s)

    waiter.check = check_once_idle  # type: ignore[method-assign]
    client = LLMClient({"served": spec}, {"default": "served"}, providers={"litellm": Scripted(refused())},
                       sleep=clock.sleep, endpoints=waiter)  # fmt: skip
    with pytest.raises(EndpointUnreachable) as info:
        _other_caller(lambda: client.complete([{"role": "user", "content": "hi"}]))
    assert str(info.value) == unreachable_line(
        spec, URL, "TLS handshake failed (self-signed certificate) (6 attempts; ...)"
    )


@pytest.mark.parametrize("first", ["ok", "refused"])
def test_a_run_waits_for_a_live_prober_until_its_lease_ends(first):
    """lease = timeout + max_delay + 30 s: a prober silent for 100 s of a 158 s lease is waited for 58 s more,
    before the first call (or, for a call that went out, before its retry)."""
    clock, store = Clock(), Store()
    store.update("s|" + URL, lambda s: EndpointState(prober="another-host:1:1", beat=clock.now - 100))
    spec = ModelSpec(label="served", model="openai/x", api_base=URL, max_tokens=8, timeout_s=120)
    watch = EndpointWatch(store, scope="s", clock=clock, sleep=clock.sleep, poll_s=0.5)
    provider = Scripted(refused(), "ok") if first == "refused" else Scripted("ok")
    client = LLMClient({"served": spec}, {"default": "served"}, providers={"litellm": provider},
                       retry=RetryPolicy(max_attempts=3, base_delay_s=0.0, max_delay_s=8.0),
                       sleep=clock.sleep, endpoints=watch)  # fmt: skip
    assert client.complete([{"role": "user", "content": "hi"}]).text == "ok"
    assert 58.0 <= sum(clock.slept) < 58.5 + 1e-9, sum(clock.slept)
    assert store.read("s|" + URL).answered


def test_the_request_built_is_the_one_sent_and_empty_replies_end_as_infra_errors():
    seen: list[Request] = []

    class Recording(Scripted):
        def __call__(self, spec: ModelSpec, request: Request) -> ProviderResult:
            seen.append(request)
            return super().__call__(spec, request)

    clock = Clock()
    with pytest.raises(InfraError, match=r"failed 3 times; last error: empty output$"):
        _client(Recording(""), clock).complete([{"role": "user", "content": "hello there"}])
    assert len(seen) == 3 and all(r.messages == [{"role": "user", "content": "hello there"}] for r in seen)


def test_an_outage_stop_is_counted_and_names_the_model_the_url_and_the_last_error():
    clock, provider = Clock(), Scripted("ok", refused())
    meter = UsageMeter()
    client = _client(provider, clock, window=10.0).with_context(meter=meter)
    client.complete([{"role": "user", "content": "hi"}])
    with pytest.raises(ProviderOutage) as info:
        client.complete([{"role": "user", "content": "next"}], account="planner")
    assert str(info.value).startswith(f"model 'served' at {URL} stopped answering ")
    assert "; last error: InternalServerError: connection refused; the sample" in str(info.value)
    retries = provider.calls - 2
    assert meter.by_role()["planner"]["errors"] == 1 and meter.by_role()["planner"]["retries"] == retries


def test_an_in_process_model_never_touches_the_sweeps_breaker():
    store = CountingStore()
    spec = ModelSpec(label="mock", provider="mock", model="mock/x")
    watch = EndpointWatch(store, scope="s")
    LLMClient({"mock": spec}, {"default": "mock"}, endpoints=watch).complete([{"role": "user", "content": "hi"}])
    assert store.updates == 0 and store.reads == 0
