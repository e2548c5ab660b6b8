"""MiniLM on ONNX Runtime gives sentence-transformers' vectors (so MiniLM's thresholds and vector cache hold)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from aecg_bench.errors import ConfigError
from aecg_bench.llm import minilm_onnx
from aecg_bench.llm.embeddings import Embedder

pytest.importorskip("onnxruntime")

TEXTS = [
    "pick up the red ball",
    "  leading and trailing spaces are stripped as sentence-transformers strips them  ",
    "",
    "task type: talon\ntask: unlock the device\nlevel: agent; role: executor; agent: a1\nobservation: "
    + " ".join(f"token{i} enter {i % 10}" for i in range(120)),  # beyond 256 tokens: truncated the same way
    "Ünïcödé, punctuation!? and 12345 numbers",
]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Embedder, Embedder]:
    onnx = Embedder("minilm", runtime="onnx")
    torch = Embedder("minilm", runtime="torch")
    return onnx, torch


def test_onnx_vectors_equal_sentence_transformers_vectors_one_by_one_and_in_a_padded_batch(both) -> None:
    onnx, torch = both
    reference = torch.embed(TEXTS)
    assert torch.runtime_used == "torch"
    batched = onnx.embed(TEXTS)  # one padded batch of mixed lengths
    assert onnx.runtime_used == "onnx"
    single = np.stack([Embedder("minilm", runtime="onnx").embed_one(t) for t in TEXTS])
    assert batched.shape == reference.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(batched, reference, atol=2e-5)
    np.testing.assert_allclose(single, reference, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    # the nearest neighbours are the same: what recall acts on
    assert np.array_equal(np.argsort(-batched @ batched.T, axis=1), np.argsort(-reference @ reference.T, axis=1))


def test_the_graph_is_exported_once_per_weights_and_torch_version(tmp_path) -> None:
    first = minilm_onnx.load(cache_dir=tmp_path)
    graphs = list(tmp_path.glob("*.onnx"))
    assert len(graphs) == 1 and "torch" in graphs[0].name
    stamp = graphs[0].stat().st_mtime_ns
    second = minilm_onnx.load(cache_dir=tmp_path)
    assert graphs[0].stat().st_mtime_ns == stamp  # reused, not exported again
    assert not list(tmp_path.glob("*.tmp"))
    np.testing.assert_allclose(first.encode(["a b c"]), second.encode(["a b c"]))


def test_when_onnx_cannot_be_had_torch_serves_with_one_warning_line(monkeypatch, caplog) -> None:
    def broken(*_args, **_kwargs):
        raise OSError("read-only cache folder\nsecond line")

    monkeypatch.setattr(minilm_onnx, "load", broken)
    embedder = Embedder("minilm", runtime="onnx")
    with caplog.at_level(logging.WARNING):
        vec = embedder.embed_one("pick up the red ball")
    assert embedder.runtime_used == "torch" and vec.shape == (384,)
    [record] = [r for r in caplog.records if "ONNX Runtime" in r.getMessage()]
    assert "read-only cache folder second line" in record.getMessage()


def test_an_unknown_runtime_is_one_config_error_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"onnx.*torch"):
        Embedder("minilm", runtime="tensorflow")
