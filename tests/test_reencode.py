"""The packaged model re-encoded as Q8_0: made once, pinned by hash, refused when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from aecg_bench.errors import ConfigError
from aecg_bench.llm import local
from aecg_bench.llm.reencode import CACHE_ENV, Reencoding, reencoded, sha256_of

Q8 = "smollm2-135m-instruct-q8_0"


@pytest.fixture
def model_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "models"))
    return tmp_path / "models"


def test_the_q8_model_is_made_once_with_its_pinned_hash(model_cache: Path) -> None:
    path = local.model_path(Q8)
    assert path.parent == model_cache and path.name == f"{Q8}.gguf"
    assert sha256_of(path) == local.KNOWN_MODELS[Q8][2].sha256
    assert path.stat().st_size > local.model_path("smollm2-135m-instruct").stat().st_size  # 8.5 vs 5.7 bits a weight
    mtime = path.stat().st_mtime_ns
    assert local.model_path(Q8) == path and path.stat().st_mtime_ns == mtime  # reused, not made again
    assert not [p for p in model_cache.iterdir() if p != path]  # no temporary file left behind


def test_the_quantizer_runs_the_portable_build_whatever_this_process_loads(
    model_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned bytes come from one build on every CPU: the child ignores the AVX-512 variant's overrides."""
    monkeypatch.setenv("LLAMA_CPP_LIB_PATH", str(tmp_path / "no-such-build"))
    monkeypatch.setenv("MTMD_CPP_LIB", str(tmp_path / "no-such-build"))
    assert sha256_of(local.model_path(Q8)) == local.KNOWN_MODELS[Q8][2].sha256


def test_a_damaged_or_foreign_cached_file_is_refused_by_name(model_cache: Path) -> None:
    model_cache.mkdir(parents=True)
    (model_cache / f"{Q8}.gguf").write_bytes(b"not the model")
    with pytest.raises(
        ConfigError, match=r"has sha256 .* expected 7b46609d.*delete it.*aecg-local/smollm2-135m-instruct$"
    ):
        local.model_path(Q8)


def test_a_failed_conversion_is_one_clear_error_and_leaves_nothing(model_cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "broken.gguf"
    source.write_bytes(b"GGUF but not really")
    with pytest.raises(ConfigError, match=r"could not re-encode broken\.gguf as q8_0"):
        reencoded(source, "broken", Reencoding("q8_0", sha256="0" * 64))
    assert not list(model_cache.iterdir())


def test_an_unknown_file_type_names_the_valid_ones(model_cache: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown re-encoding 'q2_k'.*valid choices: q8_0"):
        reencoded(tmp_path / "x.gguf", "x", Reencoding("q2_k", sha256="0" * 64))


def test_an_unwritable_model_cache_is_one_line_naming_the_variable(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "models"))
    with pytest.raises(ConfigError, match=r"cannot write the model cache .*; set AECG_MODEL_CACHE"):
        local.model_path(Q8)
