"""An in-memory cosine index over memory entries, shared by the retrieval-based baselines.

Why not a vector database: the baselines keep at most tens of thousands of
entries, their state must round-trip through `state_dict` as JSON, and recall
must stay well under 50 ms at 10,000 entries on two shared cores. A dense
float32 matrix (rows L2-normalised, so cosine = dot product) with tombstones for
deleted rows does all three. Vectors are never serialised: they are recomputed
from the entries' texts on load (the embedder has its own cache).

Ties are broken by insertion order, so results never depend on hashing or
scheduling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

import numpy as np

from aecg_bench.contracts import MemoryServices
from aecg_bench.llm.embeddings import Embedder
from aecg_bench.types import Task, task_text

RetrievalKey = Literal["instruction", "instruction+observation"]


def task_key(task: Task, observation: str, key: RetrievalKey) -> str:
    """The text retrieval embeds for a task: `aecg_bench.types.task_text` (a conversation is keyed by
    its opening observation when stored, the current one when recalled, then the instruction: on
    tau2 every task of a domain has the same instruction), or the instruction alone."""
    return task.instruction if key == "instruction" else task_text(task, observation)


def embedder_of(services: MemoryServices) -> Embedder:
    """The run's embedder; a lexical one when the services carry none (unit tests, tools)."""
    return services.embedder if services.embedder is not None else Embedder("lexical")


class VectorIndex:
    """Ids -> unit vectors; top-k by cosine with an optional filter."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._ids: list[str | None] = []  # row -> id (None = deleted)
        self._row: dict[str, int] = {}
        self._mat = np.zeros((0, embedder.dim), dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self._dead = 0

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, key: str) -> bool:
        return key in self._row

    def clear(self) -> None:
        self._ids, self._row, self._dead = [], {}, 0
        self._mat = np.zeros((0, self.embedder.dim), dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)

    @property
    def row_ids(self) -> list[str | None]:
        """Entry id of every matrix row (None = deleted): the order `scores` uses."""
        return self._ids

    def embed(self, text: str) -> np.ndarray:
        return self.embedder.embed_one(text)

    def add(self, key: str, text: str) -> None:
        self.add_many([key], [text])

    def add_many(self, keys: list[str], texts: list[str]) -> None:
        """Add (or replace) entries; texts are embedded in one batch."""
        if not keys:
            return
        for key in keys:
            if key in self._row:
                self.remove([key])
        vecs = self.embedder.embed(texts)
        start = len(self._ids)
        needed = start + len(keys)
        if needed > self._mat.shape[0]:
            grown = np.zeros((max(needed, 2 * self._mat.shape[0], 64), self.embedder.dim), dtype=np.float32)
            grown[:start] = self._mat[:start]
            alive = np.zeros(grown.shape[0], dtype=bool)
            alive[:start] = self._alive[:start]
            self._mat, self._alive = grown, alive
        self._mat[start:needed] = vecs
        self._alive[start:needed] = True
        for i, key in enumerate(keys):
            self._ids.append(key)
            self._row[key] = start + i

    def remove(self, keys: Iterable[str]) -> None:
        for key in keys:
            row = self._row.pop(key, None)
            if row is not None:
                self._ids[row] = None
                self._alive[row] = False
                self._dead += 1
        if self._dead > max(64, len(self._ids) // 4):
            self._compact()

    def matrix_row(self, row: int) -> np.ndarray:
        return self._mat[row]

    def vector(self, key: str) -> np.ndarray | None:
        row = self._row.get(key)
        return None if row is None else self._mat[row]

    def scores(self, query: np.ndarray) -> tuple[list[str | None], np.ndarray]:
        """(row ids, cosine of every row); deleted rows score -inf."""
        n = len(self._ids)
        sims = _matvec(self._mat[:n], query)
        if self._dead:
            sims = np.where(self._alive[:n], sims, -np.inf)
        return self._ids, sims

    def similarity(self, query: np.ndarray, keys: Iterable[str]) -> dict[str, float]:
        """Cosine of the query with the given (present) entries."""
        present = [k for k in keys if k in self._row]
        if not present:
            return {}
        sims = _matvec(self._mat[[self._row[k] for k in present]], query)
        return {k: float(v) for k, v in zip(present, sims, strict=True)}

    def search(
        self,
        query: str | np.ndarray,
        k: int,
        *,
        allow: Callable[[str], bool] | None = None,
        min_score: float | None = None,
    ) -> list[tuple[str, float]]:
        """The k most similar entries passing `allow`, best first (ties: earlier entry first)."""
        if k <= 0 or not self._row:
            return []
        return self.rank(query).top(k, allow=allow, min_score=min_score)

    def rank(self, query: str | np.ndarray) -> Ranking:
        """Every entry ordered by similarity to the query: one scan, several filtered top-k reads."""
        vec = self.embed(query) if isinstance(query, str) else query
        ids, sims = self.scores(vec)
        return Ranking(ids, sims, np.argsort(-sims, kind="stable"))

    def _compact(self) -> None:
        keep = [r for r, key in enumerate(self._ids) if key is not None]
        self._mat = self._mat[keep].copy() if keep else np.zeros((0, self.embedder.dim), dtype=np.float32)
        self._alive = np.ones(len(keep), dtype=bool)
        self._ids = [self._ids[r] for r in keep]
        self._row = {key: i for i, key in enumerate(self._ids) if key is not None}
        self._dead = 0


class Ranking:
    """The result of one scan of the index, read as often as needed."""

    def __init__(self, ids: list[str | None], sims: np.ndarray, order: np.ndarray) -> None:
        self.ids, self.sims, self.order = list(ids), sims, order

    def top(
        self, k: int, *, allow: Callable[[str], bool] | None = None, min_score: float | None = None
    ) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        if k <= 0:
            return out
        for row in self.order:
            score = float(self.sims[row])
            if score == -np.inf or (min_score is not None and score < min_score):
                break
            key = self.ids[row]
            if key is None or (allow is not None and not allow(key)):
                continue
            out.append((key, score))
            if len(out) >= k:
                break
        return out


def _matvec(mat: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """mat @ vec without BLAS threads: a matrix-vector product gains nothing from them, and on shared
    cores multithreaded BLAS spins and runs several times slower than this single-threaded loop."""
    return np.einsum("ij,j->i", mat, vec)
