"""``CachedQueryEmbedder``: query vectors from the cache. A query's vector depends only on its text
and the model, so it needs no change counter: a repeated query skips the model (the largest part
of a search on a small index). Texts to store (``embed``) always go to the model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..metrics import record_cache
from ..providers.embedder import embed_query
from .backends import SKIP, CacheBackend


class CachedQueryEmbedder:
    """An ``Embedder`` whose single-text ``embed_query`` goes through ``cache``; any other attribute
    is the embedder's."""

    def __init__(self, embedder: Any, cache: CacheBackend, *, ttl: float = 3600.0):
        self._embedder = embedder
        self.cache = cache
        self.ttl = ttl
        self.name: str = embedder.name
        self.dim: int = embedder.dim

    @property
    def inner(self) -> Any:
        return self._embedder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embedder.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1:
            return embed_query(self._embedder, texts)
        digest = hashlib.blake2b(texts[0].encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        key = f"memfold:v1:qv:{self.name}:{self.dim}:{digest}"
        got = self.cache.get(key)
        if got is SKIP:
            record_cache("query_vector", "skip")
        elif got is not None and len(got) == 4 * self.dim:  # type: ignore[arg-type]
            record_cache("query_vector", "hit")
            return np.frombuffer(got, dtype=np.float32).reshape(1, self.dim).copy()  # type: ignore[arg-type]
        else:
            record_cache("query_vector", "miss")
        vec = np.ascontiguousarray(embed_query(self._embedder, texts), dtype=np.float32)
        if got is not SKIP:
            self.cache.set(key, vec.tobytes(), self.ttl)
        return vec
