"""An in-process matrix of one namespace's vectors, searched with numpy, updated incrementally.

Up to ``exact_max`` live rows a search is one exact matrix-vector product. Above that it has two
stages: a product with the rows projected on their top ``RANK`` principal components (a matrix
8× smaller than the vectors, so 8× less memory to stream) picks ``candidates(limit)`` rows, which
are then scored exactly. The projection is fitted on a sample of the rows and refitted when the
matrix has doubled since; new rows are projected as they arrive. On the bench's 100k vectors the
first stage keeps 99.9 % of the exact top 50 (docs/benchmarks.md)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import numpy as np

RANK = 64
FIT_SAMPLE = 8192
EXACT_MAX = 20_000
# blocks of queries with a score floor (the near-duplicate check of a batch add) use the bounded first
# stage from this many rows on, whatever ``exact_max``: its bound is exact, so results are the same
BOUND_MANY_MIN = 4096


def candidates(limit: int) -> int:
    return max(1000, 20 * limit)


_blas: list[Any] | None = None  # the loaded BLAS libraries' controllers (threadpoolctl), found once


class _OneBlasThread:
    """Each BLAS library at one thread for the block, its own count back after (what threadpoolctl's
    ``limit(limits=1, user_api="blas")`` does, through the same controllers, without building its
    per-call selection: a fifth of its ~8 µs, paid by every search)."""

    def __init__(self, libs: list[Any]):
        self.libs = libs
        self.changed: list[tuple[Any, int]] = []

    def __enter__(self) -> None:
        for lib in self.libs:
            n = lib.get_num_threads()
            if n is not None and n != 1:
                lib.set_num_threads(1)
                self.changed.append((lib, n))

    def __exit__(self, *exc: object) -> None:
        for lib, n in self.changed:
            lib.set_num_threads(n)


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS on one thread for the block: a one-query product streams the matrix once and is bound by
    memory, so a second thread gains little when the machine is idle, and when it is busy (other
    processes, a server's other workers) OpenBLAS's threads wait on each other for whole scheduler
    slices: 34 ms instead of 0.65 ms for a search of 2,000 rows at a load average of 15
    (docs/benchmarks.md). The bundled embedder runs its model the same way."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    return _OneBlasThread(_blas)


def pin_one_blas_thread() -> None:
    """BLAS on one thread for the rest of the process: for a server, whose requests run side by side
    on threads. ``one_blas_thread`` puts a count back when its block ends, which with two blocks
    overlapping on two threads gives the second its BLAS threads back halfway through, and OpenBLAS
    threads of concurrent calls wait on each other (a search went from 30 ms to seconds with 16
    concurrent clients); with the count at one for good, every block leaves it there."""
    with one_blas_thread():
        pass  # finds the libraries once
    for lib in _blas or ():
        lib.set_num_threads(1)


SAMPLE_SHARE = 8  # ``best_set`` ranks 1 value in this many first


def best_set(vals: np.ndarray, c: int) -> np.ndarray:
    """The positions of the ``c`` largest ``vals`` (in no order), as ``argpartition`` gives them, for a
    fraction of its work on a long array: the ``c``-th largest of a strided sample bounds the ``c``-th
    largest of all from below, so only the values at or above it are partitioned. When values tied
    at the cut would let the two choose different rows, it is ``argpartition`` of all, as before."""
    step = SAMPLE_SHARE
    if len(vals) < 4 * step * c:
        return np.argpartition(-vals, c - 1)[:c]
    sample = vals[::step]
    above = np.flatnonzero(vals >= np.partition(sample, len(sample) - c)[len(sample) - c])
    sub = vals[above]
    best = np.argpartition(-sub, c - 1)[:c]
    if np.count_nonzero(sub >= sub[best].min()) != c:  # a tie at the cut
        return np.argpartition(-vals, c - 1)[:c]
    return above[best]


class VectorMatrix:
    COMPACT_MIN_DEAD = 1024  # dead rows are compacted away past this many (and half the rows)

    def __init__(self, dim: int, exact_max: int = EXACT_MAX):
        self.dim = dim
        self.exact_max = exact_max
        self.basis: np.ndarray | None = None  # (dim, RANK)
        self.shift = np.zeros(RANK, dtype=np.float32)  # mean @ basis
        self.proj = np.zeros((0, RANK), dtype=np.float32)
        self.resid = np.zeros(0, dtype=np.float32)  # norm of each row outside the basis
        self.fit_n = 0
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
        new_cap = max(need, cap * 2 if cap < 65536 else cap + cap // 4, 256)  # big: grow by a quarter
        mat = np.zeros((new_cap, self.dim), dtype=np.float32)
        mat[: self.n] = self.mat[: self.n]
        alive = np.zeros(new_cap, dtype=bool)
        alive[: self.n] = self.alive[: self.n]
        self.mat, self.alive = mat, alive
        if self.basis is not None:
            proj = np.zeros((new_cap, RANK), dtype=np.float32)
            proj[: self.n] = self.proj[: self.n]
            resid = np.zeros(new_cap, dtype=np.float32)
            resid[: self.n] = self.resid[: self.n]
            self.proj, self.resid = proj, resid

    def upsert(self, ids: list[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        new = [i for i, mid in enumerate(ids) if mid not in self.pos]
        self._grow(self.n + len(new))
        if len(new) == len(ids) and len(set(ids)) == len(ids):  # all new (a load): one block copy
            self.pos.update(zip(ids, range(self.n, self.n + len(ids))))
            self.ids.extend(ids)
            self.mat[self.n: self.n + len(ids)] = vectors
            self.alive[self.n: self.n + len(ids)] = True
            self.n += len(ids)
            if self.basis is not None:
                self._project(np.arange(self.n - len(ids), self.n))
            return
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
        if self.basis is not None:
            self._project(np.fromiter((self.pos[mid] for mid in ids), dtype=np.int64, count=len(ids)))

    def remove(self, ids: list[str]) -> None:
        for mid in ids:
            p = self.pos.get(mid)
            if p is not None and self.alive[p]:
                self.alive[p] = False
                self.mat[p] = 0.0
                self.dead += 1
        if self.dead > self.COMPACT_MIN_DEAD and self.dead > self.n // 2:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        self.ids = [self.ids[i] for i in keep]
        self.pos = {mid: i for i, mid in enumerate(self.ids)}
        self.mat = np.ascontiguousarray(self.mat[keep])
        self.alive = np.ones(len(keep), dtype=bool)
        self.n, self.dead = len(keep), 0
        self.basis, self.proj, self.fit_n = None, np.zeros((0, RANK), dtype=np.float32), 0
        self.resid = np.zeros(0, dtype=np.float32)

    # ---- the two-stage search --------------------------------------------------------
    def _approximate(self) -> bool:
        if len(self) <= self.exact_max or self.dim < 2 * RANK:
            return False
        if self.basis is None or self.n > 2 * self.fit_n:
            self._fit()
        return True

    def _bounded_many(self) -> bool:
        """Whether ``_search_many_above`` bounds scores first (fitting the basis when needed)."""
        if len(self) < min(BOUND_MANY_MIN, self.exact_max + 1) or self.dim < 2 * RANK:
            return False
        if self.basis is None or self.n > 2 * self.fit_n:
            self._fit()
        return True

    def _fit(self) -> None:
        """Principal components of a sample of the live rows (deterministic), and every row projected."""
        live = np.flatnonzero(self.alive[: self.n])
        rng = np.random.default_rng(0)
        sample = self.mat[np.sort(rng.choice(live, min(FIT_SAMPLE, len(live)), replace=False))]
        mean = sample.mean(axis=0)
        centred = sample - mean
        _, vecs = np.linalg.eigh(centred.T @ centred)
        self.basis = np.ascontiguousarray(vecs[:, ::-1][:, :RANK], dtype=np.float32)
        self.shift = (mean @ self.basis).astype(np.float32)
        self.proj = np.zeros((self.mat.shape[0], RANK), dtype=np.float32)
        self.resid = np.zeros(self.mat.shape[0], dtype=np.float32)
        for start in range(0, self.n, 16384):
            self._project(np.arange(start, min(self.n, start + 16384)))
        self.fit_n = self.n

    def _project(self, rows: np.ndarray) -> None:
        """First-stage coordinates of ``rows`` (centred) and the norm of what the basis misses."""
        x = self.mat[rows]
        y = x @ self.basis
        self.resid[rows] = np.sqrt(np.maximum(0.0, np.einsum("ij,ij->i", x, x) - np.einsum("ij,ij->i", y, y)))
        self.proj[rows] = y - self.shift

    def _shortlist(self, q: np.ndarray, c: int) -> np.ndarray:
        """For each row of ``q`` (or for the one query ``q``), the ``c`` rows with the best first-stage scores."""
        rough = (q @ self.basis) @ self.proj[: self.n].T
        if self.dead:
            rough[..., ~self.alive[: self.n]] = -np.inf
        c = min(c, self.n - 1)
        if rough.ndim == 1:
            return best_set(rough, c)
        return np.argpartition(-rough, c - 1, axis=-1)[..., :c]

    # ---- snapshot (index/snapshot.py) --------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """The live rows as arrays (a snapshot); the projection is kept when it is fitted."""
        live = np.flatnonzero(self.alive[: self.n])
        out = {"v_ids": np.array([self.ids[i] for i in live.tolist()], dtype=str).reshape(-1),
               "v_mat": self.mat[live]}
        if self.basis is not None:
            out.update(v_basis=self.basis, v_shift=self.shift, v_proj=self.proj[live], v_resid=self.resid[live],
                       v_fit_n=np.array([self.fit_n]))
        return out

    @classmethod
    def from_state(cls, dim: int, exact_max: int, st: dict[str, np.ndarray]) -> "VectorMatrix":
        m = cls(dim, exact_max)
        ids = st["v_ids"].tolist()
        m.mat = np.ascontiguousarray(st["v_mat"], dtype=np.float32)
        if m.mat.shape != (len(ids), dim):
            raise ValueError(f"vectors of shape {m.mat.shape}, expected ({len(ids)}, {dim})")
        m.ids, m.pos, m.n = ids, {mid: i for i, mid in enumerate(ids)}, len(ids)
        m.alive = np.ones(len(ids), dtype=bool)
        if "v_basis" in st:
            m.basis, m.shift = st["v_basis"], st["v_shift"]
            m.proj = np.ascontiguousarray(st["v_proj"], dtype=np.float32)
            m.resid = np.ascontiguousarray(st["v_resid"], dtype=np.float32)
            m.fit_n = int(st["v_fit_n"][0])
        return m

    def __len__(self) -> int:
        return self.n - self.dead

    def footprint(self) -> dict[str, int]:
        """Sizes that must stay proportional to the live data (the soak test checks them)."""
        return {"live": len(self), "rows": self.n, "row_capacity": self.mat.shape[0], "ids": len(self.pos),
                "nbytes": int(self.mat.nbytes + self.alive.nbytes + self.proj.nbytes + self.resid.nbytes)}

    def search(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if self.n == 0 or limit <= 0:
            return []
        q = query.astype(np.float32, copy=False)
        with one_blas_thread():
            return self._search(q, limit)

    def _search(self, q: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if self._approximate():
            rows = np.sort(self._shortlist(q, candidates(limit)))
            exact = self.mat[rows] @ q
            k = min(limit, len(rows))
            top = np.argpartition(-exact, k - 1)[:k]
            top = top[np.argsort(-exact[top], kind="stable")]
            return [(self.ids[rows[i]], float(exact[i])) for i in top if self.alive[rows[i]]]
        scores = self.mat[: self.n] @ q
        if self.dead:
            scores[~self.alive[: self.n]] = -np.inf
        k = min(limit, self.n)
        top = np.argpartition(-scores, k - 1)[:k] if k < self.n else np.arange(self.n)
        top = top[np.argsort(-scores[top], kind="stable")]
        vals = scores[top]
        ok = np.isfinite(vals)  # once for the k rows, then plain lists: no numpy scalar per row
        if not ok.all():
            top, vals = top[ok], vals[ok]
        ids = self.ids
        return [(ids[i], v) for i, v in zip(top.tolist(), vals.tolist())]

    def search_many(self, queries: np.ndarray, limit: int, chunk: int = 256,
                    min_score: float | None = None) -> list[list[tuple[str, float]]]:
        """Top ``limit`` per row of ``queries``, always exact: one matrix product per ``chunk`` rows
        (bounded memory) and one vectorised partial sort per chunk. With ``min_score`` only rows
        scoring at least that, found by ``_search_many_above`` (a shortlist first stage, as ``search``
        uses, was measured slower than this product for blocks of queries)."""
        if self.n == 0 or limit <= 0 or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        q = queries.astype(np.float32, copy=False)
        if min_score is not None:
            return self._search_many_above(q, limit, chunk, float(min_score))
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

    def _search_many_above(self, q: np.ndarray, limit: int, chunk: int, min_score: float
                           ) -> list[list[tuple[str, float]]]:
        """Exact top ``limit`` rows scoring ≥ ``min_score`` per query. Above ``exact_max`` rows the
        first stage bounds each score from above (x·q ≤ y_x·y_q + |r_x|·|r_q|, with y the basis
        coordinates and r what the basis misses, |r_x| taken at its maximum), and only rows whose
        bound reaches ``min_score`` are scored exactly: for a near-duplicate threshold, a handful."""
        out: list[list[tuple[str, float]]] = []
        bounded = self._bounded_many()
        if bounded:  # blocks of 64 queries into buffers reused across blocks (fresh ones cost page faults)
            chunk = 64
            rmax = float(self.resid[: self.n].max())
            rough_buf = np.empty((min(chunk, len(q)), self.n), dtype=np.float32)
            hit_buf = np.empty((min(chunk, len(q)), self.n), dtype=bool)
            proj_t = self.proj[: self.n].T
        for start in range(0, len(q), chunk):
            block = q[start: start + chunk]
            if bounded:
                b = len(block)
                y = block @ self.basis
                rq = np.sqrt(np.maximum(0.0, np.einsum("ij,ij->i", block, block) - np.einsum("ij,ij->i", y, y)))
                # score ≤ proj·y + shift·y + rq·resid ≤ proj·y + shift·y + rq·max(resid): one compare per pair
                base = y @ self.shift
                rough, hit = rough_buf[:b], hit_buf[:b]
                np.matmul(y, proj_t, out=rough)
                np.greater_equal(rough, ((min_score - 1e-4) - base - rq * rmax)[:, None], out=hit)  # 1e-4: rounding
                some = np.flatnonzero(hit.any(axis=1))  # most queries have no near row at all
                qi, rows = np.nonzero(hit[some])
                qi = some[qi]
                # the same bound with each row's own residual norm, then the exact score
                tight = rough[qi, rows] + base[qi] + rq[qi] * self.resid[rows] >= min_score - 1e-4
                qi, rows = qi[tight], rows[tight]
                scores = np.einsum("ij,ij->i", self.mat[rows], block[qi]) if len(rows) else np.zeros(0, np.float32)
            else:
                full = block @ self.mat[: self.n].T
                qi, rows = np.nonzero(full >= min_score)
                scores = full[qi, rows]
            keep = (scores >= min_score) & self.alive[rows]
            qi, rows, scores = qi[keep], rows[keep], scores[keep]
            hits: list[list[tuple[float, int]]] = [[] for _ in range(len(block))]
            for i, r, sc in zip(qi.tolist(), rows.tolist(), scores.tolist()):
                hits[i].append((sc, r))
            for row in hits:
                row.sort(key=lambda h: (-h[0], h[1]))
                out.append([(self.ids[r], float(sc)) for sc, r in row[:limit]])
        return out
