"""Thread placement of the embedded model: threads x concurrent jobs never exceed the cores."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aecg_bench.errors import ConfigError
from aecg_bench.llm import threads


@pytest.fixture(autouse=True)
def _one_job():
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
    local.load("smollm2-135m-instruct", n_ctx=512, n_threads="auto", ram_cache_mb=0)
    assert seen["n_threads"] == 1 and seen["n_threads_batch"] == 1
    threads.set_concurrent_jobs(1)
    local.load("smollm2-135m-instruct", n_ctx=512, n_threads="auto", ram_cache_mb=0)
    assert seen["n_threads"] == 2 and seen["n_threads_batch"] == 2
