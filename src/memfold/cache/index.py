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
in one round trip.

``CachedIndex`` provides every required protocol of the index contract (``index/base.py``):
``SearchIndex`` from the cache, the others passed to the index. Of the optional ones it provides
``ChangeCounter``, ``SearchScope``, ``PinnedCounter``, ``PreparedAnswers`` and ``HotSet``, and passes
through each other one the wrapped index provides (``PASSED``): ``CachedIndex(index, ...)`` makes an
object of the subclass that adds exactly those (one class per set of capabilities), so
``capability(cached, Transactions)`` is None in front of an index without transactions."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from array import array
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import Any, cast

import numpy as np

from ..filters import Filter
from ..index.base import (
    OPTIONAL,
    AccessStats,
    AllFileStates,
    ChangeCounter,
    DocTerms,
    ExpectedRows,
    FileRecords,
    Index,
    IndexItem,
    QueuedAccess,
    ReadOnlyMode,
    SearchFootprint,
    SearchScope,
    SecondVectors,
    SharedReads,
    StorageSize,
    TakenCounter,
    TermsHeld,
    Transactions,
    capability,
)
from ..index.rows import FileState, RelationRow, StateDoc
from ..metrics import record_cache
from ..models import HistoryEntry, MemoryRecord
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
    """An ``Index`` whose searches and hot set go through ``cache``; every other call is the index's
    (module doc: which capabilities it provides)."""

    _index: Index

    def __new__(cls, index: Any, *args: Any, **kwargs: Any) -> "CachedIndex":
        return super().__new__(cached_class(index) if cls is CachedIndex else cls)

    def __init__(self, index: Any, cache: CacheBackend, *, ttl: float = 3600.0, hot_size: int = 20,
                 answers: int = 128):
        counter = capability(index, ChangeCounter)
        if counter is None:
            raise TypeError(f"a cache needs an index with a change counter; {type(index).__name__} has none")
        self._index = index
        self._changes = counter
        self._taken = capability(index, TakenCounter)
        self._expects = capability(index, ExpectedRows)
        self._scope = capability(index, SearchScope)
        self._stats = capability(index, AccessStats)
        self.answers = AnswerCache(answers, ttl)  # prepared search answers, in process (cache/answers.py)
        self.cache = cache
        self.ttl = ttl
        self.hot_size = hot_size
        self._prefix = f"memfold:v1:{counter.instance_id()}"  # v1: the encoding of the values below
        # in process only (``memory``): search results kept as they are, under plain tuples (no key
        # hashed, nothing encoded: ~10 µs a lookup and a value less, three times per search)
        self._objects = isinstance(cache, LocalCache)
        self._pins = threading.local()  # user_id -> the counter read at the start of this thread's search
        self._scoped = threading.local()  # user_id -> the counter of this thread's search (search_scope)

    @property
    def inner(self) -> Any:
        """The index this cache stands in front of."""
        return self._index

    # ---- ChangeCounter -------------------------------------------------------------------------
    def change_counter(self, user_id: str | None = None) -> int | None:
        return self._changes.change_counter(user_id)

    def instance_id(self) -> str:
        return self._changes.instance_id()

    @contextmanager
    def search_scope(self, user_id: str) -> Iterator[None]:
        """One search: the counter its first ``pinned`` block reads serves its later lookups too; the
        index's own scope, if it has one, is open meanwhile."""
        scoped = self._scoped.__dict__
        if user_id in scoped:  # nested: the outer search stands
            yield
            return
        scoped[user_id] = None
        try:
            with self._scope.search_scope(user_id) if self._scope is not None else nullcontext():
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
            # PostgreSQL: read with the files' states by sync
            seen = self._taken.take_counter() if self._taken is not None else None
        pins[user_id] = seen if seen is not None else self._changes.change_counter(user_id)
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
        return seen if seen is not None else self._changes.change_counter(user_id)

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
        if self._expects is not None:
            self._expects.expect_rows(user_id, [mid for mid, _ in found])

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
        if counter is None or self._stats is None:
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
        counter = self._changes.change_counter(user_id)
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

    # ---- the rest of the required protocols: the index's own answers ----------------------------
    @property
    def dim(self) -> int:
        return self._index.dim

    def upsert(self, items: Sequence[IndexItem]) -> None:
        self._index.upsert(items)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        self._index.delete(user_id, ids)

    def get(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        return self._index.get(user_id, ids)

    def list_records(self, user_id: str, *, active_only: bool = True, file: str | None = None,
                     memory_type: str | None = None, limit: int | None = None,
                     offset: int = 0, where_filter: Filter | None = None) -> list[MemoryRecord]:
        return self._index.list_records(user_id, active_only=active_only, file=file, memory_type=memory_type,
                                        limit=limit, offset=offset, where_filter=where_filter)

    def matching_ids(self, user_id: str, ids: Sequence[str], where_filter: Filter) -> set[str]:
        return self._index.matching_ids(user_id, ids, where_filter)

    def owners(self, memory_id: str) -> list[str]:
        return self._index.owners(memory_id)

    def count(self, user_id: str, *, active_only: bool = True) -> int:
        return self._index.count(user_id, active_only=active_only)

    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        return self._index.foreign_ids(user_id, ids)

    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        self._index.record_access(user_id, ids, at)

    def superseded(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        return self._index.superseded(user_id, ids)

    def quoting(self, user_id: str, texts: Sequence[str]) -> list[MemoryRecord]:
        return self._index.quoting(user_id, texts)

    def turns_of(self, user_id: str, keys: Sequence[str]) -> list[MemoryRecord]:
        return self._index.turns_of(user_id, keys)

    def most_accessed(self, user_id: str, limit: int) -> list[MemoryRecord]:
        return self._index.most_accessed(user_id, limit)

    def append_history(self, entries: Sequence[HistoryEntry]) -> None:
        self._index.append_history(entries)

    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]:
        return self._index.history(user_id, memory_id)

    def add_relation(self, user_id: str, source_id: str, target_id: str, relation: str, strength: float) -> None:
        self._index.add_relation(user_id, source_id, target_id, relation, strength)

    def relations(self, user_id: str, memory_id: str) -> list[dict[str, Any]]:
        return self._index.relations(user_id, memory_id)

    def remove_relation(self, user_id: str, source_id: str, target_id: str, relation: str | None = None) -> int:
        return self._index.remove_relation(user_id, source_id, target_id, relation)

    def log_usage(self, user_id: str, at: datetime, query: str, ids: Sequence[str], keep: int,
                  since: datetime | None) -> None:
        self._index.log_usage(user_id, at, query, ids, keep, since)

    def usage(self, user_id: str, limit: int) -> list[dict[str, Any]]:
        return self._index.usage(user_id, limit)

    def forget_usage(self, user_id: str, ids: Sequence[str], words: Sequence[str] = ()) -> int:
        return self._index.forget_usage(user_id, ids, words)

    def forget_text(self, user_id: str, ids: Sequence[str], texts: Sequence[str]) -> int:
        return self._index.forget_text(user_id, ids, texts)

    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None:
        self._index.put_state(user_id, kind, key, value)

    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None:
        return self._index.get_state(user_id, kind, key)

    def list_state(self, user_id: str, kind: str) -> list[str]:
        return self._index.list_state(user_id, kind)

    def delete_state(self, user_id: str, kind: str, key: str) -> None:
        self._index.delete_state(user_id, kind, key)

    def content_hashes(self, user_id: str, file: str) -> dict[str, str]:
        return self._index.content_hashes(user_id, file)

    def file_state(self, user_id: str, file: str) -> tuple[int, int] | None:
        return self._index.file_state(user_id, file)

    def set_file_state(self, user_id: str, file: str, state: tuple[int, int] | None) -> None:
        self._index.set_file_state(user_id, file, state)

    def clear_files(self, user_id: str) -> None:
        self._index.clear_files(user_id)

    def try_lease(self, user_id: str, name: str, holder: str, ttl: float) -> bool:
        return self._index.try_lease(user_id, name, holder, ttl)

    def release_lease(self, user_id: str, name: str, holder: str) -> None:
        self._index.release_lease(user_id, name, holder)

    def user_ids(self) -> list[str]:
        return self._index.user_ids()

    def stats(self, user_id: str) -> dict[str, Any]:
        return self._index.stats(user_id)

    def namespaces(self) -> list[str]:
        return self._index.namespaces()

    def iter_rows(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[IndexItem]:
        return self._index.iter_rows(user_id, batch=batch)

    def iter_history(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[HistoryEntry]:
        return self._index.iter_history(user_id, batch=batch)

    def iter_relations(self, user_id: str | None = None) -> Iterator[RelationRow]:
        return self._index.iter_relations(user_id)

    def iter_file_states(self, user_id: str | None = None) -> Iterator[FileState]:
        return self._index.iter_file_states(user_id)

    def iter_states(self, user_id: str | None = None) -> Iterator[StateDoc]:
        return self._index.iter_states(user_id)

    def pending_vectors(self, limit: int) -> list[MemoryRecord]:
        return self._index.pending_vectors(limit)

    def set_vectors(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        return self._index.set_vectors(records, vectors)


# ---- optional capabilities passed through when the wrapped index has them ----------------------
# Each class below is mixed into a subclass of CachedIndex only for an index that provides its
# protocol (``cached_class``), so ``_index`` has the methods it calls.
class _PassAccessStats:
    _index: Any

    def access_stats(self, user_id: str, ids: Sequence[str]) -> dict[str, tuple[int, datetime | None]]:
        return cast(AccessStats, self._index).access_stats(user_id, ids)


class _PassAllFileStates:
    _index: Any

    def file_states(self, user_id: str) -> dict[str, tuple[int, int]]:
        return cast(AllFileStates, self._index).file_states(user_id)


class _PassSharedReads:
    _index: Any

    def get_shared(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        return cast(SharedReads, self._index).get_shared(user_id, ids)


class _PassFileRecords:
    _index: Any

    def records_of_files(self, user_id: str, files: Sequence[str]) -> dict[str, list[MemoryRecord]]:
        return cast(FileRecords, self._index).records_of_files(user_id, files)


class _PassTransactions:
    _index: Any

    def transaction(self) -> AbstractContextManager[Any]:
        return cast(Transactions, self._index).transaction()


class _PassTermsHeld:
    _index: Any

    def terms_held(self, user_id: str, ids: Sequence[str], terms: Sequence[str]) -> dict[str, int]:
        return cast(TermsHeld, self._index).terms_held(user_id, ids, terms)


class _PassDocTerms:
    _index: Any

    def doc_terms(self, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, int]]:
        return cast(DocTerms, self._index).doc_terms(user_id, ids)


class _PassReadOnlyMode:
    _index: Any

    @property
    def read_only(self) -> bool:
        return cast(ReadOnlyMode, self._index).read_only


class _PassStorageSize:
    _index: Any

    def storage_bytes(self) -> int:
        return cast(StorageSize, self._index).storage_bytes()


class _PassSearchFootprint:
    _index: Any

    def search_footprint(self) -> dict[str, dict[str, dict[str, int]]]:
        return cast(SearchFootprint, self._index).search_footprint()


class _PassQueuedAccess:
    _index: Any

    def flush_access(self) -> int:
        return cast(QueuedAccess, self._index).flush_access()


class _PassSecondVectors:
    _index: Any

    def pending_second_vectors(self, model: str, limit: int) -> list[MemoryRecord]:
        return cast(SecondVectors, self._index).pending_second_vectors(model, limit)

    def set_second_vectors(self, model: str, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        return cast(SecondVectors, self._index).set_second_vectors(model, records, vectors)

    def second_vectors(self, user_id: str, model: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return cast(SecondVectors, self._index).second_vectors(user_id, model, ids)


PASSED: dict[type, type] = {  # optional capability -> what passes it through
    AccessStats: _PassAccessStats, AllFileStates: _PassAllFileStates, SharedReads: _PassSharedReads,
    FileRecords: _PassFileRecords, Transactions: _PassTransactions, TermsHeld: _PassTermsHeld,
    DocTerms: _PassDocTerms, ReadOnlyMode: _PassReadOnlyMode, StorageSize: _PassStorageSize,
    SearchFootprint: _PassSearchFootprint, QueuedAccess: _PassQueuedAccess, SecondVectors: _PassSecondVectors}
_CLASSES: dict[tuple[type, ...], type[CachedIndex]] = {}  # at most one per set of the capabilities above
_CLASSES_LOCK = threading.Lock()


def cached_class(index: object) -> type[CachedIndex]:
    """The subclass of ``CachedIndex`` that passes through exactly the capabilities of ``PASSED``
    that ``index`` provides."""
    passed = tuple(p for p in OPTIONAL if p in PASSED and capability(index, p) is not None)
    cls = _CLASSES.get(passed)
    if cls is None:
        with _CLASSES_LOCK:
            cls = _CLASSES.get(passed)
            if cls is None:
                name = "CachedIndex" + "".join(f"+{p.__name__}" for p in passed)
                cls = _CLASSES[passed] = cast(type[CachedIndex], type(name, (CachedIndex, *(PASSED[p] for p in passed)),
                                                                     {"__module__": __name__}))
    return cls
