"""``CachedIndex``: the read side of an index (``SearchIndex``, ``RecordStore``) answered from a
cache when the index has not changed since, everything else passed through unchanged.

Every key holds the index's identity and its change counter (``change_counter(user_id)``, grown by
every write of memory rows, in any process: of that namespace on SQLite, of any namespace on
PostgreSQL), so a write makes every earlier answer it could change unreachable and a hit is
exactly what the index answers now. Cached:

- **query results**: ``keyword_search`` (namespace, terms, limit) and ``vector_search`` (namespace,
  the vector's bytes, limit): ids and scores, which only change when rows change (access
  statistics are not part of them);
- **prepared answers** (``prepared``, ``keep_prepared``; ``cache/answers.py``): a whole search
  worked out up to its scores, in process, keyed by the namespace, the search's arguments and the
  counter; the search scores it again with the candidates' current access statistics;
- **the hot set** (``hot``): a namespace's ``hot_size`` (20) active memories most often accessed,
  recomputed after any write of rows or after ``ttl`` (1 h); the access counts it shows are those
  of when it was computed (reading is no write: an access does not change the counter).

An index that is inside a write transaction of this process (``change_counter()`` is None) is not
cached: what it answers may be rolled back.

``pinned(user_id)`` reads the counter once for the lookups of one search on this thread (keyword
and vector candidates: one round trip instead of two on PostgreSQL): the search answers as the index
stood when it began, as one statement would. ``search_scope(user_id)`` (the read path opens one per
search) keeps that reading for the search's later lookups (keyword feedback) and opens the index's
own scope (``index/pg_scope.py``), told of the candidates a cache hit returns: it reads their rows
in one round trip."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from array import array
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, cast

import numpy as np

from ..metrics import record_cache
from ..models import MemoryRecord
from .answers import AnswerCache, Prepared
from .backends import SKIP, CacheBackend, LocalCache

_BIG_ENDIAN = sys.byteorder == "big"
KEPT_BYTES, PAIR_BYTES = 256, 160  # what an in-process entry of search results holds, about (``_kept``)
_SCORED = b"MFS1"  # a scored list: this tag, the count (4 bytes), the scores (float64), the ids joined by "\n"


def encode_scored(result: Sequence[tuple[str, float]]) -> bytes:
    """A list of (id, score) as bytes: the scores as float64 (exact), the ids as UTF-8 lines; a tenth of
    JSON's time for the 20-40 pairs of a search. Ids with a line break (none that memfold makes) in JSON."""
    ids = [i for i, _ in result]
    if any("\n" in i for i in ids):
        return json.dumps(result, default=float).encode("utf-8")
    scores = array("d", [s for _, s in result])
    if _BIG_ENDIAN:  # stored little-endian: a shared Redis may serve other machines
        scores.byteswap()
    return _SCORED + len(ids).to_bytes(4, "little") + scores.tobytes() + "\n".join(ids).encode("utf-8", "surrogatepass")


def decode_scored(got: bytes) -> list[tuple[str, float]] | None:
    """What ``encode_scored`` made (or the JSON of an earlier version); None for anything else."""
    try:
        if got[:4] == _SCORED and len(got) >= 8:
            n = int.from_bytes(got[4:8], "little")
            end = 8 + 8 * n
            if len(got) < end:
                return None
            ids = got[end:].decode("utf-8", "surrogatepass").split("\n") if n else []
            if len(ids) != n:
                return None
            scores = array("d")
            scores.frombytes(got[8:end])
            if _BIG_ENDIAN:
                scores.byteswap()
            return list(zip(ids, scores))
        data = json.loads(got)
        return [(str(i), float(s)) for i, s in data] if isinstance(data, list) else None
    except (ValueError, TypeError):  # not what this version stores (a shared Redis)
        return None


