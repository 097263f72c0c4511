"""An in-process matrix of one namespace's vectors, searched with numpy, updated incrementally."""

from __future__ import annotations

import numpy as np


class VectorMatrix:
    def __init__(self, dim: int):
        self.dim = dim
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.mat = np.zeros((0, dim), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.n = 0
        self.dead = 0
        self.seq = 0  # the index change counter this matrix reflects

    def _grow(self, need: int) -> None:
        cap = self.mat.shape[0]
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 256)
        mat = np.zeros((new_cap, self.dim), dtype=np.float32)
        mat[: self.n] = self.mat[: self.n]
        alive = np.zeros(new_cap, dtype=bool)
        alive[: self.n] = self.alive[: self.n]
        self.mat, self.alive = mat, alive

    def upsert(self, ids: list[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        new = [i for i, mid in enumerate(ids) if mid not in self.pos]
        self._grow(self.n + len(new))
        for i, mid in enumerate(ids):
            p = self.pos.get(mid)
            if p is None:
                p = self.pos[mid] = self.n
                self.ids.append(mid)
                self.n += 1
            elif not self.alive[p]:
                self.dead -= 1
            self.mat[p] = vectors[i]
            self.alive[p] = True

    def remove(self, ids: list[str]) -> None:
        for mid in ids:
            p = self.pos.get(mid)
            if p is not None and self.alive[p]:
                self.alive[p] = False
                self.mat[p] = 0.0
                self.dead += 1
        if self.dead > 1024 and self.dead > self.n // 2:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        self.ids = [self.ids[i] for i in keep]
        self.pos = {mid: i for i, mid in enumerate(self.ids)}
        self.mat = np.ascontiguousarray(self.mat[keep])
        self.alive = np.ones(len(keep), dtype=bool)
        self.n, self.dead = len(keep), 0

    def __len__(self) -> int:
        return self.n - self.dead

    def search(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if self.n == 0 or limit <= 0:
            return []
        scores = self.mat[: self.n] @ query.astype(np.float32, copy=False)
        if self.dead:
            scores[~self.alive[: self.n]] = -np.inf
        k = min(limit, self.n)
        top = np.argpartition(-scores, k - 1)[:k] if k < self.n else np.arange(self.n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in top if np.isfinite(scores[i])]

    def search_many(self, queries: np.ndarray, limit: int, chunk: int = 256) -> list[list[tuple[str, float]]]:
        """Top ``limit`` per row of ``queries``: one matrix product per ``chunk`` rows (bounded memory)
        and one vectorised partial sort per chunk."""
        if self.n == 0 or limit <= 0 or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        q = queries.astype(np.float32, copy=False)
        k = min(limit, self.n)
        dead = ~self.alive[: self.n] if self.dead else None
        out: list[list[tuple[str, float]]] = []
        for start in range(0, len(q), chunk):
            scores = q[start: start + chunk] @ self.mat[: self.n].T
            if dead is not None:
                scores[:, dead] = -np.inf
            top = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < self.n else \
                np.broadcast_to(np.arange(self.n), (len(scores), self.n))
            vals = np.take_along_axis(scores, top, axis=1)
            order = np.argsort(-vals, axis=1, kind="stable")
            top, vals = np.take_along_axis(top, order, axis=1), np.take_along_axis(vals, order, axis=1)
            out.extend([(self.ids[i], float(v)) for i, v in zip(row_ids, row_vals) if np.isfinite(v)]
                       for row_ids, row_vals in zip(top.tolist(), vals.tolist()))
        return out
