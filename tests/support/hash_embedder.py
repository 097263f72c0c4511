"""A cheap, deterministic embedder for tests that measure plumbing, not meaning (many writers):
hashed word and character-bigram counts, L2-normalised. A real ``Embedder``, about 100× faster
than the bundled model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memfold.text.terms import terms


class HashEmbedder:
    name = "test-hash-v1"

    def __init__(self, dim: int = 256):
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for t in terms(text):
                h = int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            n = np.linalg.norm(out[i])
            if n > 0:
                out[i] /= n
        return out
