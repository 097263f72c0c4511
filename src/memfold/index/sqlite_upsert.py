"""Rows into the SQLite index (``SqliteIndex.upsert``, inside its transaction): the new rows of a
batch in one ``executemany`` of one ``INSERT`` each (their keyword terms with them), a stored row
updated in place."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import MemoryIndexError
from .base import IndexItem
from .rows import RECORD_FIELDS

JSON_TEXT = json.JSONEncoder(ensure_ascii=False)  # json.dumps(…, ensure_ascii=False), the encoder made once
_COLS = ", ".join(RECORD_FIELDS)  # SQLite's column names are MemoryRecord's fields
_INSERT = f"INSERT INTO memories ({_COLS}, content_hash, embedding, seq, terms) VALUES ({','.join('?' * 22)})"
_UPDATE = (f"UPDATE memories SET {', '.join(f'{c} = ?' for c in RECORD_FIELDS[1:])}, "
           "content_hash = COALESCE(NULLIF(?, ''), content_hash), embedding = COALESCE(?, embedding), seq = ? "
           "WHERE rowid = ?")


def upsert_rows(db: sqlite3.Connection, items: Sequence[IndexItem], seq: int, dim: int) -> None:
    """Insert the new rows of ``items``, update the stored ones (all with change counter ``seq``)."""
    ids = [it.record.id for it in items]
    old_of = {mid: (rowid, user) for mid, rowid, user in db.execute(
        "SELECT id, rowid, user_id FROM memories WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}
    if len(set(ids)) < len(ids):  # an id twice: the second sees the first's row, one at a time
        for it in items:
            _upsert_one(db, it, seq, dim)
        return
    new_rows = []
    for it in items:
        old = old_of.get(it.record.id)
        if old is not None:
            _upsert_one(db, it, seq, dim, old)
            continue
        values, blob = _row_values(it, dim)
        if blob is None and not it.vector_later:
            raise MemoryIndexError(f"new memory {it.record.id} needs a vector")
        new_rows.append(values + (it.content_hash, blob, seq, (it.terms or "") if it.record.is_active else None))
    db.executemany(_INSERT, new_rows)


def _row_values(it: IndexItem, dim: int) -> tuple[tuple[Any, ...], bytes | None]:
    r = it.record
    if it.vector is not None and it.vector.shape[-1] != dim:
        raise MemoryIndexError(f"vector of {r.id} has dim {it.vector.shape[-1]}, index has {dim}")
    return (r.id, r.user_id, r.agent_id, r.memory_type.value, r.content, r.context,
            JSON_TEXT.encode(r.structured_data), json.dumps(list(r.source_ids)),
            r.source_session_id, r.file, r.created_at.isoformat(), r.updated_at.isoformat(),
            r.importance, r.confidence, r.access_count,
            r.last_accessed_at.isoformat() if r.last_accessed_at else None, int(r.is_active),
            r.superseded_by), it.vector.astype(np.float32).tobytes() if it.vector is not None else None


def _upsert_one(db: sqlite3.Connection, it: IndexItem, seq: int, dim: int, old: tuple[int, str] | None = None) -> None:
    """One row: an UPDATE of a stored one (``old``: its rowid and namespace), else an INSERT."""
    r = it.record
    values, blob = _row_values(it, dim)
    if old is None:
        old = db.execute("SELECT rowid, user_id FROM memories WHERE id = ?", (r.id,)).fetchone()
    if old is not None and old[1] != r.user_id:
        raise MemoryIndexError(f"memory id {r.id} belongs to another namespace")
    if old is None:
        if blob is None and not it.vector_later:
            raise MemoryIndexError(f"new memory {r.id} needs a vector")
        db.execute(_INSERT, values + (it.content_hash, blob, seq, (it.terms or "") if r.is_active else None))
        return
    db.execute(_UPDATE, values[1:] + (it.content_hash, blob, seq, old[0]))
    if not r.is_active:
        db.execute("UPDATE memories SET terms = NULL WHERE rowid = ?", (old[0],))
    elif it.terms is not None:
        db.execute("UPDATE memories SET terms = ? WHERE rowid = ?", (it.terms, old[0]))
    elif db.execute("SELECT terms IS NULL FROM memories WHERE rowid = ?", (old[0],)).fetchone()[0]:
        raise MemoryIndexError(f"memory {r.id} is re-activated without terms")
