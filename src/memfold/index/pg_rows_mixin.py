"""The PostgreSQL index's methods for deleting every copy of words (``engine/storage/purge.py``), for
reading every stored row (``base.RowSource``: a copy of the index reads these) and for caches
(change counter, identity, hot set), kept out of ``postgres.py`` as a mixin of ``PostgresIndex``
(they only run statements on its pool); with the row columns both modules use."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..models import HistoryEntry, MemoryRecord
from ..text import forgetting
from . import pg_counter
from .base import IndexItem
from .rows import HISTORY_FIELDS, FileState, RelationRow, StateDoc, history_from_row, record_from_row

_COLS = ("id, user_id, agent_id, memory_type, content, context, structured_data, source_ids, source_session_id, "
         "file, created_at, updated_at, importance_score, confidence, access_count, last_accessed_at, is_active, "
         "superseded_by")
_COL_LIST = [c.strip() for c in _COLS.split(",")]  # in rows.RECORD_FIELDS order
_N = len(_COL_LIST)
BULK_ROWS = 200  # rows in one write after which a table without statistics is analyzed at once
SEEN_FOR = 1.0  # seconds a reading taken with the files' states may stand in for a search that follows (its sync)


def _stored_vector(v: Any) -> np.ndarray | None:
    """A ``vector`` column as pgvector's loader returns it (an ndarray, or a ``Vector`` in newer versions)."""
    if v is None:
        return None
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)


