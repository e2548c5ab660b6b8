"""Vector index for recall: per scope, live rows of L2-normalised vectors.

Rows are appended into a capacity-doubling matrix and removed by masking, so
adding a memory or retiring a skill costs O(dim) and a query is one
matrix-vector product over the scope's rows. The product is computed with
`einsum`, which runs single-threaded: on shared cores a multi-threaded BLAS
matrix-vector product of this size was 10-40x slower (scripts/perf/aecg_recall_latency.py). The index is derived state:
it is rebuilt from the memory objects' texts after `load_state_dict`, never
stored in a snapshot.
"""

from __future__ import annotations

import numpy as np


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self._matrix = np.zeros((16, dim), dtype=np.float32)
        self._alive = np.zeros(16, dtype=bool)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, oid: str) -> bool:
        return oid in self._row

    def add(self, oid: str, vec: np.ndarray) -> None:
        if oid in self._row:
            self._matrix[self._row[oid]] = vec
            return
        n = len(self._ids)
        if n == self._matrix.shape[0]:
            self._matrix = np.vstack([self._matrix, np.zeros_like(self._matrix)])
            self._alive = np.concatenate([self._alive, np.zeros_like(self._alive)])
        self._matrix[n] = vec
        self._alive[n] = True
        self._ids.append(oid)
        self._row[oid] = n

    def remove(self, oid: str) -> None:
        row = self._row.pop(oid, None)
        if row is not None:
            self._alive[row] = False

    def vector(self, oid: str) -> np.ndarray:
        return self._matrix[self._row[oid]]

    def ranked(self, query: np.ndarray, min_score: float, limit: int | None = None) -> list[tuple[str, float]]:
        """Live rows with score >= min_score, best first, at most `limit`.

        Ties break by object id, so the order does not depend on the order rows
        were added (which differs between a live run and a rebuilt index).
        """
        n = len(self._ids)
        if not self._row or (limit is not None and limit <= 0):  # no live row (n = 0 implies none), or none asked
            return []
        scores = np.einsum("ij,j->i", self._matrix[:n], query)  # no BLAS threads (see module doc)
        ok = np.flatnonzero(self._alive[:n] & (scores >= min_score))
        if limit is not None and ok.size > limit:
            kth = np.partition(scores[ok], ok.size - limit)[ok.size - limit]
            ok = ok[scores[ok] >= kth]  # keeps every row tied with the last one
        order = sorted(ok.tolist(), key=lambda i: (-float(scores[i]), self._ids[i]))
        if limit is not None:
            order = order[:limit]
        return [(self._ids[i], float(scores[i])) for i in order]
