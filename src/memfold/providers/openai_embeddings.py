"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx
import numpy as np

from ..errors import ConfigError, ProviderError, ProviderResponseError, ProviderTimeout
from ..metrics import measured
from .embedder import check_max_chars, clip, l2_normalise

if TYPE_CHECKING:
    from ..config import EmbedderSettings


class OpenAIEmbedder:
    def __init__(self, settings: "EmbedderSettings"):
        if not settings.base_url or not settings.model:
            raise ConfigError("[embedder] provider = 'openai' needs [embedder] base_url and model")
        self.base_url = settings.base_url.rstrip("/")
        self.model = settings.model
        self.name = f"openai:{self.model}"
        self.batch_size = settings.batch_size
        self.max_chars = check_max_chars(settings.max_chars)
        self._key = os.environ.get(settings.api_key_env, "") if settings.api_key_env else ""
        self._client = httpx.Client(timeout=settings.timeout)
        self.dim = settings.dim or int(self._request(["dimension probe"]).shape[1])

    def _request(self, texts: list[str]) -> np.ndarray:
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            resp = self._client.post(f"{self.base_url}/embeddings", headers=headers,
                                     json={"model": self.model, "input": texts})
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(f"embeddings endpoint {self.base_url} timed out") from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"embeddings endpoint {self.base_url} unreachable: {exc}") from exc
        if resp.status_code != 200:
            raise ProviderResponseError(
                f"embeddings endpoint {self.base_url} answered HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            data = sorted(resp.json()["data"], key=lambda d: d.get("index", 0))
            vecs = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderResponseError(f"embeddings endpoint {self.base_url} sent an unusable body") from exc
        if vecs.ndim != 2 or vecs.shape[0] != len(texts):
            raise ProviderResponseError(
                f"embeddings endpoint {self.base_url} returned {vecs.shape[0] if vecs.ndim else 0} vectors "
                f"for {len(texts)} texts")
        return vecs

    @measured("embed")
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = clip(texts, self.max_chars)
        parts = [self._request(list(texts[i: i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        out = l2_normalise(np.vstack(parts))
        if out.shape[1] != self.dim:
            raise ProviderResponseError(f"embeddings endpoint returned dim {out.shape[1]}, expected {self.dim}")
        return out
