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
def reference() -> np.ndarray:
    """sentence-transformers on torch: the vectors every MiniLM threshold was set with."""
    torch = Embedder("minilm", runtime="torch")
    vectors = torch.embed(TEXTS)
    assert torch.runtime_used == "torch"
    import torch as torch_module

    assert torch_module.get_num_threads() == 1  # the default: one thread (a second spins on shared cores)
    return vectors


def test_onnx_vectors_equal_sentence_transformers_vectors_one_by_one_and_in_a_padded_batch(reference, tmp_path) -> None:
    onnx = Embedder("minilm", runtime="onnx")
    batched = onnx.embed(TEXTS)  # one padded batch of mixed lengths
    assert onnx.runtime_used == "onnx"
    single = np.stack([Embedder("minilm", runtime="onnx").embed_one(t) for t in TEXTS])
    fresh = minilm_onnx.load(1, cache_dir=tmp_path).encode(TEXTS, batch_size=3)  # a graph exported just now
    assert batched.shape == reference.shape == (len(TEXTS), 384)
    for vectors in (batched, single, fresh):
        np.testing.assert_allclose(vectors, reference, atol=2e-5)
        assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    # the nearest neighbours are the same: what recall acts on
    assert np.array_equal(np.argsort(-batched @ batched.T, axis=1), np.argsort(-reference @ reference.T, axis=1))


def test_onnx_runs_on_the_embedders_threads_without_spinning() -> None:
    embedder = Embedder("minilm", runtime="onnx")
    embedder.embed_one("warm up")
    options = embedder._model.session.get_session_options()
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert embedder._model.session.get_providers() == ["CPUExecutionProvider"]


def test_the_graph_is_named_by_the_weights_hash_and_torch_version_and_lives_in_the_user_cache(monkeypatch, tmp_path):
    import hashlib

    import torch

    weights = minilm_onnx.model_dir()
    digest = hashlib.sha256((weights / "model.safetensors").read_bytes()).hexdigest()[:16]
    name = f"all-MiniLM-L6-v2-{digest}-torch{torch.__version__}.onnx"
    assert minilm_onnx.export_path(weights, tmp_path) == tmp_path / name
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert minilm_onnx.default_cache_dir() == tmp_path / "xdg" / "aecg-bench"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert minilm_onnx.default_cache_dir() == tmp_path / "home" / ".cache" / "aecg-bench"


def test_export_writes_only_inside_a_new_nested_cache_folder(monkeypatch, tmp_path) -> None:
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path / "no-such-tmp"))  # a temporary file elsewhere would fail
    monkeypatch.setattr(tempfile, "tempdir", None)
    target = tmp_path / "a" / "b" / "graph.onnx"
    assert minilm_onnx.export(minilm_onnx.model_dir(), target) == target
    assert [p.name for p in target.parent.iterdir()] == ["graph.onnx"]


def test_a_model_without_mean_pooling_is_refused_naming_its_folder(tmp_path) -> None:
    weights = minilm_onnx.model_dir()
    copy = tmp_path / "weights"
    for path in weights.rglob("*"):
        if path.is_file():
            (copy / path.relative_to(weights)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(weights)).symlink_to(path)
    pooling = copy / "1_Pooling" / "config.json"
    pooling.unlink()
    pooling.write_text('{"word_embedding_dimension": 384, "pooling_mode_cls_token": true}')
    graph = minilm_onnx.export_path(weights, minilm_onnx.default_cache_dir())
    minilm_onnx.load(1)  # the graph exists
    with pytest.raises(ValueError, match=f"^{copy}: expected mean pooling, found .*cls_token"):
        minilm_onnx.OnnxMiniLM(copy, graph, 1)


def test_the_graph_is_exported_once_per_weights_and_torch_version(tmp_path) -> None:
    first = minilm_onnx.load(1, cache_dir=tmp_path)
    graphs = list(tmp_path.glob("*.onnx"))
    assert len(graphs) == 1 and "torch" in graphs[0].name
    stamp = graphs[0].stat().st_mtime_ns
    second = minilm_onnx.load(1, cache_dir=tmp_path)
    assert graphs[0].stat().st_mtime_ns == stamp  # reused, not exported again
    assert not list(tmp_path.glob("*.tmp"))
    np.testing.assert_allclose(first.encode(["a b c"], 8), second.encode(["a b c"], 8))


def test_when_onnx_cannot_be_had_torch_serves_with_one_warning_line(monkeypatch, caplog) -> None:
    def broken(*_args, **_kwargs):
        raise OSError("read-only cache folder\nsecond line")

    monkeypatch.setattr(minilm_onnx, "load", broken)
    embedder = Embedder("minilm", runtime="onnx")
    with caplog.at_level(logging.WARNING):
        vec = embedder.embed_one("pick up the red ball")
    assert embedder.runtime_used == "torch" and vec.shape == (384,)
    [record] = [r for r in caplog.records if "ONNX Runtime" in r.getMessage()]
    assert record.getMessage() == (
        "MiniLM on ONNX Runtime unavailable, computing with torch instead: read-only cache folder second line"
    )


def test_an_unknown_runtime_is_one_config_error_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"^unknown embedding runtime 'tensorflow'; valid choices: onnx, torch$"):
        Embedder("minilm", runtime="tensorflow")
