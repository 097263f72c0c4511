"""Second vectors in the PostgreSQL index (``SecondVectors``): ``memory_second_vectors``, one row
per memory row that has its vector of the second model, kept as a mixin of ``PostgresIndex``.
Row triggers of schema 8 delete a vector when its row is deleted or its words change
(``pg_schema._v8``); a vector stored while its row's words changed in another transaction is
taken back before the commit (the words are compared again under the row's lock)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MemoryIndexError
from ..models import MemoryRecord
from .pg_rows_mixin import _COLS, _stored_vector
from .pg_search import bump
from .rows import record_from_row

_SET = ("INSERT INTO memory_second_vectors (id, user_id, model, embedding) SELECT id, user_id, %s, %s::vector "
        "FROM user_memories WHERE id = %s AND user_id = %s AND content = %s AND context = %s AND is_active "
        "ON CONFLICT (id) DO UPDATE SET model = excluded.model, embedding = excluded.embedding "
        "WHERE memory_second_vectors.model <> excluded.model")


class PgSecondVectors:
    if TYPE_CHECKING:  # provided by PostgresIndex
        def _cur(self, write: bool = False) -> AbstractContextManager[Any]: ...
        def flush_access(self) -> int: ...

    def pending_second_vectors(self, model: str, limit: int) -> list[MemoryRecord]:
        self.flush_access()
        with self._cur() as cur:
            cur.execute(f"SELECT {_COLS} FROM memory_rows m WHERE m.is_active AND NOT EXISTS "
                        "(SELECT 1 FROM memory_second_vectors s WHERE s.id = m.id AND s.model = %s) "
                        "ORDER BY m.n LIMIT %s", (model, max(0, limit)))
            return [record_from_row(r) for r in cur.fetchall()]

    def set_second_vectors(self, model: str, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        if not records:
            return 0
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(records):
            raise MemoryIndexError(f"{len(records)} vectors expected, got shape {vectors.shape}")
        order = sorted(range(len(records)), key=lambda i: records[i].id)  # rows locked in id order, as upsert does
        with self._cur(write=True) as cur:
            stored = []
            for i in order:
                r = records[i]
                cur.execute(_SET, (model, vectors[i], r.id, r.user_id, r.content, r.context))
                if cur.rowcount:
                    stored.append(r)
            if not stored:
                return 0
            cur.execute("SELECT id FROM user_memories WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                        ([r.id for r in stored],))
            seqs = bump(cur, [r.user_id for r in stored])
            done = 0
            for r in stored:  # the change counter moves (a cached search answer is worked out again) ...
                cur.execute("UPDATE user_memories SET seq = %s WHERE id = %s AND content = %s AND context = %s",
                            (seqs[r.user_id], r.id, r.content, r.context))
                if cur.rowcount:
                    done += 1
                else:  # ... unless the words changed meanwhile: then the vector is not theirs
                    cur.execute("DELETE FROM memory_second_vectors WHERE id = %s AND model = %s", (r.id, model))
        return done

    def second_vectors(self, user_id: str, model: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        with self._cur() as cur:
            cur.execute("SELECT id, embedding FROM memory_second_vectors WHERE user_id = %s AND model = %s "
                        "AND id = ANY(%s)", (user_id, model, list(ids)))
            rows: Iterator[tuple[str, Any]] = iter(cur.fetchall())
            return {mid: v for mid, raw in rows if (v := _stored_vector(raw)) is not None}