class CachedIndex:
    """An ``Index`` whose searches and hot set go through ``cache``; any other attribute is the index's."""

    def __init__(self, index: Any, cache: CacheBackend, *, ttl: float = 3600.0, hot_size: int = 20,
                 answers: int = 128):
        self._index = index
        self.answers = AnswerCache(answers, ttl)  # prepared search answers, in process (cache/answers.py)
        self.cache = cache
        self.ttl = ttl
        self.hot_size = hot_size
        self._prefix = f"memfold:v1:{index.instance_id()}"  # v1: the encoding of the values below
        # in process only (``memory``): search results kept as they are, under plain tuples (no key
        # hashed, nothing encoded: ~10 µs a lookup and a value less, three times per search)
        self._objects = isinstance(cache, LocalCache)
        self._pins = threading.local()  # user_id -> the counter read at the start of this thread's search
        self._scoped = threading.local()  # user_id -> the counter of this thread's search (search_scope)

    @property
    def inner(self) -> Any:
        """The index this cache stands in front of."""
        return self._index

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    @contextmanager
    def search_scope(self, user_id: str) -> Iterator[None]:
        """One search: the counter its first ``pinned`` block reads serves its later lookups too; the
        index's own scope, if it has one, is open meanwhile."""
        scoped = self._scoped.__dict__
        if user_id in scoped:  # nested: the outer search stands
            yield
            return
        inner = getattr(self._index, "search_scope", None)
        scoped[user_id] = None
        try:
            with inner(user_id) if callable(inner) else nullcontext():
                yield
        finally:
            scoped.pop(user_id, None)

    @contextmanager
    def pinned(self, user_id: str) -> Iterator[None]:
        """Within the block, this thread's lookups of ``user_id`` use one reading of the change counter."""
        pins = self._pins.__dict__
        if user_id in pins:  # nested: the outer reading stands
            yield
            return
        scoped = self._scoped.__dict__
        seen = scoped.get(user_id)  # the search's reading, if an earlier block of it took one
        if seen is None:
            take = getattr(self._index, "take_counter", None)  # PostgreSQL: read with the files' states by sync
            seen = take() if callable(take) else None
        pins[user_id] = seen if seen is not None else self._index.change_counter(user_id)
        if user_id in scoped:
            scoped[user_id] = pins[user_id]
        try:
            yield
        finally:
            del pins[user_id]

    def _counter(self, user_id: str) -> int | None:
        pins = self._pins.__dict__
        if user_id in pins:
            return pins[user_id]
        seen = self._scoped.__dict__.get(user_id)
        return seen if seen is not None else self._index.change_counter(user_id)

    def _key(self, kind: str, counter: int, *parts: Any) -> str:
        digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=16).hexdigest()
        return f"{self._prefix}:{kind}:{counter}:{digest}"

    def _lookup(self, kind: str, key: str) -> bytes | None:
        got = self.cache.get(key)
        if got is SKIP:
            record_cache(kind, "skip")
            return None
        record_cache(kind, "miss" if got is None else "hit")
        return got  # type: ignore[return-value]

    # ---- SearchIndex -------------------------------------------------------------------------
    def keyword_search(self, user_id: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        counter = self._counter(user_id)
        if counter is None:
            return self._index.keyword_search(user_id, terms, limit)
        if self._objects:
            return self._kept("query", ("kw", counter, user_id, tuple(terms), limit),
                              lambda: self._index.keyword_search(user_id, terms, limit), user_id)
        key = self._key("kw", counter, user_id, tuple(terms), limit)
        return self._scored("query", key, lambda: self._index.keyword_search(user_id, terms, limit), user_id)

    def vector_search(self, user_id: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        counter = self._counter(user_id)
        if counter is None:
            return self._index.vector_search(user_id, vector, limit)
        v = np.ascontiguousarray(vector, dtype=np.float32)
        if self._objects:  # the vector's bytes are the key (2 KB at 512 dimensions, counted in the entry's size)
            return self._kept("vector", ("vec", counter, user_id, v.tobytes(), v.shape, limit),
                              lambda: self._index.vector_search(user_id, vector, limit), user_id, v.nbytes)
        key = self._key("vec", counter, user_id, hashlib.blake2b(v.tobytes(), digest_size=16).hexdigest(),
                        v.shape, limit)
        return self._scored("vector", key, lambda: self._index.vector_search(user_id, vector, limit), user_id)

    def vector_search_many(self, user_id: str, vectors: np.ndarray, limit: int,
                           min_score: float | None = None) -> list[list[tuple[str, float]]]:
        # the write path's near-duplicate check: a write follows, so nothing would be reused
        return self._index.vector_search_many(user_id, vectors, limit, min_score)

    def _scored(self, kind: str, key: str, compute: Any, user_id: str) -> list[tuple[str, float]]:
        got = self._lookup(kind, key)
        if got is not None:
            found = decode_scored(got)
            if found is not None:  # else not what this version stores (a shared Redis): ask the index
                self._expect(user_id, found)
                return found
        result = compute()
        self.cache.set(key, encode_scored(result), self.ttl)
        return result

    def _expect(self, user_id: str, found: Sequence[tuple[str, float]]) -> None:
        """Tell the index which rows a search answered from the cache reads next (``expect_rows``)."""
        expect = getattr(self._index, "expect_rows", None)
        if callable(expect):
            expect(user_id, [mid for mid, _ in found])

    def _kept(self, kind: str, key: tuple[Any, ...], compute: Any, user_id: str, key_bytes: int = 0
              ) -> list[tuple[str, float]]:
        """``_scored`` for the in-process cache: the result kept as a tuple (the caller's list is its own)."""
        cache = cast(LocalCache, self.cache)
        got = cache.get(key)
        record_cache(kind, "miss" if got is None else "hit")
        if got is not None:
            self._expect(user_id, got)
            return list(got)
        result = compute()
        # its size: the key's bytes, then per (id, score) pair a tuple, a float and the id's share
        cache.set(key, tuple(result), self.ttl, KEPT_BYTES + key_bytes + PAIR_BYTES * len(result))
        return result

    # ---- prepared answers (cache/answers.py) ---------------------------------------------------
    def prepared(self, user_id: str, parts: Hashable) -> tuple[Hashable | None, Prepared | None]:
        """The prepared answer of the search ``parts`` (its arguments) at the counter this search reads
        (inside ``pinned``), and the key to keep one under (None: not cached, inside a write)."""
        counter = self._counter(user_id)
        if counter is None or not callable(getattr(self._index, "access_stats", None)):
            return None, None
        key = (user_id, counter, parts)
        got = self.answers.get(key)
        record_cache("answer", "miss" if got is None else "hit")
        return key, got

    def keep_prepared(self, key: Hashable, value: Prepared) -> None:
        self.answers.put(key, value)

    # ---- the hot set ---------------------------------------------------------------------------
    def hot(self, user_id: str) -> list[MemoryRecord]:
        """The namespace's ``hot_size`` active memories with the most accesses, most accessed first."""
        counter = self._index.change_counter(user_id)
        if counter is None:
            return self._index.most_accessed(user_id, self.hot_size)
        key = self._key("hot", counter, user_id, self.hot_size)
        got = self._lookup("hot", key)
        if got is not None:
            try:
                return [MemoryRecord.from_dict(d) for d in json.loads(got)]
            except (ValueError, TypeError, KeyError, AttributeError):  # not what this version stores
                pass
        rows = self._index.most_accessed(user_id, self.hot_size)
        self.cache.set(key, json.dumps([r.to_dict() for r in rows], ensure_ascii=False).encode("utf-8"), self.ttl)
        return rows

    def close(self) -> None:
        try:
            self._index.close()
        finally:
            self.answers.clear()
            self.cache.close()
