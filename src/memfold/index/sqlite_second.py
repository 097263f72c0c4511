"""Second vectors in the SQLite index (``SecondVectors``): the ``second_vectors`` table, one row
per memory row that has its vector of the second model. Triggers of the schema delete a vector
when its row is deleted or its words change (``sqlite_schema.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import MemoryIndexError
from ..models import MemoryRecord
from .rows import RECORD_FIELDS, record_from_row
from .sqlite_tx import SqliteTransactions

_COLS = ", ".join(f"m.{c}" for c in RECORD_FIELDS)
_SET = ("INSERT INTO second_vectors (id, user_id, model, vector) SELECT id, user_id, ?, ? FROM memories "
        "WHERE id = ? AND user_id = ? AND content = ? AND context = ? AND is_active = 1 "
        "ON CONFLICT (id) DO UPDATE SET model = excluded.model, vector = excluded.vector "
        "WHERE second_vectors.model != excluded.model")
CHUNK = 500  # ids per IN (...) list


class SqliteSecondVectors:
    _db: sqlite3.Connection
    _lock: Any  # a threading.RLock
    _txs: SqliteTransactions
    read_only: bool
    _next_seq: Callable[[], int]  # SqliteIndex's

    def pending_second_vectors(self, model: str, limit: int) -> list[MemoryRecord]:
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(
                f"SELECT {_COLS} FROM memories m WHERE m.is_active = 1 AND NOT EXISTS "
                "(SELECT 1 FROM second_vectors s WHERE s.id = m.id AND s.model = ?) ORDER BY m.rowid LIMIT ?",
                (model, max(0, limit)))]

    def set_second_vectors(self, model: str, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        if not records or self.read_only:
            return 0
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(records):
            raise MemoryIndexError(f"{len(records)} vectors expected, got shape {vectors.shape}")
        with self._lock, self._txs.begin():
            done = [r.id for i, r in enumerate(records) if self._db.execute(
                _SET, (model, vectors[i].tobytes(), r.id, r.user_id, r.content, r.context)).rowcount]
            if done:  # the rows' change counter moves: a search answer kept by a cache is worked out again
                seq = self._next_seq()
                self._db.executemany("UPDATE memories SET seq = ? WHERE id = ?", [(seq, mid) for mid in done])
        return len(done)

    def second_vectors(self, user_id: str, model: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._lock:
            for at in range(0, len(ids), CHUNK):
                part = list(ids[at: at + CHUNK])
                for mid, blob in self._db.execute(
                        f"SELECT id, vector FROM second_vectors WHERE user_id = ? AND model = ? "
                        f"AND id IN ({','.join('?' * len(part))})", [user_id, model, *part]):
                    out[mid] = np.frombuffer(blob, dtype=np.float32)
        return out
