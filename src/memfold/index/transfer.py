"""Copy an index into another backend, row for row: records with their vectors, terms, hashes and
access statistics, history in its order, relations, file states and the state store (sessions,
pin lists), all read through the source's row iterators (``base.RowSource``). Nothing is
re-embedded, unless the copy is the rebuild of an index for another embedder (``rebuild_for_embedder``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..errors import InvalidInputError, MemoryIndexError
from ..models import MemoryRecord
from ..text.terms import TERMS_VERSION, fts_document, keyword_text
from .base import Index, RowSource, TermsVersion, capability
from .sqlite_rows import SqliteSource, checkpoint

if TYPE_CHECKING:
    from ..providers.embedder import Embedder

__all__ = ["BATCH", "CopyReport", "SqliteSource", "copy_index", "rebuild_for_embedder"]

BATCH = 500
T = TypeVar("T")


@dataclass
class CopyReport:
    memories: dict[str, int] = field(default_factory=dict)
    history: int = 0
    relations: int = 0
    files: int = 0
    states: int = 0


def _batches(rows: Iterable[T]) -> Iterator[list[T]]:
    part: list[T] = []
    for r in rows:
        part.append(r)
        if len(part) == BATCH:
            yield part
            part = []
    if part:
        yield part


def copy_index(source: RowSource, target: Index, users: list[str] | None = None,
               progress: Callable[[str, int], None] | None = None,
               reembed: Callable[[list[MemoryRecord]], np.ndarray] | None = None) -> CopyReport:
    """Copy every namespace (or ``users``) of ``source`` into an empty ``target``; with ``reembed``
    every record gets a new vector from it (another embedder) instead of its stored one."""
    if source.dim != target.dim and reembed is None:
        raise MemoryIndexError(f"{getattr(source, 'path', 'the source index')} holds vectors of dim {source.dim}, "
                               f"the target index has {target.dim}")
    report = CopyReport()
    wanted = users if users is not None else source.namespaces()
    for u in wanted:
        if target.count(u, active_only=False) or target.list_state(u, "session"):
            raise InvalidInputError(f"the target index already holds memories of user {u!r}; "
                                    "migrate into an empty database or schema")
    for u in wanted:
        report.memories[u] = _copy_memories(source, u, target, source.dim, reembed)
        if progress:
            progress(u, report.memories[u])
        for entries in _batches(source.iter_history(u, batch=BATCH)):
            target.append_history(entries)
            report.history += len(entries)
        for rel in source.iter_relations(u):
            target.add_relation(u, rel.source_id, rel.target_id, rel.relation, rel.strength)
            report.relations += 1
        for fs in source.iter_file_states(u):
            target.set_file_state(u, fs.file, (fs.mtime_ns, fs.size))
            report.files += 1
        for doc in source.iter_states(u):
            target.put_state(u, doc.kind, doc.key, doc.value)
            report.states += 1
    return report


def _copy_memories(source: RowSource, user_id: str, target: Index, dim: int,
                   reembed: Callable[[list[MemoryRecord]], np.ndarray] | None = None) -> int:
    n = 0
    held = capability(source, TermsVersion)
    remake = held is not None and held.terms_version < TERMS_VERSION  # older terms: made again
    for rows in _batches(source.iter_rows(user_id, batch=BATCH)):
        items = []
        fresh = reembed([r.record for r in rows]) if reembed is not None else None
        for i, row in enumerate(rows):
            rec = row.record
            vec = fresh[i] if fresh is not None else row.vector
            terms = (fts_document(keyword_text(rec.content, rec.context)) if remake else (row.terms or "")) \
                if rec.is_active else None  # archived rows have no terms, as in SQLite
            if vec is None and fresh is None:  # still waiting for it (write-ahead mode): it waits in the copy too
                items.append(replace(row, vector=None, terms=terms, vector_later=True))
                continue
            if vec is None or (fresh is None and vec.shape[0] != dim):
                raise MemoryIndexError(f"memory {rec.id} of {user_id!r} has no usable vector in the source index")
            items.append(replace(row, vector=vec, terms=terms))
        target.upsert(items)
        n += len(items)
    return n


def rebuild_for_embedder(root: Path, embedder: "Embedder", embed_text: Callable[[MemoryRecord], str],
                         progress: Callable[[str, int], None] | None = None) -> tuple[CopyReport, Path]:
    """``<root>/index.db`` built by another embedder becomes an index of ``embedder``: every row
    (episodic turns, archived records, history, relations, sessions and pin lists too) is copied
    into a new file with a new vector, which then replaces the old one. The old file is kept as
    ``index.db.<old embedder>.bak`` and returned; a failure leaves it untouched in place."""
    from .sqlite import SqliteIndex

    path = Path(root) / "index.db"
    if not path.is_file():
        raise InvalidInputError(f"no embedded index at {path}; nothing to rebuild")
    checkpoint(path)  # fold the WAL in, so the file alone is complete
    fresh = path.with_name("index.db.rebuild")
    for leftover in (fresh, fresh.with_name(fresh.name + "-wal"), fresh.with_name(fresh.name + "-shm")):
        leftover.unlink(missing_ok=True)
    with SqliteSource.open(path) as source:
        target = SqliteIndex(fresh, dim=embedder.dim, embedder_name=embedder.name)
        try:
            report = copy_index(source, target, progress=progress,
                                reembed=lambda recs: embedder.embed([embed_text(r) for r in recs]))
        finally:
            target.close()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in source.embedder) or "unknown"
    backup = path.with_name(f"index.db.{safe}.bak")
    path.replace(backup)
    for side in ("-wal", "-shm"):
        path.with_name(path.name + side).unlink(missing_ok=True)
    fresh.replace(path)
    fresh.with_name(fresh.name + ".init.lock").unlink(missing_ok=True)
    cache = path.with_name("index.db.cache")
    if cache.is_dir():
        for f in cache.iterdir():
            f.unlink(missing_ok=True)
    return report, backup
