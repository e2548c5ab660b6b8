"""Embeddings: offline backends, their cache, and top-k search."""

from __future__ import annotations

import numpy as np
import pytest

from aecg_bench.errors import ConfigError
from aecg_bench.llm.embeddings import Embedder, RemoteEmbedding, cosine_top_k, lexical_vector


def test_lexical_similarity_ranks_related_text_first(tmp_path):
    emb = Embedder("lexical", tmp_path / "e.sqlite")
    docs = ["pick up the ball with the left gripper", "boil water in the kettle", "the ball is in room b"]
    top = cosine_top_k(emb.embed_one("pick up ball"), emb.embed(docs), 2)
    assert top[0][0] == 0 and top[0][1] > top[1][1]
    assert np.allclose(np.linalg.norm(emb.embed(docs), axis=1), 1.0, atol=1e-5)


def test_the_default_embedder_is_lexical_and_computes_lexical_vectors():
    emb = Embedder()
    assert emb.describe()["backend"] == "lexical" and emb.dim == 1024
    assert np.array_equal(emb.embed(["pick up the ball"])[0], lexical_vector("pick up the ball"))


def test_embedding_cache_is_shared_across_instances(tmp_path, monkeypatch):
    first = Embedder("lexical", tmp_path / "e.sqlite")
    vec = first.embed(["some text"])
    second = Embedder("lexical", tmp_path / "e.sqlite")
    monkeypatch.setattr(second, "_compute", lambda texts: pytest.fail("recomputed a cached vector"))
    assert np.array_equal(second.embed(["some text"]), vec)


def test_unknown_backend_names_the_choices():
    with pytest.raises(ConfigError, match=r"^unknown embedding backend 'bert'; valid choices: lexical, minilm, qwen3"):
        Embedder("bert")


@pytest.mark.slow
def test_minilm_ships_in_a_package_and_runs_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    emb = Embedder("minilm")
    vecs = emb.embed(["pick up the ball", "grasp the ball", "the capital of France"])
    assert vecs.shape == (3, 384)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3


def test_a_served_backend_without_its_model_is_one_config_error_and_a_remote_only_names_a_served_backend():
    with pytest.raises(ConfigError, match=r"^embedding backend 'qwen3_embedding' needs embedder\.model"):
        Embedder("qwen3_embedding")
    remote = RemoteEmbedding("openai/Qwen/Qwen3-Embedding-4B", dim=2560)
    assert Embedder("qwen3_embedding", remote=remote).version == "openai/Qwen/Qwen3-Embedding-4B@2560"
    assert Embedder("lexical", remote=remote).version == Embedder.versions["lexical"]  # a stray remote is not used
