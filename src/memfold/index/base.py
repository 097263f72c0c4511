"""The Index protocol: the handful of operations the engine needs from a derived index.

Implementations: ``SqliteIndex`` (embedded default). A PostgreSQL + pgvector backend
implements the same protocol; ``tests/contract`` runs against every implementation.
Everything is scoped by ``user_id``: no call returns rows of another namespace."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError
from ..models import HistoryEntry, MemoryRecord

if TYPE_CHECKING:
    from ..config import Settings


@dataclass(frozen=True)
class IndexItem:
    """A record to write. ``vector=None`` keeps the stored vector; ``terms=None`` keeps the stored terms."""

    record: MemoryRecord
    vector: np.ndarray | None = None
    terms: str | None = None
    content_hash: str = ""


@runtime_checkable
class Index(Protocol):
    dim: int

    def upsert(self, items: Sequence[IndexItem]) -> None: ...
    def delete(self, user_id: str, ids: Sequence[str]) -> None: ...
    def get(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]: ...
    def list(self, user_id: str, *, active_only: bool = True, file: str | None = None,
             memory_type: str | None = None, limit: int | None = None, offset: int = 0) -> list[MemoryRecord]: ...
    def content_hashes(self, user_id: str, file: str) -> dict[str, str]: ...
    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """The ids among ``ids`` that rows of another namespace hold (ids are unique across the
        index: a bullet copied from one user's file into another's must get a new id)."""
        ...
    def count(self, user_id: str, *, active_only: bool = True) -> int: ...
    def keyword_search(self, user_id: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]: ...
    def vector_search(self, user_id: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]: ...
    def vector_search_many(self, user_id: str, vectors: np.ndarray, limit: int,
                           min_score: float | None = None) -> list[list[tuple[str, float]]]:
        """Per row of ``vectors``, the best ``limit`` rows (cosine, best first); with ``min_score``
        only those scoring at least that (the near-duplicate check asks for cosine ≥ threshold)."""
        ...
    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None: ...
    def append_history(self, entries: Sequence[HistoryEntry]) -> None: ...
    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]: ...
    def add_relation(self, user_id: str, source_id: str, target_id: str, relation: str, strength: float) -> None: ...
    def relations(self, user_id: str, memory_id: str) -> list[dict[str, Any]]: ...
    def file_state(self, user_id: str, file: str) -> tuple[int, int] | None: ...
    def set_file_state(self, user_id: str, file: str, state: tuple[int, int] | None) -> None: ...
    def clear_files(self, user_id: str) -> None: ...
    def user_ids(self) -> list[str]: ...
    # small JSON documents of engine state (sessions, agent pin lists), keyed by (user_id, kind, key)
    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None: ...
    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None: ...
    def list_state(self, user_id: str, kind: str) -> list[str]: ...
    def delete_state(self, user_id: str, kind: str, key: str) -> None: ...
    def stats(self, user_id: str) -> dict[str, Any]: ...
    # deleted means deleted (engine/purge.py)
    def superseded(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The archived rows whose ``superseded_by`` is one of ``ids`` (their older versions)."""
        ...
    def quoting(self, user_id: str, texts: Sequence[str]) -> list[MemoryRecord]:
        """The rows whose ``context`` contains one of ``texts`` (an episodic turn quotes the previous one)."""
        ...
    def forget_text(self, user_id: str, ids: Sequence[str], texts: Sequence[str]) -> int:
        """After ``ids`` were deleted: their history keeps its events but no words, every other history
        entry of the namespace loses the fields that quote one of ``texts`` (``forgetting.scrub``), and
        copies the backend keeps elsewhere go (SQLite: the search snapshot, the WAL). Returns the number
        of history entries changed."""
        ...
    def close(self) -> None: ...


def open_index(settings: "Settings", dim: int, embedder_name: str) -> Index:
    """The index backend named by ``[index] backend``."""
    backend = settings.index.backend
    if backend == "sqlite":
        from .sqlite import SqliteIndex

        if settings.index.vector_exact_max < 0:
            raise ConfigError(f"setting [index] vector_exact_max must be 0 or more, got {settings.index.vector_exact_max}")
        return SqliteIndex(settings.root / "index.db", dim=dim, embedder_name=embedder_name,
                           vector_exact_max=settings.index.vector_exact_max)
    if backend == "postgres":
        try:
            from .postgres import PostgresIndex  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ConfigError(
                "[index] backend = 'postgres' needs the PostgreSQL backend: pip install 'memfold[postgres]'"
            ) from exc
        if not settings.index.dsn:
            raise ConfigError("[index] backend = 'postgres' needs [index] dsn (or MEMFOLD_INDEX__DSN)")
        return PostgresIndex(settings.index.dsn, dim=dim, embedder_name=embedder_name)
    raise ConfigError(f"setting [index] backend must be 'sqlite' or 'postgres', got {backend!r}")
