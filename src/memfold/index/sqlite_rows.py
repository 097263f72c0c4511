"""Every stored row of an embedded index, read in batches (``base.RowSource``): the row iterators
of ``SqliteIndex``, and ``SqliteSource``, a read-only view of an index file whatever embedder
built it (the source of ``memfold migrate`` and of the rebuild for another embedder)."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInputError, MemoryIndexError
from ..models import HistoryEntry, MemoryRecord
from ..text import forgetting
from ..text.terms import TERMS_VERSION
from .base import IndexItem
from .rows import HISTORY_FIELDS, RECORD_FIELDS, FileState, RelationRow, StateDoc, history_from_row, record_from_row
from .sqlite_schema import SCHEMA_VERSION

log = logging.getLogger("memfold")
_RECORD_COLS = ", ".join(RECORD_FIELDS)  # SQLite's column names are MemoryRecord's fields
_N = len(RECORD_FIELDS)


class SqliteRowReads:
    """The row iterators over ``self._db`` under ``self._lock``. Each batch is one statement (the
    next rows after the last one read), so nothing is held between batches."""

    _db: sqlite3.Connection
    _lock: Any  # a threading.RLock

    def namespaces(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute(
                "SELECT user_id FROM memories UNION SELECT user_id FROM history UNION SELECT user_id FROM state "
                "UNION SELECT user_id FROM files ORDER BY 1")]

    def iter_rows(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[IndexItem]:
        for r in self._pages("rowid", f"{_RECORD_COLS}, content_hash, embedding, terms", "memories", user_id, batch):
            content_hash, blob, terms = r[_N:]
            yield IndexItem(record=record_from_row(r[:_N]), content_hash=content_hash, terms=terms,
                            vector=np.frombuffer(blob, dtype=np.float32) if blob is not None else None)

    def iter_history(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[HistoryEntry]:
        for r in self._pages("n", ", ".join(HISTORY_FIELDS), "history", user_id, batch):
            yield history_from_row(r)

    def iter_relations(self, user_id: str | None = None) -> Iterator[RelationRow]:
        for r in self._all("user_id, source_id, target_id, relation, strength", "relations", user_id, "rowid"):
            yield RelationRow(*r)

    def iter_file_states(self, user_id: str | None = None) -> Iterator[FileState]:
        for u, f, mtime, size in self._all("user_id, file, mtime_ns, size", "files", user_id, "user_id, file"):
            yield FileState(u, f, int(mtime), int(size))

    def iter_states(self, user_id: str | None = None) -> Iterator[StateDoc]:
        for u, kind, key, value in self._all("user_id, kind, key, value", "state", user_id, "user_id, kind, key"):
            yield StateDoc(u, kind, key, json.loads(value))

    def _pages(self, order: str, cols: str, table: str, user_id: str | None, batch: int) -> Iterator[tuple]:
        """The rows of ``table`` by ascending ``order`` (a unique integer column), ``batch`` per statement."""
        mine = " AND user_id = ?" if user_id is not None else ""
        sql = f"SELECT {order}, {cols} FROM {table} WHERE {order} > ?{mine} ORDER BY {order} LIMIT ?"
        batch, last = max(1, batch), -1
        while True:
            with self._lock:
                rows = self._db.execute(sql, (last, *([user_id] if user_id is not None else []), batch)).fetchall()
            for r in rows:
                yield r[1:]
            if len(rows) < batch:
                return
            last = rows[-1][0]

    def _all(self, cols: str, table: str, user_id: str | None, order: str) -> list[tuple]:
        mine = " WHERE user_id = ?" if user_id is not None else ""
        with self._lock:
            return self._db.execute(f"SELECT {cols} FROM {table}{mine} ORDER BY {order}",
                                    [user_id] if user_id is not None else []).fetchall()


class SqlitePurge:
    """Stats and what ``engine/storage/purge.py`` asks of the embedded index (deleted means deleted):
    archived predecessors, rows quoting deleted words, history without the words, an emptied WAL."""

    _db: sqlite3.Connection
    _lock: Any  # a threading.RLock
    path: Path
    if TYPE_CHECKING:  # provided by SqliteIndex
        _search: Any

        def _tx(self) -> AbstractContextManager[None]: ...

    def stats(self, user_id: str) -> dict[str, Any]:
        with self._lock:
            by_type = dict(self._db.execute(
                "SELECT memory_type, COUNT(*) FROM memories WHERE user_id = ? AND is_active = 1 GROUP BY memory_type",
                (user_id,)).fetchall())
            row = self._db.execute(
                "SELECT COUNT(*), AVG(importance), SUM(is_active = 0), SUM(file = '') FROM memories WHERE user_id = ?",
                (user_id,)).fetchone()
        return {"total": int(row[0] or 0), "active": int(row[0] or 0) - int(row[2] or 0),
                "archived": int(row[2] or 0), "episodic": int(row[3] or 0), "by_type": by_type,
                "avg_importance": round(float(row[1]), 4) if row[1] is not None else None}

    # ---- deleted means deleted (engine/storage/purge.py) --------------------------------------------
    def superseded(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(
                f"SELECT {_RECORD_COLS} FROM memories WHERE user_id = ? AND is_active = 0 AND superseded_by IN "
                "(SELECT value FROM json_each(?)) ORDER BY rowid", (user_id, json.dumps(list(ids))))]

    def turns_of(self, user_id: str, keys: Sequence[str]) -> list[MemoryRecord]:
        keys = [k for k in dict.fromkeys(keys) if k]
        if not keys:
            return []
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(
                f"SELECT {_RECORD_COLS} FROM memories WHERE user_id = ? AND file = '' AND is_active = 1 AND "
                "json_extract(source_ids, '$[0]') IN (SELECT value FROM json_each(?)) ORDER BY rowid",
                (user_id, json.dumps(keys)))]

    def quoting(self, user_id: str, texts: Sequence[str]) -> list[MemoryRecord]:
        texts = [t for t in dict.fromkeys(texts) if t]
        if not texts:
            return []
        cond = " OR ".join(["instr(context, ?) > 0"] * len(texts))
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(
                f"SELECT {_RECORD_COLS} FROM memories WHERE user_id = ? AND context != '' AND ({cond}) ORDER BY rowid",
                [user_id, *texts])]

    def forget_text(self, user_id: str, ids: Sequence[str], texts: Sequence[str]) -> int:
        texts = [t for t in dict.fromkeys(texts) if t]
        sel = "SELECT n, memory_id, old_content, new_content, detail FROM history WHERE user_id = ? AND "
        with self._lock:
            with self._tx():
                rows = {r[0]: r for r in self._db.execute(sel + "memory_id IN (SELECT value FROM json_each(?))",
                                                          (user_id, json.dumps(list(ids))))}
                for t, tj in zip(texts, forgetting.json_forms(texts)):
                    rows.update((r[0], r) for r in self._db.execute(
                        sel + "(instr(old_content, ?) OR instr(new_content, ?) OR instr(detail, ?))", (user_id, t, t, tj)))
                updates = forgetting.changes([(*r[:4], json.loads(r[4] or "{}")) for r in rows.values()], ids, texts)
                self._db.executemany("UPDATE history SET old_content = ?, new_content = ?, detail = ? WHERE n = ?",
                                     updates)
            self._search.drop_snapshot(user_id)
            self._truncate_wal()
        return len(updates)

    def _truncate_wal(self) -> None:
        """Empty the WAL into the file: its old frames hold pages as they were before the delete."""
        busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            log.warning("index %s: another process is reading; the write-ahead log keeps deleted text until "
                        "the next checkpoint overwrites it", self.path)


class SqliteSource(SqliteRowReads):
    """A read-only view of an embedded index file: its embedder, dimension and rows. Writes nothing
    (no schema, no WAL checkpoint, no search snapshot), checks no embedder. ``terms_version``: that
    of its stored keyword terms (``index/terms_version.py``; a copy makes older ones again)."""

    terms_version = TERMS_VERSION

    def __init__(self, path: Path, db: sqlite3.Connection, embedder: str, dim: int):
        self.path, self._db, self.embedder, self.dim = Path(path), db, embedder, dim
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: Path) -> "SqliteSource":
        if not Path(path).is_file():
            raise InvalidInputError(f"no embedded index at {path}; nothing to migrate")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60.0)
        try:
            db.execute("PRAGMA secure_delete=ON")  # as on every connection of memfold (it writes nothing here)
            try:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            except sqlite3.DatabaseError as exc:
                raise MemoryIndexError(f"{path} is not a memfold index: {exc}") from exc
            if int(meta.get("schema_version", 0)) > SCHEMA_VERSION:
                raise MemoryIndexError(f"{path} has schema version {meta.get('schema_version')}, newer than this "
                                       f"memfold reads ({SCHEMA_VERSION})")
        except BaseException:
            db.close()
            raise
        source = cls(Path(path), db, meta.get("embedder", ""), int(meta.get("dim", 0)))
        source.terms_version = int(meta.get("terms_version", 1))  # 1: written before terms had versions
        return source

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "SqliteSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def checkpoint(path: Path) -> None:
    """Fold the WAL of the index file at ``path`` into the file, so that the file alone is complete."""
    db = sqlite3.connect(str(path), timeout=60.0)
    try:
        db.execute("PRAGMA secure_delete=ON")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
