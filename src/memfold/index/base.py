"""The Index protocol: the operations the engine needs from a derived index, in small protocols
so that a wrapper (a cache, a read replica) or a new backend implements only what it serves:

``RecordStore`` (memory rows), ``SearchIndex`` (keyword and vector search), ``HistoryLog`` (what
happened to memories and the relations it left), ``StateStore`` (small JSON documents),
``FileStates`` (what the index knows of the workspace files), ``Leases`` (one maintenance run
per namespace at a time), ``IndexAdmin`` (namespaces,
statistics, closing) and ``RowSource`` (every stored row, for a copy: ``index/transfer.py``).
``Index`` is all of them; ``SqliteIndex`` (embedded default) and ``PostgresIndex`` implement it and
``tests/contract`` runs against both. Everything is scoped by ``user_id``: no call returns rows of
another namespace."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

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
    """Memory rows of a namespace: write, read, list, count."""

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


@runtime_checkable
class SearchIndex(Protocol):
    """Keyword (BM25 over the stored terms) and vector (cosine) search within a namespace."""

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
    """What happened to memories (history entries, in the order written) and the relations it left."""

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
    """Small JSON documents of engine state (sessions, agent pin lists), keyed by (user_id, kind, key)."""

    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None: ...
    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None: ...
    def list_state(self, user_id: str, kind: str) -> list[str]: ...
    def delete_state(self, user_id: str, kind: str, key: str) -> None: ...


@runtime_checkable
class FileStates(Protocol):
    """What the index knows of a namespace's workspace files: their (mtime_ns, size) when last
    indexed and the content hashes of their rows (reconciliation of hand edits, reindex)."""

    def content_hashes(self, user_id: str, file: str) -> dict[str, str]: ...
    def file_state(self, user_id: str, file: str) -> tuple[int, int] | None: ...
    def set_file_state(self, user_id: str, file: str, state: tuple[int, int] | None) -> None: ...
    def clear_files(self, user_id: str) -> None: ...


@runtime_checkable
class Leases(Protocol):
    """One holder at a time of a named lease per namespace, across processes and machines
    (maintenance runs): a row in the SQLite index that expires after ``ttl`` seconds (or at once
    when its holder's process on this machine is gone), an advisory lock on PostgreSQL."""

    def try_lease(self, user_id: str, name: str, holder: str, ttl: float) -> bool:
        """Take the lease for ``holder``; False when another live holder has it."""
        ...
    def release_lease(self, user_id: str, name: str, holder: str) -> None: ...


@runtime_checkable
class IndexAdmin(Protocol):
    def user_ids(self) -> list[str]:
        """The namespaces holding memory rows."""
        ...
    def stats(self, user_id: str) -> dict[str, Any]: ...
    def close(self) -> None: ...


@runtime_checkable
class RowSource(Protocol):
    """Every stored row, with named fields, read in batches (``index/transfer.py`` copies an index
    with these). ``user_id=None``: every namespace. Rows come in the order they were written."""

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
    """Rows stored without their vector (write-ahead mode) and giving them one."""

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
    """Everything the engine asks of a derived index."""


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
