"""Thread placement of the embedded model: threads x concurrent jobs never exceed the cores."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.errors import ConfigError
from aecg_bench.llm import threads


@pytest.fixture(autouse=True)
def _one_job(monkeypatch):
    monkeypatch.delenv(threads.FLIGHT_ENV, raising=False)
    threads.set_concurrent_jobs(1)
    yield
    threads.set_concurrent_jobs(1)


@settings(deadline=None)
@given(cores=st.integers(1, 256), jobs=st.integers(1, 64))
def test_threads_times_jobs_fit_the_cores_and_use_them(cores, jobs):
    t = threads.threads_per_job(cores, jobs)
    assert t >= 1
    if jobs <= cores:
        assert t * jobs <= cores  # no oversubscription
        assert (t + 1) * jobs > cores  # and no idle core a thread more could use
    else:
        assert t == 1  # more jobs than cores: one thread each, the jobs themselves oversubscribe


def test_two_cores_two_jobs_is_one_thread_each_and_one_job_gets_both():
    assert threads.threads_per_job(2, 2) == 1
    assert threads.threads_per_job(2, 1) == 2
    assert threads.threads_per_job(8, 3) == 2


def test_joblib_n_jobs_conventions():
    assert threads.effective_jobs(None, 8) == 1
    assert threads.effective_jobs(2, 8) == 2
    assert threads.effective_jobs(-1, 8) == 8  # all cores
    assert threads.effective_jobs(-2, 8) == 7
    assert threads.effective_jobs(-20, 8) == 1


def test_auto_follows_the_recorded_jobs_and_an_integer_overrides(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    assert threads.model_threads("auto") == 4
    assert threads.model_threads(None) == 4
    assert threads.model_threads() == 4  # auto unless told
    threads.set_concurrent_jobs(2)
    assert threads.model_threads("auto") == 2
    threads.set_concurrent_jobs(-1)  # joblib: one job per core
    assert threads.model_threads("auto") == 1
    assert threads.model_threads(3) == 3 and threads.model_threads("3") == 3


@pytest.mark.parametrize("bad", [0, -1, "many", "1.5"])
def test_bad_thread_counts_fail_in_one_line(bad):
    with pytest.raises(ConfigError, match=r"n_threads=.*valid: 'auto' or a positive integer"):
        threads.model_threads(bad)


def test_a_bad_n_threads_in_the_model_config_fails_before_the_run(make_config):
    from aecg_bench.runner.config import parse_run_config, validate_components

    validate_components(parse_run_config(make_config("model=local")))  # shipped config: auto
    with pytest.raises(ConfigError, match="n_threads='lots'"):
        validate_components(parse_run_config(make_config("model=local", "model.models.local.options.n_threads=lots")))


def test_the_embedded_model_uses_the_same_threads_for_prompt_and_generation(monkeypatch, tmp_path):
    """llama-cpp-python's default n_threads_batch is every core: each job of a sweep would use them all."""
    import llama_cpp

    from aecg_bench.llm import local

    seen: dict[str, Any] = {}

    class FakeLlama:
        _logits_all = False

        def __init__(self, **kwargs: Any) -> None:
            seen.update(kwargs)

        def n_vocab(self) -> int:
            return 8

    monkeypatch.setattr(llama_cpp, "Llama", FakeLlama)
    monkeypatch.setattr(local, "model_path", lambda name: tmp_path / "model.gguf")
    monkeypatch.setattr(local, "_models", {})
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads.set_concurrent_jobs(2)
    first = local.load("smollm2-135m-instruct", n_ctx=512, n_threads="auto", ram_cache_mb=0)
    assert seen["n_threads"] == 1 and seen["n_threads_batch"] == 1
    threads.set_concurrent_jobs(1)
    # one copy per process whatever the threads: they change per call (next test), not by reloading
    assert local.load("smollm2-135m-instruct", n_ctx=512, n_threads="auto", ram_cache_mb=0) is first


@settings(deadline=None)
@given(cores=st.integers(1, 64), pids=st.sets(st.integers(1, 10_000), min_size=1, max_size=80))
def test_the_runs_in_flight_share_every_core_and_never_more(cores, pids):
    shares = [threads.share_of_cores(cores, sorted(pids), pid) for pid in pids]
    assert min(shares) >= 1
    if len(pids) <= cores:
        assert sum(shares) == cores  # no idle core
        assert max(shares) - min(shares) <= 1  # as even as whole threads allow
    else:
        assert set(shares) == {1}


def _other_live_pid() -> int:
    import os

    return os.getppid()