class PgPurgeAndRows:
    if TYPE_CHECKING:  # provided by PostgresIndex
        _instance: str
        _seen: Any

        def flush_access(self) -> int: ...

        def _reading(self) -> AbstractContextManager[None]: ...

        def _overlay(self, records: list[MemoryRecord]) -> list[MemoryRecord]: ...

        def _cur(self, write: bool = False) -> AbstractContextManager[Any]: ...

    # ---- deleted means deleted (engine/storage/purge.py) --------------------------------------------
    def superseded(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        self.flush_access()
        with self._cur() as cur:
            cur.execute(f"SELECT {_COLS} FROM memory_rows WHERE user_id = %s AND NOT is_active "
                        "AND superseded_by = ANY(%s) ORDER BY n", (user_id, list(ids)))
            return [record_from_row(r) for r in cur.fetchall()]

    def turns_of(self, user_id: str, keys: Sequence[str]) -> list[MemoryRecord]:
        keys = [k for k in dict.fromkeys(keys) if k]
        if not keys:
            return []
        self.flush_access()
        with self._cur() as cur:
            cur.execute(f"SELECT {_COLS} FROM memory_rows WHERE user_id = %s AND file = '' AND is_active "
                        "AND source_ids[1] = ANY(%s) ORDER BY n", (user_id, keys))
            return [record_from_row(r) for r in cur.fetchall()]

    def quoting(self, user_id: str, texts: Sequence[str]) -> list[MemoryRecord]:
        texts = [t for t in dict.fromkeys(texts) if t]
        if not texts:
            return []
        self.flush_access()
        with self._cur() as cur:
            cur.execute(f"SELECT {_COLS} FROM memory_rows m WHERE user_id = %s AND context <> '' AND EXISTS "
                        "(SELECT 1 FROM unnest(%s::text[]) t WHERE strpos(m.context, t) > 0) ORDER BY n",
                        (user_id, texts))
            return [record_from_row(r) for r in cur.fetchall()]

    def forget_text(self, user_id: str, ids: Sequence[str], texts: Sequence[str]) -> int:
        """Old row versions stay in the table files as dead tuples until (auto)VACUUM reclaims them;
        nothing heavier than these updates runs here (README: "Deleted means deleted")."""
        texts = [t for t in dict.fromkeys(texts) if t]
        with self._cur(write=True) as cur:
            cur.execute("SELECT n, memory_id, old_content, new_content, detail FROM memory_history h "
                        "WHERE user_id = %s AND (memory_id = ANY(%s) OR EXISTS (SELECT 1 FROM unnest(%s::text[]) t "
                        "WHERE strpos(h.old_content, t) > 0 OR strpos(h.new_content, t) > 0 "
                        "OR strpos(h.detail::text, t) > 0)) FOR UPDATE",
                        (user_id, list(ids), texts + forgetting.json_forms(texts)))
            updates = forgetting.changes([(*r[:4], dict(r[4] or {})) for r in cur.fetchall()], ids, texts)
            if updates:
                cur.executemany("UPDATE memory_history SET old_content = %s, new_content = %s, detail = %s "
                                "WHERE n = %s", updates)
        return len(updates)

    # ---- every stored row (base.RowSource: a copy of the index reads these) -----------------------
    def namespaces(self) -> list[str]:
        with self._cur() as cur:
            cur.execute("SELECT u FROM (SELECT user_id AS u FROM user_memories "
                        "UNION SELECT user_id FROM memory_history UNION SELECT user_id FROM memory_state "
                        'UNION SELECT user_id FROM memory_files) x ORDER BY u COLLATE "C"')
            return [r[0] for r in cur.fetchall()]

    def iter_rows(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[IndexItem]:
        for r in self._pages(f"{_COLS}, content_hash, embedding, terms", "memory_rows", user_id, batch):
            content_hash, vec, terms = r[_N:]
            yield IndexItem(record=record_from_row(r[:_N]), content_hash=content_hash,
                            vector=_stored_vector(vec),
                            terms=" ".join(terms) if terms is not None else None)

    def iter_history(self, user_id: str | None = None, *, batch: int = 1000) -> Iterator[HistoryEntry]:
        for r in self._pages(", ".join(HISTORY_FIELDS), "memory_history", user_id, batch):
            yield history_from_row(r)

    def iter_relations(self, user_id: str | None = None) -> Iterator[RelationRow]:
        for u, s, t, rel, strength in self._all(
                "user_id, source_memory_id, target_memory_id, relation_type, strength", "memory_relations", user_id,
                "created_at, source_memory_id, target_memory_id"):
            yield RelationRow(u, s, t, rel, float(strength))

    def iter_file_states(self, user_id: str | None = None) -> Iterator[FileState]:
        for u, f, mtime, size in self._all("user_id, file, mtime_ns, size", "memory_files", user_id,
                                           'user_id COLLATE "C", file COLLATE "C"'):
            yield FileState(u, f, int(mtime), int(size))

    def iter_states(self, user_id: str | None = None) -> Iterator[StateDoc]:
        for u, kind, key, value in self._all("user_id, kind, key, value", "memory_state", user_id,
                                             'user_id COLLATE "C", kind COLLATE "C", key COLLATE "C"'):
            yield StateDoc(u, kind, key, dict(value))

    def _pages(self, cols: str, table: str, user_id: str | None, batch: int) -> Iterator[tuple[Any, ...]]:
        """The rows of ``table`` in the order written (``n``), ``batch`` per statement."""
        mine = " AND user_id = %s" if user_id is not None else ""
        sql = f"SELECT n, {cols} FROM {table} WHERE n > %s{mine} ORDER BY n LIMIT %s"
        batch, last = max(1, batch), 0
        self.flush_access()
        while True:
            with self._cur() as cur:
                cur.execute(sql, (last, *([user_id] if user_id is not None else []), batch))
                rows = cur.fetchall()
            for r in rows:
                yield tuple(r[1:])
            if len(rows) < batch:
                return
            last = rows[-1][0]

    def _all(self, cols: str, table: str, user_id: str | None, order: str) -> list[tuple[Any, ...]]:
        mine = " WHERE user_id = %s" if user_id is not None else ""
        with self._cur() as cur:
            cur.execute(f"SELECT {cols} FROM {table}{mine} ORDER BY {order}",
                        [user_id] if user_id is not None else [])
            return cur.fetchall()

    def stats(self, user_id: str) -> dict[str, Any]:
        with self._cur() as cur:
            cur.execute("SELECT memory_type, count(*) FROM user_memories WHERE user_id = %s AND is_active "
                        "GROUP BY memory_type", (user_id,))
            by_type = {r[0]: int(r[1]) for r in cur.fetchall()}
            cur.execute("SELECT count(*), avg(importance_score), count(*) FILTER (WHERE NOT is_active), "
                        "count(*) FILTER (WHERE file = '') FROM user_memories WHERE user_id = %s", (user_id,))
            row = cur.fetchone()
        return {"total": int(row[0] or 0), "active": int(row[0] or 0) - int(row[2] or 0),
                "archived": int(row[2] or 0), "episodic": int(row[3] or 0), "by_type": by_type,
                "avg_importance": round(float(row[1]), 4) if row[1] is not None else None}

    def records_of_files(self, user_id: str, files: Sequence[str]) -> dict[str, list[MemoryRecord]]:
        """The active rows of each of ``files`` in stored order, in one query (``build_context``'s recent
        daily notes: one round trip instead of one per day)."""
        out: dict[str, list[MemoryRecord]] = {f: [] for f in files}
        with self._cur() as cur, self._reading():  # the connection first: a flush holds one while it waits
            cur.execute(f"SELECT {_COLS} FROM memory_rows WHERE user_id = %s AND is_active AND file = ANY(%s) "
                        "ORDER BY n", (user_id, list(files)))
            for r in self._overlay([record_from_row(r) for r in cur.fetchall()]):
                out[r.file].append(r)
        return out

    def analyze_after_bulk(self, written: int) -> bool:
        """After a bulk write (``BULK_ROWS`` rows or more) into a table that has no statistics yet
        (``memfold migrate``, a first import, a bench's ingest), ``ANALYZE`` it at once: until
        autovacuum's does, the planner takes a namespace for a few rows and answers the nearest-rows
        query with an exact scan of all of them (28 ms at 10k rows instead of the HNSW index's ~2).
        Asked at most once per handle. Returns whether it analyzed."""
        if written < BULK_ROWS or self.__dict__.get("_analyzed_bulk"):
            return False
        self._analyzed_bulk = True
        with self._cur() as cur:
            cur.execute("SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL FROM pg_stat_user_tables "
                        "WHERE relid = 'user_memories'::regclass")
            row = cur.fetchone()
            if row is not None and row[0]:  # analyzed before: autovacuum keeps the statistics current
                return False
            cur.execute("ANALYZE user_memories")
        return True

    # ---- for caches (cache/, index/pg_counter.py) ----------------------------------------------
    def file_states(self, user_id: str) -> dict[str, tuple[int, int]]:
        """Every file state of the namespace in one query (``UserStore.sync`` on each search), read with
        the change counter, which the search's cache lookups then use (``take_counter``): one round trip
        for both."""
        with self._cur() as cur:
            cur.execute("SELECT f.file, f.mtime_ns, f.size, c.value, s.seq, s.floor FROM memfold_meta c "
                        "LEFT JOIN memory_seq s ON s.user_id = %s LEFT JOIN memory_files f ON f.user_id = %s "
                        "WHERE c.key = 'change_counter'", (user_id, user_id))
            rows = cur.fetchall()
        if rows:  # and the namespace's keyword counter, for the search's keyword catch-up (pg_search)
            self._seen.counter = (int(rows[0][3]), time.monotonic())
            self._seen.seq = (user_id, int(rows[0][4] or 0), int(rows[0][5] or 0), time.monotonic())
        return {r[0]: (int(r[1]), int(r[2])) for r in rows if r[0] is not None}

    def take_counter(self) -> int | None:
        """The change counter read by this thread's last ``file_states``, once; None when it was taken
        or this process wrote since (``_cur(write=True)`` forgets it): then ask ``change_counter``."""
        seen = self._seen.__dict__.pop("counter", None)
        return seen[0] if seen is not None and time.monotonic() - seen[1] < SEEN_FOR else None

    def _take_seq(self, user_id: str) -> tuple[int, int] | None:
        """The namespace's (seq, floor) read by this thread's last ``file_states``, once, if still valid."""
        seen = self._seen.__dict__.pop("seq", None)
        ok = seen is not None and seen[0] == user_id and time.monotonic() - seen[3] < SEEN_FOR
        return (seen[1], seen[2]) if ok else None

    def change_counter(self, user_id: str | None = None) -> int:
        """Bumped (by trigger) with every committed write of memory rows, from any process (one
        counter for every namespace: ``user_id`` is accepted for the protocol)."""
        with self._cur() as cur:
            return pg_counter.read(cur)

    def instance_id(self) -> str:
        return f"postgres-{self._instance}"

    def most_accessed(self, user_id: str, limit: int) -> list[MemoryRecord]:
        """The namespace's ``limit`` active memories with the most accesses (ties: latest access, id)."""
        self.flush_access()
        with self._cur() as cur:
            cur.execute(f"SELECT {_COLS} FROM memory_rows WHERE user_id = %s AND is_active AND access_count > 0 "
                        "ORDER BY access_count DESC, last_accessed_at DESC NULLS LAST, id LIMIT %s", (user_id, limit))
            return [record_from_row(r) for r in cur.fetchall()]
