"""Embedding backends: minilm is the default; a served Qwen3-Embedding model through litellm's
embedding API (EDV sec. C.3), with its model id in the identity and one-line failures."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from aecg_bench.errors import ConfigError, InfraError
from aecg_bench.llm.embeddings import Embedder, RemoteEmbedding
from aecg_bench.run import CONF_DIR


class _EmbeddingServer(BaseHTTPRequestHandler):
    """OpenAI-compatible /v1/embeddings on loopback: the vector of a text is (len, 1, 0, 0) (or too short)."""

    width = 4

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0, 0.0][: self.width]}
            for i, t in enumerate(texts)
        ]
        reply = json.dumps(
            {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _EmbeddingServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()
    _EmbeddingServer.width = 4


def test_a_served_qwen3_embedding_model_gives_normalised_vectors_and_names_itself(server, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBED_KEY", "sk-local-test-key")
    remote = RemoteEmbedding("openai/Qwen/Qwen3-Embedding-4B", api_base=server, api_key_env="EMBED_KEY", dim=4)
    emb = Embedder("qwen3_embedding", tmp_path / "emb.sqlite", remote=remote)
    vecs = emb.embed(["ab", "abcd"])
    assert vecs.shape == (2, 4) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert vecs[1][0] > vecs[0][0]  # the server's vectors, not a local model's
    assert emb.describe() == {"backend": "qwen3_embedding", "version": "openai/Qwen/Qwen3-Embedding-4B@4"}


def test_a_wrong_width_or_a_dead_server_is_one_line(server, tmp_path):
    _EmbeddingServer.width = 3
    emb = Embedder("qwen3_embedding", remote=RemoteEmbedding("openai/q", api_base=server, dim=4))
    with pytest.raises(ConfigError, match=r"embedder\.dim"):
        emb.embed(["x"])
    dead = Embedder("qwen3_embedding", remote=RemoteEmbedding("openai/q", api_base="http://127.0.0.1:9/v1", dim=4))
    with pytest.raises(InfraError) as err:
        dead.embed(["x"])
    assert "\n" not in str(err.value)


def test_minilm_is_every_runs_default_embedder():
    import yaml

    assert yaml.safe_load((CONF_DIR / "config.yaml").read_text())["embedder"]["backend"] == "minilm"
    for path in (CONF_DIR / "experiment").glob("*.yaml"):
        assert "lexical" not in path.read_text(), f"{path.name} falls back to the lexical embedder"


def test_the_embedder_backend_is_part_of_a_runs_identity(make_config):
    """Fix 7: thresholds mean different things under different embedders, so runs that differ only in
    the backend must not share a results folder or resume each other."""
    from aecg_bench.run import run_from_config
    from aecg_bench.runner.config import parse_run_config
    from aecg_bench.runner.identity import results_dir_of
    from aecg_bench.runner.records import RunDir

    run = ("benchmark=toy", "benchmark.params.size=1", "memory=no_memory", "model=mock")
    identity = RunDir(results_dir_of(run_from_config(make_config(*run)))).read_header()["identity"]
    assert identity["embedder"]["backend"] == "lexical" and identity["config"]["embedder"]["backend"] == "lexical"
    other = parse_run_config(make_config(*run, "embedder.backend=minilm")).identity_config()
    assert other["embedder"]["backend"] == "minilm"
