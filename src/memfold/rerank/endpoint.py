"""A re-ranker behind a ``/rerank`` endpoint, the shape Cohere, Jina, vLLM and Text Embeddings
Inference (its OpenAI-style route) serve: ``POST {model, query, documents, top_n}`` answered by
``{"results": [{"index", "relevance_score"}, ...]}``."""

from __future__ import annotations

import os
from typing import Any

import httpx

from .answers import BadAnswer, endpoint_order


class EndpointReranker:
    backend = "endpoint"

    def __init__(self, url: str, model: str, api_key_env: str, timeout: float):
        url = url.rstrip("/")
        self.url = url if url.endswith("/rerank") else f"{url}/rerank"
        self.model = model
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def order(self, query: str, documents: list[str]) -> tuple[list[int], dict[str, int]]:
        """The documents' positions, best first, and the tokens the endpoint reported.
        ``BadAnswer`` (with the reason) when the call fails or the answer is not usable."""
        body: dict[str, Any] = {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
        try:
            resp = self._client.post(self.url, json=body, headers=self._headers)
        except httpx.TimeoutException:
            raise BadAnswer("timeout", f"{self.url} did not answer within {self._client.timeout.read}s") from None
        except httpx.HTTPError as exc:
            raise BadAnswer("unreachable", f"{self.url}: {type(exc).__name__}: {exc}") from None
        if resp.status_code != 200:
            raise BadAnswer("http_error", f"{self.url} answered HTTP {resp.status_code}")
        try:
            data = resp.json()
        except ValueError:
            raise BadAnswer("malformed", f"{self.url} sent a body that is not JSON") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        tokens = {k: int(v) for k, v in (usage or {}).items()
                  if k.endswith("_tokens") and isinstance(v, int) and not isinstance(v, bool)} \
            if isinstance(usage, dict) else {}
        return endpoint_order(data, len(documents)), tokens