def test_auto_threads_follow_the_runs_in_flight(monkeypatch, tmp_path):
    """Two runs on two cores: one thread each; the other run ends (or dies): this one takes both."""
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads.set_concurrent_jobs(2)  # what a sweep of two jobs records at its start
    with threads.sweep_flight() as folder:
        other = folder / str(_other_live_pid())
        with threads.run_in_flight():
            assert threads.model_threads("auto") == 2  # alone in flight
            other.touch()
            assert threads.model_threads("auto") == 1
            other.unlink()  # the other run finished
            assert threads.model_threads("auto") == 2
            (folder / "999999999").touch()  # a run killed with -9 left its file: not counted, removed
            assert threads.model_threads("auto") == 2 and not (folder / "999999999").exists()
            assert threads.model_threads(1) == 1  # an explicit count still wins
        assert not any(folder.iterdir())  # the run's file goes with it
        assert threads.model_threads("auto") == 1  # not in flight: the launcher's n_jobs decides
    assert threads.FLIGHT_ENV not in __import__("os").environ


def test_a_sweep_removes_the_folders_of_killed_launchers(monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead, live = tmp_path / "aecg-flight-999999999-x", tmp_path / f"aecg-flight-{_other_live_pid()}-y"
    dead.mkdir()
    live.mkdir()
    with threads.sweep_flight() as folder:
        assert folder.parent == tmp_path
    assert not dead.exists() and live.exists() and not folder.exists()


def test_a_run_in_flight_on_another_host_falls_back_to_the_launchers_jobs(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads.set_concurrent_jobs(2)
    with threads.sweep_flight():
        monkeypatch.setenv(threads.FLIGHT_HOST_ENV, "another-host")
        with threads.run_in_flight():
            assert threads.model_threads("auto") == 1


def test_each_call_of_the_embedded_model_takes_the_threads_of_the_moment(monkeypatch, tmp_path):
    """The model is loaded once; its threads follow the runs in flight from one call to the next."""
    import llama_cpp

    from aecg_bench.llm import local

    set_calls: list[tuple[int, int]] = []
    loads: list[dict[str, Any]] = []

    class FakeCtx:
        def set_n_threads(self, n: int, n_batch: int) -> None:
            set_calls.append((n, n_batch))

    class FakeLlama:
        _logits_all = False

        def __init__(self, **kwargs: Any) -> None:
            loads.append(kwargs)
            self.n_threads = kwargs["n_threads"]
            self.n_threads_batch = kwargs["n_threads_batch"]
            self.context_params = type("P", (), {"n_threads": self.n_threads, "n_threads_batch": self.n_threads})()
            self._ctx = FakeCtx()

        def n_vocab(self) -> int:
            return 8

        def n_ctx(self) -> int:
            return 512

        def tokenize(self, text: bytes, add_bos: bool = False) -> list[int]:
            return list(range(len(text.split())))

        def create_chat_completion(self, **call: Any) -> dict[str, Any]:
            seen_threads.append((self.n_threads, self.n_threads_batch, self.context_params.n_threads))
            return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {}}

    seen_threads: list[tuple[int, int, int]] = []
    monkeypatch.setattr(llama_cpp, "Llama", FakeLlama)
    monkeypatch.setattr(local, "model_path", lambda name: tmp_path / "model.gguf")
    monkeypatch.setattr(local, "_models", {})
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads.set_concurrent_jobs(2)

    def call() -> None:
        from litellm.types.utils import ModelResponse

        local.LocalModelHandler().completion(
            "smollm2-135m-instruct", [{"role": "user", "content": "hi"}], "", {}, ModelResponse(),
            None, None, None, None, {"n_ctx": 512, "n_threads": "auto", "ram_cache_mb": 0, "max_tokens": 4},
        )  # fmt: skip

    with threads.sweep_flight() as folder, threads.run_in_flight():
        other = folder / str(_other_live_pid())
        other.touch()
        call()
        other.unlink()
        call()
        call()
        other.touch()
        call()
    assert len(loads) == 1 and loads[0]["n_threads"] == loads[0]["n_threads_batch"] == 1
    assert seen_threads == [(1, 1, 1), (2, 2, 2), (2, 2, 2), (1, 1, 1)]
    assert set_calls == [(2, 2), (1, 1)]  # set only when the share changes


def test_usable_cores_are_the_affinity_else_the_cpu_count(monkeypatch):
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {3})
    assert threads.usable_cores() == 1  # taskset/containers narrow it to one core

    def no_affinity(pid: int) -> set[int]:
        raise OSError("not here")

    monkeypatch.setattr(threads.os, "sched_getaffinity", no_affinity)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 6)
    assert threads.usable_cores() == 6
    monkeypatch.setattr(threads.os, "cpu_count", lambda: None)
    assert threads.usable_cores() == 1
    monkeypatch.delattr(threads.os, "sched_getaffinity")  # not Linux
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 3)
    assert threads.usable_cores() == 3


