"""What the hot cache (``cache/``) asks of the embedded index besides the read protocols: its
identity, its change counter, the most accessed memories of a namespace and the access statistics
of given rows (a prepared answer, ``cache/answers.py``, is scored again with them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..models import MemoryRecord
from .rows import RECORD_FIELDS, record_from_row, timestamp
from .sqlite_tx import SqliteTransactions

_COLS = ", ".join(RECORD_FIELDS)


class SqliteCacheReads:
    _db: sqlite3.Connection
    _lock: Any  # a threading.RLock
    _txs: SqliteTransactions
    path: Path

    def change_counter(self, user_id: str | None = None) -> int | None:
        """Grows with every write of memory rows (in any process): of the namespace ``user_id`` (the
        newest ``seq`` among its rows and tombstones; tombstones are kept), or of the whole index.
        None inside this object's own write transaction, whose reads may still be rolled back (a
        cache must not keep them)."""
        with self._lock:
            if self._txs.depth:
                return None
            if user_id is None:
                return int(self._db.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])
            return int(self._db.execute(  # one statement: one snapshot of both tables
                "SELECT max(coalesce((SELECT max(seq) FROM memories WHERE user_id = ?1), 0), "
                "coalesce((SELECT max(seq) FROM tombstones WHERE user_id = ?1), 0))", (user_id,)).fetchone()[0])

    def instance_id(self) -> str:
        """This index's identity (kept in the file): a cache shared by several indexes keys by it."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()
        return f"sqlite-{row[0] if row else self.path}"

    def most_accessed(self, user_id: str, limit: int) -> list[MemoryRecord]:
        """The namespace's ``limit`` active memories with the most accesses (ties: latest access, id)."""
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(
                f"SELECT {_COLS} FROM memories WHERE user_id = ? AND is_active = 1 AND access_count > 0 "
                "ORDER BY access_count DESC, last_accessed_at DESC, id LIMIT ?", (user_id, limit))]

    def access_stats(self, user_id: str, ids: Sequence[str]) -> dict[str, tuple[int, datetime | None]]:
        """id -> (access count, last access) of the rows of ``ids`` in the namespace, as ``get`` reads them."""
        out: dict[str, tuple[int, datetime | None]] = {}
        with self._lock:
            for chunk in range(0, len(ids), 500):
                part = list(ids[chunk: chunk + 500])
                q = ("SELECT id, access_count, last_accessed_at FROM memories WHERE +user_id = ? "
                     f"AND id IN ({','.join('?' * len(part))})")
                for r in self._db.execute(q, [user_id, *part]):
                    out[r[0]] = (int(r[1]), timestamp(r[2]))
        return out
