"""Copy an embedded (SQLite) index into another backend, row for row: records with their
vectors, terms, hashes and access statistics, history in its order, relations, file states
and the state store (sessions, pin lists). Nothing is re-embedded, unless the copy is the
rebuild of an index for another embedder (``rebuild_for_embedder``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError, MemoryIndexError
from ..models import HistoryEntry, MemoryRecord
from .base import Index, IndexItem
from .sqlite import SCHEMA_VERSION, _row_to_record, _ts
from .sqlite import _COLS as _SQLITE_COLS

if TYPE_CHECKING:
    from ..providers.embedder import Embedder

BATCH = 500


@dataclass(frozen=True)
class SqliteSource:
    """A read-only view of an embedded index file."""

    path: Path
    embedder: str
    dim: int

    @classmethod
    def open(cls, path: Path) -> "SqliteSource":
        if not Path(path).is_file():
            raise InvalidInputError(f"no embedded index at {path}; nothing to migrate")
        with _connect(path) as db:
            try:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            except sqlite3.DatabaseError as exc:
                raise MemoryIndexError(f"{path} is not a memfold index: {exc}") from exc
        if int(meta.get("schema_version", 0)) > SCHEMA_VERSION:
            raise MemoryIndexError(f"{path} has schema version {meta.get('schema_version')}, newer than this "
                                   f"memfold reads ({SCHEMA_VERSION})")
        return cls(Path(path), meta.get("embedder", ""), int(meta.get("dim", 0)))

    def user_ids(self) -> list[str]:
        with _connect(self.path) as db:
            return [r[0] for r in db.execute(
                "SELECT user_id FROM memories UNION SELECT user_id FROM history UNION SELECT user_id FROM state "
                "UNION SELECT user_id FROM files ORDER BY 1")]


@dataclass
class CopyReport:
    memories: dict[str, int] = field(default_factory=dict)
    history: int = 0
    relations: int = 0
    files: int = 0
    states: int = 0


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60.0)
    db.execute("PRAGMA secure_delete=ON")  # as on every connection of memfold (it writes nothing here)
    return db


def _batches(db: sqlite3.Connection, sql: str, args: tuple) -> Iterator[list[tuple]]:
    cur = db.execute(sql, args)
    while rows := cur.fetchmany(BATCH):
        yield rows


def copy_index(source: SqliteSource, target: Index, users: list[str] | None = None,
               progress: Callable[[str, int], None] | None = None,
               reembed: Callable[[list[MemoryRecord]], np.ndarray] | None = None) -> CopyReport:
    """Copy every namespace (or ``users``) of ``source`` into an empty ``target``; with ``reembed``
    every record gets a new vector from it (another embedder) instead of its stored one."""
    if source.dim != target.dim and reembed is None:
        raise MemoryIndexError(f"{source.path} holds vectors of dim {source.dim}, the target index has {target.dim}")
    report = CopyReport()
    wanted = users if users is not None else source.user_ids()
    for u in wanted:
        if target.count(u, active_only=False) or target.list_state(u, "session"):
            raise InvalidInputError(f"the target index already holds memories of user {u!r}; "
                                    "migrate into an empty database or schema")
    with _connect(source.path) as db:
        for u in wanted:
            report.memories[u] = _copy_memories(db, u, target, source.dim, reembed)
            if progress:
                progress(u, report.memories[u])
            for rows in _batches(db, "SELECT memory_id, user_id, action, at, old_content, new_content, detail "
                                     "FROM history WHERE user_id = ? ORDER BY n", (u,)):
                target.append_history([HistoryEntry(r[0], r[1], r[2], _ts(r[3]), r[4], r[5], json.loads(r[6] or "{}"))
                                       for r in rows])
                report.history += len(rows)
            for s, t, rel, strength in db.execute(
                    "SELECT source_id, target_id, relation, strength FROM relations WHERE user_id = ?", (u,)):
                target.add_relation(u, s, t, rel, strength)
                report.relations += 1
            for f, mtime, size in db.execute("SELECT file, mtime_ns, size FROM files WHERE user_id = ?", (u,)):
                target.set_file_state(u, f, (int(mtime), int(size)))
                report.files += 1
            for kind, key, value in db.execute("SELECT kind, key, value FROM state WHERE user_id = ?", (u,)):
                target.put_state(u, kind, key, json.loads(value))
                report.states += 1
    return report


def _copy_memories(db: sqlite3.Connection, user_id: str, target: Index, dim: int,
                   reembed: Callable[[list[MemoryRecord]], np.ndarray] | None = None) -> int:
    n = 0
    sql = (f"SELECT {_SQLITE_COLS}, content_hash, embedding, terms FROM memories "
           "WHERE user_id = ? ORDER BY rowid")
    for rows in _batches(db, sql, (user_id,)):
        items = []
        fresh = reembed([_row_to_record(r[:18]) for r in rows]) if reembed is not None else None
        for i, r in enumerate(rows):
            rec = _row_to_record(r[:18])
            vec = fresh[i] if fresh is not None else \
                (np.frombuffer(r[19], dtype=np.float32) if r[19] is not None else None)
            if vec is None or (fresh is None and vec.shape[0] != dim):
                raise MemoryIndexError(f"memory {rec.id} of {user_id!r} has no usable vector in the source index")
            terms = (r[20] or "") if rec.is_active else None  # archived rows have no terms, as in SQLite
            items.append(IndexItem(record=rec, vector=vec, terms=terms, content_hash=r[18]))
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
    checkpoint = sqlite3.connect(str(path), timeout=60.0)  # fold the WAL in, so the file alone is complete
    try:
        checkpoint.execute("PRAGMA secure_delete=ON")
        checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        checkpoint.close()
    source = SqliteSource.open(path)
    fresh = path.with_name("index.db.rebuild")
    for leftover in (fresh, fresh.with_name(fresh.name + "-wal"), fresh.with_name(fresh.name + "-shm")):
        leftover.unlink(missing_ok=True)
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