def test_zero_jobs_is_one_and_a_run_not_yet_listed_gets_its_share():
    assert threads.effective_jobs(0, 8) == 1
    assert threads.threads_per_job(4, 0) == 4
    assert threads.share_of_cores(2, [], 7) == 2  # its own file not seen yet: counted anyway
    assert threads.share_of_cores(3, [5], 9) == 1 and threads.share_of_cores(3, [9], 5) == 2  # remainder: lowest pid
    assert threads.share_of_cores(1, [1, 2, 3], 2) == 1


def test_a_flight_folder_without_a_host_is_this_hosts(monkeypatch, tmp_path):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads.set_concurrent_jobs(2)
    monkeypatch.setenv(threads.FLIGHT_ENV, str(tmp_path))
    monkeypatch.delenv(threads.FLIGHT_HOST_ENV, raising=False)
    with threads.run_in_flight():
        assert (tmp_path / str(os.getpid())).exists()
        assert threads.model_threads("auto") == 2  # counted: alone in flight
    monkeypatch.setenv(threads.FLIGHT_ENV, "")
    assert threads.model_threads("auto") == 1  # empty: no folder, the launcher's jobs


def test_runs_in_flight_skip_other_files_and_a_missing_folder(monkeypatch, tmp_path):
    (tmp_path / "notes").touch()
    (tmp_path / str(os.getpid())).touch()
    (tmp_path / "999999999").touch()
    (tmp_path / str(os.getppid())).touch()
    assert sorted(threads.runs_in_flight(tmp_path)) == sorted([os.getpid(), os.getppid()])
    assert (tmp_path / "notes").exists() and not (tmp_path / "999999999").exists()
    assert threads.runs_in_flight(tmp_path / "gone") == []
    (tmp_path / "999999998").mkdir()  # a dead run's entry that cannot be removed: skipped, not fatal
    assert sorted(threads.runs_in_flight(tmp_path)) == sorted([os.getpid(), os.getppid()])


def test_a_pid_this_user_may_not_signal_is_alive(monkeypatch):
    def refuse(pid: int, sig: int) -> None:
        raise PermissionError

    monkeypatch.setattr(threads.os, "kill", refuse)
    assert threads._alive(1)
    monkeypatch.setattr(threads.os, "kill", lambda pid, sig: None)
    assert threads._alive(1)


def test_a_sweep_restores_the_environment_it_found_and_names_its_folder_after_itself(monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv(threads.FLIGHT_ENV, "/outer")
    monkeypatch.setenv(threads.FLIGHT_HOST_ENV, "outer-host")
    with threads.sweep_flight() as folder:
        assert folder.name.startswith(f"aecg-flight-{os.getpid()}-")
        assert os.environ[threads.FLIGHT_ENV] == str(folder)
        assert os.environ[threads.FLIGHT_HOST_ENV] == socket.gethostname()
    assert os.environ[threads.FLIGHT_ENV] == "/outer" and os.environ[threads.FLIGHT_HOST_ENV] == "outer-host"
    monkeypatch.delenv(threads.FLIGHT_HOST_ENV)
    with threads.sweep_flight():
        pass
    assert threads.FLIGHT_HOST_ENV not in os.environ


def test_a_run_whose_sweep_folder_is_gone_runs_on_the_launchers_jobs(monkeypatch, tmp_path):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads.set_concurrent_jobs(2)
    monkeypatch.setenv(threads.FLIGHT_ENV, str(tmp_path / "gone"))
    monkeypatch.setenv(threads.FLIGHT_HOST_ENV, socket.gethostname())
    with threads.run_in_flight():
        assert threads.model_threads("auto") == 1
    monkeypatch.setenv(threads.FLIGHT_ENV, str(tmp_path))
    with threads.run_in_flight():
        (tmp_path / str(os.getpid())).unlink()  # someone tidied the folder: the run still ends cleanly


def test_asking_whether_a_run_is_alive_sends_it_no_signal():
    import subprocess
    import sys

    # SIGHUP's default action restored: a campaign started under nohup passes SIG_IGN down to its children
    code = (
        "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_DFL); print('ready', flush=True); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        assert threads._alive(child.pid)
        time.sleep(0.2)  # a signal, had one been sent, has been delivered
        assert child.poll() is None  # still running (signal 0 only probes)
    finally:
        child.kill()
        child.wait()
    assert not threads._alive(child.pid)  # reaped: gone
