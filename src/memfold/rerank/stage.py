"""The quality stage of a search: the ranked hits, asked for ``candidates`` at least, re-ordered
by the configured re-ranker, then cut at the number asked. With ``rewrite``, a multi-part or time
question is first split into sub-queries by an LLM; the hits of the question and of each sub-query
are fused (reciprocal ranks) before the re-ranking. Every step falls back to what it was given."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ..engine.read.read import in_order
from ..errors import ConfigError
from ..metrics import record_stage
from ..models import SearchHit
from .answers import BadAnswer
from .llm import LLMReranker, worth_rewriting

if TYPE_CHECKING:
    from ..config import LLMSettings, RerankSettings, Settings

log = logging.getLogger("memfold.search")
BACKENDS = ("off", "llm", "endpoint")
CANDIDATES = (2, 100)  # bounds of [rerank] candidates
MAX_TIMEOUT = 120.0
RRF_K = 60  # reciprocal rank fusion's constant


class Reranker(Protocol):
    backend: str

    def order(self, query: str, documents: list[str]) -> tuple[list[int], dict[str, int]]: ...
    def close(self) -> None: ...


def document(hit: SearchHit) -> str:
    """A candidate as the re-ranker reads it: its date, then its text."""
    return f"({hit.record.created_at.date().isoformat()}) {hit.record.content}"


def fuse_lists(lists: list[list[SearchHit]]) -> list[SearchHit]:
    """Several ranked lists as one: reciprocal rank fusion, the first list winning ties; a memory
    found by several lists is the first list's hit."""
    score: dict[str, float] = {}
    first: dict[str, SearchHit] = {}
    for hits in lists:
        for rank, h in enumerate(hits):
            score[h.record.id] = score.get(h.record.id, 0.0) + 1.0 / (RRF_K + rank + 1)
            first.setdefault(h.record.id, h)
    order = sorted(first, key=lambda mid: -score[mid])  # stable: first seen wins a tie
    return [first[mid] for mid in order]


class QualityStage:
    def __init__(self, reranker: Reranker | None, rewriter: LLMReranker | None, candidates: int):
        self.reranker = reranker
        self.rewriter = rewriter
        self.candidates = candidates

    def close(self) -> None:
        for part in {id(p): p for p in (self.reranker, self.rewriter) if p is not None}.values():
            part.close()

    def search(self, ranked: Callable[[str, int], list[SearchHit]], query: str, k: int, now: datetime
               ) -> list[SearchHit]:
        """The first ``k`` hits for ``query``; ``ranked(query, n)``: the read path's first ``n`` hits."""
        n = max(k, self.candidates)
        hits = ranked(query, n)
        subs = self.rewrite(query, now) if self.rewriter is not None and worth_rewriting(query) else []
        if subs:
            hits = fuse_lists([hits, *(ranked(q, n) for q in subs)])[:n]
        return self.rerank(query, hits)[:k]

    def rewrite(self, query: str, now: datetime) -> list[str]:
        assert self.rewriter is not None
        start = time.perf_counter()
        try:
            subs, usage = self.rewriter.rewrite(query, now)
        except BadAnswer as exc:
            log.info("query rewrite not used (%s); searching the question as it is", exc)
            record_stage("rewrite", self.rewriter.backend, time.perf_counter() - start, exc.reason)
            return []
        record_stage("rewrite", self.rewriter.backend, time.perf_counter() - start, usage=usage)
        return subs

    def rerank(self, query: str, hits: list[SearchHit]) -> list[SearchHit]:
        if self.reranker is None or len(hits) < 2:
            return hits
        head = hits[: self.candidates]  # a search asking for more than ``candidates`` keeps the rest after them
        start = time.perf_counter()
        try:
            order, usage = self.reranker.order(query, [document(h) for h in head])
        except BadAnswer as exc:
            log.info("re-ranking not used (%s); the search keeps its order", exc)
            record_stage("rerank", self.reranker.backend, time.perf_counter() - start, exc.reason)
            return hits
        record_stage("rerank", self.reranker.backend, time.perf_counter() - start, usage=usage)
        return in_order(hits, order + list(range(len(head), len(hits))))


def _chat(url: str, model: str, api_key_env: str, timeout: float, what: str) -> LLMReranker:
    from ..config import LLMSettings
    from ..providers.openai_chat import OpenAIChatModel

    if not url.strip() or not model.strip():
        raise ConfigError(f"{what} needs [rerank] url and model (or MEMFOLD_RERANK__URL and MEMFOLD_RERANK__MODEL)")
    return LLMReranker(OpenAIChatModel(LLMSettings(provider="openai", base_url=url, model=model,
                                                   api_key_env=api_key_env, timeout=timeout, max_retries=0)))


def _rewrite_chat(r: "RerankSettings", llm: "LLMSettings", reranker: Reranker | None) -> LLMReranker:
    """The chat model of the rewrite step: the re-ranking LLM's, else the ``[llm]`` endpoint."""
    if isinstance(reranker, LLMReranker):
        return reranker
    if llm.base_url.strip() and llm.model.strip():
        return _chat(llm.base_url, llm.model, llm.api_key_env, r.timeout_seconds, "[rerank] rewrite")
    raise ConfigError("[rerank] rewrite = true needs a chat model: [rerank] backend = 'llm' with its url and "
                      "model, or an [llm] endpoint (base_url and model)")


def make_stage(settings: "Settings") -> QualityStage | None:
    """The configured quality stage, or None when ``[rerank]`` is off (searches as ranked)."""
    r = settings.rerank
    backend = r.backend.strip().lower()
    if backend not in BACKENDS:
        raise ConfigError(f"setting [rerank] backend must be one of {', '.join(BACKENDS)}, got {r.backend!r}")
    if not CANDIDATES[0] <= r.candidates <= CANDIDATES[1]:
        raise ConfigError(f"setting [rerank] candidates must be between {CANDIDATES[0]} and {CANDIDATES[1]}, "
                          f"got {r.candidates}")
    if not 0 < r.timeout_seconds <= MAX_TIMEOUT:  # NaN fails too
        raise ConfigError(f"setting [rerank] timeout_seconds must be above 0 and at most {MAX_TIMEOUT:g}, "
                          f"got {r.timeout_seconds!r}")
    if backend == "off" and not r.rewrite:
        return None
    reranker: Reranker | None = None
    if backend == "llm":
        reranker = _chat(r.url, r.model, r.api_key_env, r.timeout_seconds, "[rerank] backend = 'llm'")
    elif backend == "endpoint":
        from .endpoint import EndpointReranker

        if not r.url.strip():
            raise ConfigError("[rerank] backend = 'endpoint' needs [rerank] url (the /rerank endpoint)")
        reranker = EndpointReranker(r.url, r.model, r.api_key_env, r.timeout_seconds)
    rewriter = _rewrite_chat(r, settings.llm, reranker) if r.rewrite else None
    return QualityStage(reranker, rewriter, r.candidates)
