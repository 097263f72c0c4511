"""The near-duplicate check of a batch (``VectorMatrix.search_many`` with a score floor) bounds
scores on the principal components from ``BOUND_MANY_MIN`` rows on, below ``exact_max`` too; the
bound is exact, so it finds exactly what a brute-force product finds."""

from __future__ import annotations

import numpy as np

from memfold.index import vectors
from memfold.index.vectors import VectorMatrix


def test_floor_search_above_the_bound_size_equals_brute_force() -> None:
    rng = np.random.default_rng(4)
    dim, n = 256, vectors.BOUND_MANY_MIN + 600
    latent = rng.normal(size=(n, 32)) @ rng.normal(size=(32, dim)) + 0.3 * rng.normal(size=(n, dim))
    vecs = (latent / np.linalg.norm(latent, axis=1, keepdims=True)).astype(np.float32)
    m = VectorMatrix(dim)  # exact_max 20,000: single searches stay exact at this size
    m.upsert([f"v{i}" for i in range(n)], vecs)
    m.remove([f"v{i}" for i in range(0, 200, 3)])
    spread = np.linspace(0.005, 0.05, 200, dtype=np.float32)[:, None]  # scores on both sides of the floor
    queries = np.concatenate([vecs[:200] + spread * rng.normal(size=(200, dim)).astype(np.float32),
                              rng.normal(size=(50, dim)).astype(np.float32)])
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    got = m.search_many(queries, 3, min_score=0.9)
    assert m.basis is not None  # the bounded first stage ran
    alive = np.array([i % 3 != 0 or i >= 200 for i in range(n)])
    scores = queries @ vecs.T
    scores[:, ~alive] = -np.inf
    for q, row in enumerate(got):
        want = [f"v{i}" for i in np.argsort(-scores[q], kind="stable")[:3] if scores[q, i] >= 0.9]
        assert [mid for mid, _ in row] == want, q
    found = sorted(s for r in got for _, s in r)
    assert len(found) >= 50 and found[0] < 0.93  # many hits, some close to the floor
