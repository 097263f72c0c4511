"""The index contract: every capability an index may have, each a named protocol, in one place.

**Required** (``REQUIRED``; ``Index`` is all of them): ``RecordStore`` (memory rows),
``SearchIndex`` (keyword and vector search), ``HistoryLog`` (what happened to memories and the
relations it left), ``StateStore`` (small JSON documents), ``FileStates`` (what the index knows of
the workspace files), ``Leases`` (one maintenance run per namespace at a time), ``IndexAdmin``
(namespaces, statistics, closing), ``RowSource`` (every stored row, for a copy:
``index/transfer.py``) and ``VectorBacklog`` (rows stored before their vector).

**Optional** (``OPTIONAL``): what a backend offers to answer faster or with fewer round trips, and
what the hot cache (``cache/index.py``) adds. The engine asks for one with
``capability(index, Protocol)``, which returns the index typed as that protocol or None; it never
looks a method up by name. Each protocol's docstring says which backends provide it:
``SqliteIndex`` (embedded default), ``PostgresIndex`` and ``CachedIndex`` (which offers a backend
capability only when the index it wraps has it). ``tests/contract`` checks every protocol against
both backends, bare and behind the cache.

Everything is scoped by ``user_id``: no call returns rows of another namespace."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..errors import ConfigError
from ..filters import Filter
from ..models import HistoryEntry, MemoryRecord
from .rows import FileState, RelationRow, StateDoc

if TYPE_CHECKING:
    from ..config import Settings


@dataclass(frozen=True)
class IndexItem:
    """A record to write. ``vector=None`` keeps the stored vector; ``terms=None`` keeps the stored terms.

    ``RowSource.iter_rows`` yields stored rows as IndexItems too: there ``vector`` is the stored
    vector and ``terms=None`` means the row is not keyword-searchable (archived).

    ``vector_later``: a new row may be stored without its vector (write-ahead mode); it is
    keyword-searchable at once and ``VectorBacklog.set_vectors`` gives it its vector."""

    record: MemoryRecord
    vector: np.ndarray | None = None
    terms: str | None = None
    content_hash: str = ""
    vector_later: bool = False


@runtime_checkable
class RecordStore(Protocol):
    """Required. Memory rows of a namespace: write, read, list, count. SqliteIndex, PostgresIndex;
    CachedIndex answers nothing of it from its cache (passes it through)."""

    def upsert(self, items: Sequence[IndexItem]) -> None: ...
    def delete(self, user_id: str, ids: Sequence[str]) -> None: ...
    def get(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]: ...
    def list_records(self, user_id: str, *, active_only: bool = True, file: str | None = None,
                     memory_type: str | None = None, limit: int | None = None,
                     offset: int = 0, where_filter: Filter | None = None) -> list[MemoryRecord]:
        """The namespace's rows in the order they were first written (``where_filter``: those that match it)."""
        ...
    def matching_ids(self, user_id: str, ids: Sequence[str], where_filter: Filter) -> set[str]:
        """The ids among ``ids`` whose rows of the namespace match the filter."""
        ...
    def owners(self, memory_id: str) -> list[str]:
        """The namespaces that hold a row or a history entry of ``memory_id``."""
        ...
    def count(self, user_id: str, *, active_only: bool = True) -> int: ...
    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """The ids among ``ids`` that rows of another namespace hold (ids are unique across the
        index: a bullet copied from one user's file into another's must get a new id)."""
        ...
    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None: ...
    # deleted means deleted (engine/storage/purge.py)
    def superseded(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The archived rows whose ``superseded_by`` is one of ``ids`` (their older versions)."""
        ...
    def quoting(self, user_id: str, texts: Sequence[str]) -> list[MemoryRecord]:
        """The rows whose ``context`` contains one of ``texts`` (an episodic turn quotes the previous one)."""
        ...
    def turns_of(self, user_id: str, keys: Sequence[str]) -> list[MemoryRecord]:
        """The active episodic turns whose key (first source id) is one of ``keys``: the turns a
        memory listing those source ids was extracted from."""
        ...
    def most_accessed(self, user_id: str, limit: int) -> list[MemoryRecord]:
        """The namespace's ``limit`` active memories with the most accesses (ties: latest access, id);
        the hot set (``Memory.hot_memories``) when no cache keeps it (``HotSet``)."""
        ...


@runtime_checkable
class SearchIndex(Protocol):
    """Required. Keyword (BM25 over the stored terms) and vector (cosine) search within a namespace.
    SqliteIndex, PostgresIndex; CachedIndex answers ``keyword_search`` and ``vector_search`` from its
    cache while the index is unchanged."""

    dim: int

    def keyword_search(self, user_id: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]: ...
    def vector_search(self, user_id: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]: ...
    def vector_search_many(self, user_id: str, vectors: np.ndarray, limit: int,
                           min_score: float | None = None) -> list[list[tuple[str, float]]]:
        """Per row of ``vectors``, the best ``limit`` rows (cosine, best first); with ``min_score``
        only those scoring at least that (the near-duplicate check asks for cosine ≥ threshold)."""
        ...


@runtime_checkable
class HistoryLog(Protocol):
    """Required. What happened to memories (history entries, in the order written) and the relations
    it left. SqliteIndex, PostgresIndex; CachedIndex passes it through."""

    def append_history(self, entries: Sequence[HistoryEntry]) -> None: ...
    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]: ...
    def add_relation(self, user_id: str, source_id: str, target_id: str, relation: str, strength: float) -> None: ...
    def relations(self, user_id: str, memory_id: str) -> list[dict[str, Any]]: ...
    def remove_relation(self, user_id: str, source_id: str, target_id: str, relation: str | None = None) -> int:
        """Delete the relations from ``source_id`` to ``target_id`` (of one kind, or all); how many."""
        ...
    def log_usage(self, user_id: str, at: datetime, query: str, ids: Sequence[str], keep: int,
                  since: datetime | None) -> None:
        """Record one search (its query, time and the ids it returned), then drop the namespace's
        entries older than ``since`` and all but the newest ``keep``."""
        ...
    def usage(self, user_id: str, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` entries of the usage record: ``at``, ``query``, ``ids``; newest first."""
        ...
    def forget_usage(self, user_id: str, ids: Sequence[str], words: Sequence[str] = ()) -> int:
        """Delete the usage entries that name one of ``ids`` or whose query holds one of ``words``."""
        ...
    def forget_text(self, user_id: str, ids: Sequence[str], texts: Sequence[str]) -> int:
        """After ``ids`` were deleted: their history keeps its events but no words, every other history
        entry of the namespace loses the fields that quote one of ``texts`` (``forgetting.scrub``), and
        copies the backend keeps elsewhere go (SQLite: the search snapshot, the WAL). Returns the number
        of history entries changed."""
        ...


@runtime_checkable
class StateStore(Protocol):
    """Required. Small JSON documents of engine state (sessions, agent pin lists), keyed by (user_id,
    kind, key). SqliteIndex, PostgresIndex; CachedIndex passes it through."""

    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None: ...
    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None: ...
    def list_state(self, user_id: str, kind: str) -> list[str]: ...
    def delete_state(self, user_id: str, kind: str, key: str) -> None: ...


@runtime_checkable
class FileStates(Protocol):
    """Required. What the index knows of a namespace's workspace files: their (mtime_ns, size) when
    last indexed and the content hashes of their rows (reconciliation of hand edits, reindex).
    SqliteIndex, PostgresIndex; CachedIndex passes it through."""

    def content_hashes(self, user_id: str, file: str) -> dict[str, str]: ...
    def file_state(self, user_id: str, file: str) -> tuple[int, int] | None: ...
    def set_file_state(self, user_id: str, file: str, state: tuple[int, int] | None) -> None: ...
    def clear_files(self, user_id: str) -> None: ...


@runtime_checkable
class Leases(Protocol):
    """Required. One holder at a time of a named lease per namespace, across processes and machines
    (maintenance runs): a row in the SQLite index that expires after ``ttl`` seconds (or at once
    when its holder's process on this machine is gone), an advisory lock on PostgreSQL. CachedIndex
    passes it through."""

    def try_lease(self, user_id: str, name: str, holder: str, ttl: float) -> bool:
        """Take the lease for ``holder``; False when another live holder has it."""
        ...
    def release_lease(self, user_id: str, name: str, holder: str) -> None: ...


@runtime_checkable
class IndexAdmin(Protocol):
    """Required. Namespaces, statistics, closing. SqliteIndex, PostgresIndex; CachedIndex passes it
    through (its ``close`` empties its cache too)."""

    def user_ids(self) -> list[str]:
        """The namespaces holding memory rows."""
        ...
    def stats(self, user_id: str) -> dict[str, Any]: ...
    def close(self) -> None: ...


@runtime_checkable
class RowSource(Protocol):
    """Required. Every stored row, with named fields, read in batches (``index/transfer.py`` copies an
    index with these). ``user_id=None``: every namespace. Rows come in the order they were written.
    SqliteIndex, PostgresIndex (and ``SqliteSource``, a read-only view of an index file); CachedIndex
    passes it through."""

    dim: int

    def namespaces(self) -> list[str]:
        """Every user id with a memory, history entry, file state or state document."""
        ...
    def iter_rows(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[IndexItem]:
        """Memory rows (archived ones and episodic turns too) with their stored vector, terms and content hash."""
        ...
    def iter_history(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[HistoryEntry]: ...
    def iter_relations(self, user_id: str | None = None) -> Iterator[RelationRow]: ...
    def iter_file_states(self, user_id: str | None = None) -> Iterator[FileState]: ...
    def iter_states(self, user_id: str | None = None) -> Iterator[StateDoc]: ...


@runtime_checkable
class VectorBacklog(Protocol):
    """Required. Rows stored without their vector (write-ahead mode) and giving them one.
    SqliteIndex, PostgresIndex; CachedIndex passes it through."""

    def pending_vectors(self, limit: int) -> list[MemoryRecord]:
        """Up to ``limit`` rows of any namespace that have no vector yet, oldest first."""
        ...
    def set_vectors(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        """Store the vectors of rows that still lack one (a row deleted or given a vector since is
        left alone); returns how many rows got theirs."""
        ...


@runtime_checkable
class Index(RecordStore, SearchIndex, HistoryLog, StateStore, FileStates, Leases, IndexAdmin, RowSource, VectorBacklog,
            Protocol):
    """Every required capability: what any backend must provide."""


REQUIRED: tuple[type, ...] = (RecordStore, SearchIndex, HistoryLog, StateStore, FileStates, Leases, IndexAdmin,
                              RowSource, VectorBacklog)


# ---- optional: offered by a backend ------------------------------------------------------------
@runtime_checkable
class ChangeCounter(Protocol):
    """Optional. A number that grows with every committed write of memory rows, in any process, and
    the index's identity: what the hot cache keys its entries by (``cache.cached`` puts a cache only
    in front of an index that has it). SqliteIndex (per namespace), PostgresIndex (one counter for
    every namespace), CachedIndex (passed through)."""

    def change_counter(self, user_id: str | None = None) -> int | None:
        """The counter of the namespace ``user_id`` (None: of the whole index); None inside this
        object's own write transaction, whose reads may still be rolled back."""
        ...
    def instance_id(self) -> str:
        """This index's identity: a cache shared by several indexes keys by it."""
        ...


@runtime_checkable
class AccessStats(Protocol):
    """Optional. The access statistics of given rows without the rest of them: a prepared search
    answer (``cache/answers.py``) is scored again with them. SqliteIndex, PostgresIndex, CachedIndex
    (passed through); without it the cache keeps no prepared answers."""

    def access_stats(self, user_id: str, ids: Sequence[str]) -> dict[str, tuple[int, datetime | None]]:
        """id -> (access count, last access) of the rows of ``ids`` in the namespace, as ``get`` reads them."""
        ...


@runtime_checkable
class SearchScope(Protocol):
    """Optional. One search, one scope: the read path runs each search inside
    ``search_scope(user_id)`` so the index answers its several reads as of one moment, in fewer
    round trips. SqliteIndex (its change counter read once), PostgresIndex (``index/pg_scope.py``:
    the candidates' rows and terms read together), CachedIndex (its counter read once, and the
    wrapped index's scope open meanwhile)."""

    def search_scope(self, user_id: str) -> AbstractContextManager[Any]: ...


@runtime_checkable
class AllFileStates(Protocol):
    """Optional. Every file state of a namespace in one query (``UserStore.sync`` on each search;
    without it, one ``file_state`` per file). SqliteIndex, PostgresIndex (read with the change
    counter, see ``TakenCounter``), CachedIndex (passed through)."""

    def file_states(self, user_id: str) -> dict[str, tuple[int, int]]: ...


@runtime_checkable
class TakenCounter(Protocol):
    """Optional. The change counter the last ``file_states`` of this thread read with the file
    states, handed over once: a cache's search then needs no round trip of its own for it.
    PostgresIndex. CachedIndex uses it and does not offer it."""

    def take_counter(self) -> int | None:
        """That counter, once; None when it was taken already or this process wrote since."""
        ...


@runtime_checkable
class ExpectedRows(Protocol):
    """Optional. Told which rows a search answered from a cache reads next, the index reads them
    in one round trip with the search's other reads. PostgresIndex (inside a ``search_scope``).
    CachedIndex uses it and does not offer it."""

    def expect_rows(self, user_id: str, ids: Sequence[str]) -> None: ...


@runtime_checkable
class SharedReads(Protocol):
    """Optional. ``get`` for the read path without copies: the records the index keeps (its record
    cache) themselves; the caller changes none of them and copies those it hands out.
    SqliteIndex, CachedIndex (passed through)."""

    def get_shared(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]: ...


@runtime_checkable
class FileRecords(Protocol):
    """Optional. The active rows of several files in stored order in one query (the recent daily
    notes of a context: one round trip instead of one per day). PostgresIndex, CachedIndex (passed
    through); without it, one ``list_records`` per file."""

    def records_of_files(self, user_id: str, files: Sequence[str]) -> dict[str, list[MemoryRecord]]: ...


@runtime_checkable
class Transactions(Protocol):
    """Optional. Several writes as one transaction (``with index.transaction(): ...``): all or none
    are kept. SqliteIndex, CachedIndex (passed through); PostgreSQL writes each call in a
    transaction of its own."""

    def transaction(self) -> AbstractContextManager[Any]: ...


@runtime_checkable
class TermsHeld(Protocol):
    """Optional. How many of a query's terms each row holds, from the keyword terms the index keeps
    in process (the relevance floor; without it the rows' text is tokenised again). SqliteIndex,
    PostgresIndex (its in-process keyword index), CachedIndex (passed through)."""

    def terms_held(self, user_id: str, ids: Sequence[str], terms: Sequence[str]) -> dict[str, int]:
        """Distinct ``terms`` held per row of ``ids`` it knows (others: left out)."""
        ...


@runtime_checkable
class DocTerms(Protocol):
    """Optional. The keyword terms (with counts) of rows, from the index's in-process keyword index
    (pseudo-relevance feedback; without it the rows' text is tokenised again). SqliteIndex,
    PostgresIndex, CachedIndex (passed through)."""

    def doc_terms(self, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """Per row of ``ids`` it knows (others: left out), its terms and their counts."""
        ...


@runtime_checkable
class ReadOnlyMode(Protocol):
    """Optional. An index that may be open read-only (a workspace this process may not write):
    then ``read_only`` is True, writes raise ``ReadOnlyWorkspaceError``, and neither hand edits
    nor vectors left to compute are brought in. SqliteIndex, CachedIndex (passed through)."""

    @property
    def read_only(self) -> bool: ...


@runtime_checkable
class StorageSize(Protocol):
    """Optional. The index's size on disk where it is not one file in the workspace (``memfold
    bench``; an embedded index is measured by its files). PostgresIndex, CachedIndex (passed through)."""

    def storage_bytes(self) -> int: ...


@runtime_checkable
class SearchFootprint(Protocol):
    """Optional. Sizes of the in-process search structures of each namespace loaded (memory
    diagnosis, the soak test). SqliteIndex, CachedIndex (passed through)."""

    def search_footprint(self) -> dict[str, dict[str, dict[str, int]]]: ...


@runtime_checkable
class QueuedAccess(Protocol):
    """Optional. Access statistics written later, in batches off the read path: ``flush_access``
    writes the queued ones now (returns how many). PostgresIndex (``[index] access_delay_ms``),
    CachedIndex (passed through)."""

    def flush_access(self) -> int: ...


@runtime_checkable
class TermsVersion(Protocol):
    """Optional. The version of the term maker (stemming, segmentation) that made the stored keyword
    terms of a row source: a copy (``index/transfer.py``) makes older terms again; a source without
    it holds current terms. ``SqliteSource`` (an index file read as it is, maybe of an older
    memfold); a live index brings its terms up to date when it opens."""

    @property
    def terms_version(self) -> int: ...


@runtime_checkable
class SecondVectors(Protocol):
    """Optional. A second vector per active row, of another embedding model (``model``: its name),
    written after the row by a background worker (``[search] profile = "quality"``:
    ``engine/write/vector_worker.py``) and read for the candidates of a search. A row's second
    vector goes when its text (content or context) changes or the row is deleted, so it always
    belongs to the words stored. SqliteIndex, PostgresIndex, CachedIndex (passed through)."""

    def pending_second_vectors(self, model: str, limit: int) -> list[MemoryRecord]:
        """Up to ``limit`` active rows of any namespace without a second vector of ``model``, oldest first."""
        ...
    def set_second_vectors(self, model: str, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        """Store the vectors of ``model`` for rows whose text is still the records' (a row deleted or
        changed since is left alone); returns how many rows got theirs."""
        ...
    def second_vectors(self, user_id: str, model: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """id -> the stored vector of ``model`` of those rows of ``ids`` in the namespace that have one."""
        ...


# ---- optional: offered by the hot cache (cache/index.py) -----------------------------------
@runtime_checkable
class PinnedCounter(Protocol):
    """Optional. Within ``pinned(user_id)`` this thread's lookups of the namespace use one reading of
    the change counter (a search's keyword and vector candidates: as of one moment, one round trip).
    CachedIndex."""

    def pinned(self, user_id: str) -> AbstractContextManager[Any]: ...


@runtime_checkable
class PreparedAnswers(Protocol):
    """Optional. Whole searches worked out up to their scores, kept in process at the change counter
    (``cache/answers.py``): ``prepared`` returns the key to keep one under (None: not kept: inside a
    write, or the wrapped index lacks ``AccessStats``) and the answer kept, if any;
    ``keep_prepared`` keeps one. CachedIndex."""

    def prepared(self, user_id: str, parts: Hashable) -> tuple[Hashable | None, Any]:
        """The key and the ``cache.answers.Prepared`` kept (or None); typed loosely: the cache is a
        layer above the index."""
        ...
    def keep_prepared(self, key: Hashable, value: Any) -> None: ...


@runtime_checkable
class HotSet(Protocol):
    """Optional. A namespace's most accessed active memories, kept until a write or the cache's
    ttl (``Memory.hot_memories``; without it ``most_accessed`` is asked each time). CachedIndex."""

    def hot(self, user_id: str) -> list[MemoryRecord]: ...


OPTIONAL: tuple[type, ...] = (ChangeCounter, AccessStats, SearchScope, AllFileStates, TakenCounter, ExpectedRows,
                              SharedReads, FileRecords, Transactions, TermsHeld, DocTerms, ReadOnlyMode, StorageSize,
                              SearchFootprint, QueuedAccess, TermsVersion, SecondVectors, PinnedCounter,
                              PreparedAnswers, HotSet)

T = TypeVar("T")


def members(protocol: Any) -> tuple[str, ...]:
    """The names a protocol of this module declares (its methods and attributes), own and inherited."""
    names: dict[str, None] = {}
    for cls in reversed(protocol.__mro__):
        if cls is object or cls is Protocol or cls is Generic:
            continue
        names.update(dict.fromkeys(n for n in (*vars(cls), *vars(cls).get("__annotations__", {}))
                                   if not n.startswith("_")))
    return tuple(names)


_MEMBERS: dict[Any, tuple[str, ...]] = {}  # protocol -> ``members``: one entry per protocol asked for


def capability(index: object, protocol: Callable[..., T]) -> T | None:
    """``index`` as ``protocol`` (one of ``OPTIONAL``) when it provides that capability (has every
    member the protocol declares), else None:
    ``if (c := capability(index, ChangeCounter)) is not None: c.change_counter(user_id)``.

    What ``isinstance`` with a runtime-checkable protocol decides, at a fiftieth of its cost (the
    read path asks about ten times per search). ``protocol`` is typed as a callable returning ``T``
    because a type checker takes no protocol where a ``type[T]`` goes."""
    names = _MEMBERS.get(protocol)
    if names is None:
        names = _MEMBERS[protocol] = members(protocol)
    for name in names:
        if not hasattr(index, name):
            return None
    return index  # type: ignore[return-value]


def capabilities(index: object) -> list[type]:
    """The optional capabilities ``index`` provides, in ``OPTIONAL``'s order."""
    return [p for p in OPTIONAL if capability(index, p) is not None]


def open_index(settings: "Settings", dim: int, embedder_name: str) -> Index:
    """The index backend named by ``[index] backend``."""
    backend = settings.index.backend
    if backend == "sqlite":
        from .sqlite import SqliteIndex

        if settings.index.vector_exact_max < 0:
            raise ConfigError(f"setting [index] vector_exact_max must be 0 or more, got {settings.index.vector_exact_max}")
        if settings.index.record_cache < 0:
            raise ConfigError(f"setting [index] record_cache must be 0 or more, got {settings.index.record_cache}")
        return SqliteIndex(settings.root / "index.db", dim=dim, embedder_name=embedder_name,
                           vector_exact_max=settings.index.vector_exact_max, record_cache=settings.index.record_cache)
    if backend == "postgres":
        try:
            from .postgres import PostgresIndex  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigError(
                "[index] backend = 'postgres' needs the PostgreSQL backend: pip install 'memfold[postgres]'"
            ) from exc
        if not settings.index.dsn:
            raise ConfigError("[index] backend = 'postgres' needs [index] dsn (or MEMFOLD_INDEX__DSN)")
        from .pg_pool import PgOptions

        ix = settings.index
        opts = PgOptions(pool_min=ix.pool_min, pool_max=ix.pool_max, pool_timeout=ix.pool_timeout, hnsw_m=ix.hnsw_m,
                         hnsw_ef_construction=ix.hnsw_ef_construction, hnsw_ef_search=ix.hnsw_ef_search,
                         access_delay_ms=ix.access_delay_ms)
        return PostgresIndex(settings.index.dsn, dim=dim, embedder_name=embedder_name, options=opts)
    raise ConfigError(f"setting [index] backend must be 'sqlite' or 'postgres', got {backend!r}")
