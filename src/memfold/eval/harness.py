"""What both evaluation protocols share: a workspace to ingest into, the rankings being compared
(memfold's hybrid search and the keyword-only / vector-only baselines over the same memories),
and progress reporting."""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..config import load_settings
from ..errors import InvalidInputError
from ..facade.memory import Memory, quality_embedder
from ..models import MemoryRecord
from ..providers.embedder import Embedder, embed_query, make_embedder
from ..text.terms import terms
from ..text.tokens import count_many
from .metrics import QuestionResult
from .vector_cache import CachedEmbedder

HYBRID = "memfold"
KEYWORD = "keyword"
VECTOR = "vector"
DEFAULT_KS = (1, 5, 10, 20, 50)


class Progress(Protocol):
    """Where a long run reports how far it is (the CLI shows a progress bar on stderr)."""

    def start(self, description: str, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...


class NoProgress:
    def start(self, description: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


def parse_ks(text: str | Sequence[int], option: str = "--k") -> tuple[int, ...]:
    """``"1,5,10"`` → (1, 5, 10), sorted, distinct, each ≥ 1."""
    parts = [p.strip() for p in text.split(",")] if isinstance(text, str) else [str(p) for p in text]
    try:
        ks = sorted({int(p) for p in parts if p})
    except ValueError:
        raise InvalidInputError(f"{option} must be a comma-separated list of positive integers, got {text!r}") from None
    if not ks or ks[0] < 1:
        raise InvalidInputError(f"{option} must be a comma-separated list of positive integers, got {text!r}")
    return tuple(ks)


def namespace_for(name: object, prefix: str) -> str:
    """A valid user id for a conversation or dialogue user: ``prefix-name`` with odd characters replaced."""
    return f"{prefix}-" + (re.sub(r"[^A-Za-z0-9_.@-]", "_", str(name)).replace("..", "__")[:100].rstrip(".") or "x")


class QueryCachingEmbedder:
    """Wraps an embedder and remembers the vectors of single-text calls (queries), so that asking the
    same question at several k, or by several rankings, embeds it once. Results are unchanged."""

    def __init__(self, inner: Embedder, size: int = 4096):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._size = size
        self._cache: dict[tuple[bool, str], np.ndarray] = {}

    def _cached(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if len(texts) != 1:
            return embed_query(self.inner, texts) if query else self.inner.embed(texts)
        key = (query, texts[0])
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))
            hit = self._cache[key] = embed_query(self.inner, texts) if query else self.inner.embed(texts)
        return hit

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(texts, True)


@contextmanager
def eval_memory(root: str | Path | None, *, embedder: Embedder | None = None,
                policy: dict[str, Any] | None = None, vector_cache: str | Path | None = None) -> Iterator[Memory]:
    """A ``Memory`` in a fresh temporary workspace (removed afterwards), or in ``root`` when given;
    with ``vector_cache`` (a folder) the vectors are kept on disk across runs (``vector_cache.py``)."""
    tmp = None if root else tempfile.mkdtemp(prefix="memfold-eval-")
    caches: list[CachedEmbedder] = []
    try:
        settings = load_settings(root or tmp)
        inner = embedder or make_embedder(settings.embedder)
        second = quality_embedder(settings)  # [search] profile = "quality": its second model, cached the same way
        if vector_cache is not None:
            inner = CachedEmbedder(inner, vector_cache)
            caches.append(inner)
        if second is not None and vector_cache is not None:
            second = CachedEmbedder(second, vector_cache)
            caches.append(second)
        second_embedder = QueryCachingEmbedder(second) if second is not None else None
        with Memory(root=root or tmp, embedder=QueryCachingEmbedder(inner), policy=policy, background=False,
                    second_embedder=second_embedder) as mem:
            yield mem
    finally:
        for cached in caches:
            cached.close()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def require_empty(mem: Memory, user_id: str) -> None:
    """Evaluating into a namespace that already holds memories would mix runs: refuse."""
    n = mem.index.count(user_id, active_only=False)
    if n:
        raise InvalidInputError(f"namespace {user_id!r} in {mem.settings.root} already holds {n} memories; "
                                f"evaluate into an empty --root (or none, for a temporary workspace)")


def rank(mem: Memory, method: str, query: str, user_id: str, k: int, now: datetime | None = None
         ) -> list[MemoryRecord]:
    """The top ``k`` memories of a namespace for ``query`` by one ranking method (asked at ``now``)."""
    if method == HYBRID:
        return [h.record for h in mem.search(query, user_id, limit=k, record_access=False, now=now)]
    if method == KEYWORD:
        qterms = terms(query, query=True)
        ids = [mid for mid, _ in mem.index.keyword_search(user_id, qterms, k)] if qterms else []
    elif method == VECTOR:
        ids = [mid for mid, _ in mem.index.vector_search(user_id, embed_query(mem.embedder, [query])[0], k)]
    else:
        raise InvalidInputError(f"unknown ranking method {method!r}")
    return mem.index.get(user_id, ids)


def ask(mem: Memory, method: str, query: str, user_id: str, ks: Sequence[int], category: str,
        gold: Sequence[str], now: datetime | None = None) -> QuestionResult:
    """Rank once per k (a search with ``limit=k`` is what a caller asking for k memories gets)."""
    found: dict[int, frozenset[str]] = {}
    tokens: dict[int, int] = {}
    for k in ks:
        top = rank(mem, method, query, user_id, k, now)
        found[k] = frozenset(s for r in top for s in r.source_ids)
        tokens[k] = sum(count_many([r.content for r in top]))
    return QuestionResult(category=category, gold=tuple(gold), found=found, tokens=tokens)


def existing_file(path: str | Path, what: str, example: str) -> Path:
    """``path`` as a benchmark's data file: an error naming the problem when it is missing or a folder."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"{what} file {p} does not exist")
    if p.is_dir():
        raise InvalidInputError(f"{p} is a folder; give the {what} JSON file (e.g. {example})")
    return p


def ask_all(mem: Memory, probes: Sequence["Probe"], results: dict[str, list[QuestionResult]], ks: Sequence[int],
            progress: "Progress", label: str = "asking questions") -> None:
    """Every probe asked by every method of ``results`` (their lists are appended to), once the
    vectors computed after the adds are stored (``Memory.flush_vectors``)."""
    mem.flush_vectors()
    progress.start(label, len(probes) * len(results))
    for p in probes:
        for method, bucket in results.items():
            bucket.append(ask(mem, method, p.query, p.namespace, ks, p.category, p.gold, p.now))
            progress.advance()


@dataclass(frozen=True)
class Probe:
    """One scored question of a benchmark: ``group`` is its unit for cross-validation (a LoCoMo
    conversation, a MADial dialogue, a LongMemEval question); ``now`` is when the question is asked
    (LongMemEval's ``question_date``; None = the clock)."""

    group: str
    namespace: str
    query: str
    gold: tuple[str, ...]
    category: str
    now: datetime | None = None


def use_policy(mem: Memory, overrides: dict[str, Any]) -> None:
    """Search ``mem`` with these policy arguments from now on (tuning asks the same ingested
    memories under many policies; only read-path keys make sense here)."""
    mem.use_policy_arguments(dict(overrides))


def methods(baselines: bool) -> tuple[str, ...]:
    return (HYBRID, KEYWORD, VECTOR) if baselines else (HYBRID,)


class Clock:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def seconds(self) -> float:
        return round(time.perf_counter() - self.t0, 2)
