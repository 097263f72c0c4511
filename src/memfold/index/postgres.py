"""The shared index: PostgreSQL + pgvector (seed 003 §3, §6.1) for many processes and machines.

Same behaviour as ``SqliteIndex``: vectors are searched by pgvector (HNSW, cosine) scoped by
``user_id``; keywords are the Python-made terms (words + CJK bigrams) in a ``TEXT[]``, searched in
process by the same BM25 as the SQLite index (``pg_search.PgKeywords``, caught up from a change
counter per namespace), so both backends return the same keyword scores. Every write is one
transaction on a connection of the pool (``pg_pool``)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import groupby
from typing import Any

import numpy as np

from ..errors import MemoryIndexError
from ..filters import Filter
from ..models import HistoryEntry, MemoryRecord
from . import leases, pg_counter, terms_version
from .base import IndexItem
from .filter_sql import to_sql
from .pg_access import AccessQueue, PgAccess
from .pg_pool import PgOptions, Pool
from .pg_rows_mixin import _COL_LIST, _COLS, PgPurgeAndRows
from .pg_schema import connect, describe, driver, ensure_schema
from .pg_scope import PgSearchScope
from .pg_search import PgKeywords, PgVectors, bump, tombstone
from .pg_second import PgSecondVectors
from .rows import history_from_row, record_from_row

log = logging.getLogger("memfold.index")
_UPDATE = ", ".join(f"{c} = %s" for c in _COL_LIST[1:])

_INSERT = (f"INSERT INTO user_memories ({_COLS}, content_hash, embedding, terms, seq) "
           f"VALUES ({', '.join(['%s'] * 18)}, %s, %s, %s, %s)")
_UPDATE_ROW = (f"UPDATE user_memories SET {_UPDATE}, content_hash = COALESCE(NULLIF(%s, ''), content_hash), "
               "embedding = COALESCE(%s::vector, embedding), "
               "terms = CASE WHEN %s THEN terms ELSE %s::text[] END, seq = %s WHERE id = %s")
_NEAREST = ("SELECT id, 1 - (embedding <=> %(v)s) AS s FROM user_memories WHERE user_id = %(user)s AND is_active "
            "AND embedding IS NOT NULL "
            "ORDER BY embedding <=> %(v)s LIMIT %(limit)s")


def _terms_list(terms: str) -> list[str]:
    return terms.split()


class PostgresIndex(PgSearchScope, PgPurgeAndRows, PgAccess, PgSecondVectors):
    """``Index`` over one PostgreSQL database (tables in the connection's ``search_path``).

    Thread-safe: each call borrows a connection of the pool; many processes may share the database."""

    def __init__(self, dsn: str, *, dim: int, embedder_name: str, options: PgOptions | None = None):
        self._psycopg = driver()
        self.dsn = dsn
        self.dim = dim
        self.embedder_name = embedder_name
        self.where = describe(dsn)
        self._lock = threading.RLock()
        self._seen = threading.local()  # the change counter read with the files' states (pg_rows_mixin.take_counter)
        self._scopes = threading.local()  # a search's scope on this thread (pg_scope)
        self._leases: dict[tuple[str, str], tuple[str, Any]] = {}  # (user, name) -> (holder, its connection)
        self.options = (options or PgOptions()).check()
        conn = connect(self.dsn)  # the schema first, on a connection of its own: errors name the setting
        try:
            ensure_schema(conn, self.dim, self.embedder_name, (self.options.hnsw_m, self.options.hnsw_ef_construction))
            self._instance = pg_counter.install(conn)  # the change counter of caches (cache/)
            terms_version.refresh_postgres(conn, self.where)  # terms of an older stemmer: made again
        finally:
            conn.close()
        self.pool = Pool(dsn, self.options)
        self._keywords = PgKeywords()
        self._near = PgVectors(dim)
        delay = self.options.access_delay_ms / 1000.0  # access statistics written behind the search (pg_access)
        self._access = AccessQueue(self._write_access, delay) if delay > 0 else None

    # ---- plumbing -------------------------------------------------------------------
    @contextmanager
    def _cur(self, write: bool = False) -> Iterator[Any]:
        """A cursor on a connection of the pool (in one transaction when ``write``); driver errors
        become MemoryIndexError. The pool replaces a connection that broke."""
        try:
            with self.pool.connection() as conn:
                if write:
                    self._seen.__dict__.clear()  # a counter read before this write no longer stands (pg_rows_mixin)
                    self._forget_scope()  # nor the rows a search read before it (pg_scope)
                    with conn.transaction(), conn.cursor() as cur:
                        yield cur
                else:
                    with conn.cursor() as cur:
                        yield cur
        except self._psycopg.Error as exc:
            raise MemoryIndexError(f"PostgreSQL index at {self.where}: {exc}") from exc

    def _vec(self, v: np.ndarray, what: str) -> np.ndarray:
        v = np.asarray(v, dtype=np.float32)
        if v.shape[-1] != self.dim:
            raise MemoryIndexError(f"vector of {what} has dim {v.shape[-1]}, index has {self.dim}")
        return v

    # ---- writes --------------------------------------------------------------------
    def upsert(self, items: Sequence[IndexItem]) -> None:
        if not items:
            return
        self.flush_access()  # the records carry access counts read with the queued ones: not counted twice
        with self._cur(write=True) as cur:
            ids = list(dict.fromkeys(it.record.id for it in items))
            cur.execute("SELECT id, user_id, terms IS NOT NULL FROM user_memories WHERE id = ANY(%s) "
                        "ORDER BY id FOR UPDATE", (ids,))  # rows locked in id order, as record_access does
            known = {r[0]: (r[1], r[2]) for r in cur.fetchall()}
            # the records carry their access statistics: the rows' own columns take them (schema 6)
            cur.execute("DELETE FROM memory_access WHERE id = ANY(%s)", (ids,))
            seqs = bump(cur, [it.record.user_id for it in items])
            ops: list[tuple[str, list[Any]]] = []  # the statements in order; runs of one kind go in one pipeline
            for it in items:
                r = it.record
                vec = self._vec(it.vector, r.id) if it.vector is not None else None
                values = [r.id, r.user_id, r.agent_id, r.memory_type.value, r.content, r.context,
                          json.dumps(r.structured_data, ensure_ascii=False), list(r.source_ids),
                          r.source_session_id, r.file, r.created_at, r.updated_at, r.importance, r.confidence,
                          r.access_count, r.last_accessed_at, r.is_active, r.superseded_by]
                old = known.get(r.id)
                if old is not None and old[0] != r.user_id:
                    raise MemoryIndexError(f"memory id {r.id} belongs to another namespace")
                if not r.is_active:
                    keep_terms, terms = False, None  # archived rows leave keyword search, as in SQLite
                elif it.terms is not None or old is None:
                    keep_terms, terms = False, _terms_list(it.terms or "")
                else:
                    if not old[1]:
                        raise MemoryIndexError(f"memory {r.id} is re-activated without terms")
                    keep_terms, terms = True, None
                if old is None:
                    if vec is None and not it.vector_later:
                        raise MemoryIndexError(f"new memory {r.id} needs a vector")
                    ops.append((_INSERT, values + [it.content_hash, vec, terms, seqs[r.user_id]]))
                else:
                    ops.append((_UPDATE_ROW,
                                values[1:] + [it.content_hash, vec, keep_terms, terms, seqs[r.user_id], r.id]))
                known[r.id] = (r.user_id, terms is not None or keep_terms)
            for sql, run in groupby(ops, key=lambda op: op[0]):
                cur.executemany(sql, [params for _, params in run])
        self.analyze_after_bulk(len(items))  # a table without statistics is not searched by HNSW (pg_rows_mixin)

    def _delete_rows(self, cur: Any, user_id: str, ids: Sequence[str]) -> None:
        cur.execute("DELETE FROM user_memories WHERE user_id = %s AND id = ANY(%s) RETURNING id",
                    (user_id, list(ids)))
        gone = [r[0] for r in cur.fetchall()]
        if gone:
            cur.execute("DELETE FROM memory_access WHERE id = ANY(%s)", (gone,))
            tombstone(cur, user_id, bump(cur, [user_id])[user_id], gone)
            cur.execute("DELETE FROM memory_relations WHERE source_memory_id = ANY(%s) OR target_memory_id = ANY(%s)",
                        (gone, gone))

    def pending_vectors(self, limit: int) -> list[MemoryRecord]:
        self.flush_access()
        with self._cur() as cur:
            cur.execute(f"SELECT {_COLS} FROM memory_rows WHERE embedding IS NULL ORDER BY n LIMIT %s",
                        (max(0, limit),))
            return [record_from_row(r) for r in cur.fetchall()]

    def set_vectors(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        if not records:
            return 0
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(records), self.dim):
            raise MemoryIndexError(f"{len(records)} vectors of dim {self.dim} expected, got shape {vectors.shape}")
        done = 0
        with self._cur(write=True) as cur:
            seqs = bump(cur, [r.user_id for r in records])
            for i, r in enumerate(records):
                cur.execute("UPDATE user_memories SET embedding = %s, seq = %s WHERE id = %s AND user_id = %s "
                            "AND embedding IS NULL", (vectors[i], seqs[r.user_id], r.id, r.user_id))
                done += cur.rowcount
        return done

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._cur(write=True) as cur:
            self._delete_rows(cur, user_id, ids)

    def append_history(self, entries: Sequence[HistoryEntry]) -> None:
        if not entries:
            return
        with self._cur(write=True) as cur:
            cur.executemany(
                "INSERT INTO memory_history (user_id, memory_id, action, at, old_content, new_content, detail) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [(e.user_id, e.memory_id, e.action, e.at, e.old_content, e.new_content,
                  json.dumps(e.detail, ensure_ascii=False)) for e in entries])

    def add_relation(self, user_id: str, source_id: str, target_id: str, relation: str, strength: float) -> None:
        with self._cur(write=True) as cur:
            cur.execute(
                "INSERT INTO memory_relations VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (source_memory_id, target_memory_id, relation_type) DO UPDATE SET "
                "user_id = EXCLUDED.user_id, strength = EXCLUDED.strength, created_at = EXCLUDED.created_at",
                (user_id, source_id, target_id, relation, strength, datetime.now(timezone.utc)))

    def remove_relation(self, user_id: str, source_id: str, target_id: str, relation: str | None = None) -> int:
        with self._cur(write=True) as cur:
            cur.execute("DELETE FROM memory_relations WHERE user_id = %s AND source_memory_id = %s AND "
                        "target_memory_id = %s AND (%s::text IS NULL OR relation_type = %s)",
                        (user_id, source_id, target_id, relation, relation))
            return int(cur.rowcount)

    # ---- the usage record ----------------------------------------------------------------
    def log_usage(self, user_id: str, at: datetime, query: str, ids: Sequence[str], keep: int,
                  since: datetime | None) -> None:
        # one statement (one round trip): the DELETE reads the table as it was before the INSERT,
        # so the newest keep - 1 rows stay beside the new one
        with self._cur(write=True) as cur:
            cur.execute(
                "WITH added AS (INSERT INTO memory_usage_log (user_id, at, query, ids) VALUES (%s, %s, %s, %s) "
                "RETURNING n) DELETE FROM memory_usage_log WHERE user_id = %s AND ((%s::timestamptz IS NOT NULL "
                "AND at < %s) OR n <= (SELECT n FROM memory_usage_log WHERE user_id = %s ORDER BY n DESC "
                "LIMIT 1 OFFSET %s))",
                (user_id, at, query, list(ids), user_id, since, since, user_id, max(keep - 1, 0)))

    def usage(self, user_id: str, limit: int) -> list[dict[str, Any]]:
        with self._cur() as cur:
            cur.execute("SELECT at, query, ids FROM memory_usage_log WHERE user_id = %s ORDER BY n DESC LIMIT %s",
                        (user_id, limit))
            rows = cur.fetchall()
        return [{"at": at.isoformat(), "query": q, "ids": list(ids)} for at, q, ids in rows]

    def forget_usage(self, user_id: str, ids: Sequence[str], words: Sequence[str] = ()) -> int:
        if not ids and not words:
            return 0
        with self._cur(write=True) as cur:
            cur.execute("DELETE FROM memory_usage_log WHERE user_id = %s AND (ids && %s::text[] OR EXISTS ("
                        "SELECT 1 FROM unnest(%s::text[]) w WHERE strpos(lower(query), lower(w)) > 0))",
                        (user_id, list(ids), list(words)))
            return int(cur.rowcount)

    def set_file_state(self, user_id: str, file: str, state: tuple[int, int] | None) -> None:
        with self._cur(write=True) as cur:
            if state is None:
                cur.execute("DELETE FROM memory_files WHERE user_id = %s AND file = %s", (user_id, file))
            else:
                cur.execute("INSERT INTO memory_files VALUES (%s, %s, %s, %s) ON CONFLICT (user_id, file) "
                            "DO UPDATE SET mtime_ns = EXCLUDED.mtime_ns, size = EXCLUDED.size", (user_id, file, *state))

    def clear_files(self, user_id: str) -> None:
        """Forget every file-backed row of a namespace (reindex); episodic turns stay."""
        with self._cur(write=True) as cur:
            cur.execute("SELECT id FROM user_memories WHERE user_id = %s AND file <> '' AND is_active", (user_id,))
            self._delete_rows(cur, user_id, [r[0] for r in cur.fetchall()])
            cur.execute("DELETE FROM memory_files WHERE user_id = %s", (user_id,))

    # ---- reads ---------------------------------------------------------------------
    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        with self._cur() as cur:
            cur.execute("SELECT id FROM user_memories WHERE id = ANY(%s) AND user_id <> %s", (list(ids), user_id))
            return {r[0] for r in cur.fetchall()}

    def list_records(self, user_id: str, *, active_only: bool = True, file: str | None = None,
                     memory_type: str | None = None, limit: int | None = None, offset: int = 0,
                     where_filter: Filter | None = None) -> list[MemoryRecord]:
        where, args = ["user_id = %s"], [user_id]
        if where_filter is not None:
            cond, more = to_sql(where_filter, "postgres")
            where.append(cond)
            args.extend(more)
        if active_only:
            where.append("is_active")
        if file is not None:
            where.append("file = %s")
            args.append(file)
        if memory_type is not None:
            where.append("memory_type = %s")
            args.append(memory_type)
        limit = None if limit is not None and limit < 0 else limit  # SQLite: a negative limit means none
        with self._cur() as cur, self._reading():  # the connection first: a flush holds one while it waits
            cur.execute(f"SELECT {_COLS} FROM memory_rows WHERE {' AND '.join(where)} ORDER BY n "
                        "LIMIT %s OFFSET %s", [*args, limit, max(0, offset)])
            return self._overlay([record_from_row(r) for r in cur.fetchall()])

    def matching_ids(self, user_id: str, ids: Sequence[str], where_filter: Filter) -> set[str]:
        """The ids among ``ids`` whose rows of the namespace match the filter."""
        if not ids:
            return set()
        cond, more = to_sql(where_filter, "postgres")
        with self._cur() as cur, self._reading():
            cur.execute(f"SELECT id FROM memory_rows WHERE user_id = %s AND id = ANY(%s) AND {cond}",
                        [user_id, list(ids), *more])
            return {r[0] for r in cur.fetchall()}

    def owners(self, memory_id: str) -> list[str]:
        """The namespaces that hold a row or a history entry of ``memory_id`` (a memory asked for without its namespace)."""
        with self._cur() as cur:
            cur.execute("SELECT DISTINCT user_id FROM user_memories WHERE id = %s", (memory_id,))
            rows = cur.fetchall()
            if not rows:
                cur.execute("SELECT DISTINCT user_id FROM memory_history WHERE memory_id = %s", (memory_id,))
                rows = cur.fetchall()
        return sorted(r[0] for r in rows)

    def content_hashes(self, user_id: str, file: str) -> dict[str, str]:
        with self._cur() as cur:
            cur.execute("SELECT id, content_hash FROM user_memories WHERE user_id = %s AND file = %s AND is_active",
                        (user_id, file))
            return dict(cur.fetchall())

    def count(self, user_id: str, *, active_only: bool = True) -> int:
        with self._cur() as cur:
            cur.execute("SELECT count(*) FROM user_memories WHERE user_id = %s" + (" AND is_active" if active_only else ""),
                        (user_id,))
            return int(cur.fetchone()[0])

    def keyword_search(self, user_id: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        uniq = list(dict.fromkeys(t for t in terms if t))
        if not uniq or limit <= 0:
            return []
        try:
            with self.pool.connection() as conn:
                found = self._keywords.search(conn, user_id, uniq, limit, self._seq_of_scope(user_id))
        except self._psycopg.Error as exc:
            raise MemoryIndexError(f"PostgreSQL index at {self.where}: {exc}") from exc
        self.expect_rows(user_id, [mid for mid, _ in found])  # the search reads their rows next (pg_scope)
        return found

    def vector_search(self, user_id: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if limit <= 0:
            return []
        scope = self._scope(user_id)
        if scope is not None:  # with the rows of the hits and of the keyword candidates (pg_scope)
            return self._nearest_in_scope(scope, user_id, self._vec(vector, "the query"), limit)
        with self._cur() as cur:
            cur.execute(_NEAREST, {"v": self._vec(vector, "the query"), "user": user_id, "limit": limit})
            return [(r[0], float(r[1])) for r in cur.fetchall()]

    def vector_search_many(self, user_id: str, vectors: np.ndarray, limit: int,
                           min_score: float | None = None) -> list[list[tuple[str, float]]]:
        """One nearest-rows query per vector, sent in one pipeline: each uses the HNSW index (a
        LATERAL join over the vectors ran 30× slower per vector at 30k rows: ~64 ms against ~2 ms)."""
        out: list[list[tuple[str, float]]] = [[] for _ in range(len(vectors))]
        if limit <= 0 or len(vectors) == 0:
            return out
        if min_score is not None:  # the near-duplicate check of an add: exact, in process (pg_search.PgVectors)
            qs = self._vec(np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1), "a query")
            try:
                with self.pool.connection() as conn:
                    return self._near.search_above(conn, user_id, qs, limit, float(min_score))
            except self._psycopg.Error as exc:
                raise MemoryIndexError(f"PostgreSQL index at {self.where}: {exc}") from exc
        params = [{"v": self._vec(v, "a query"), "user": user_id, "limit": limit}
                  for v in np.asarray(vectors, dtype=np.float32)]
        with self._cur() as cur:
            cur.executemany(_NEAREST, params, returning=True)
            for i in range(len(params)):
                out[i] = [(mid, float(s)) for mid, s in cur.fetchall() if min_score is None or float(s) >= min_score]
                if i + 1 < len(params) and not cur.nextset():
                    raise MemoryIndexError(f"PostgreSQL index at {self.where}: fewer result sets than queries")
        return out

    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]:
        with self._cur() as cur:
            cur.execute("SELECT memory_id, user_id, action, at, old_content, new_content, detail FROM memory_history "
                        "WHERE user_id = %s AND memory_id = %s ORDER BY n", (user_id, memory_id))
            return [history_from_row(r) for r in cur.fetchall()]

    def relations(self, user_id: str, memory_id: str) -> list[dict[str, Any]]:
        with self._cur() as cur:
            cur.execute("SELECT source_memory_id, target_memory_id, relation_type, strength, created_at "
                        "FROM memory_relations WHERE user_id = %s AND (source_memory_id = %s OR target_memory_id = %s) "
                        "ORDER BY created_at, source_memory_id, target_memory_id", (user_id, memory_id, memory_id))
            rows = cur.fetchall()
        return [{"source_id": r[0], "target_id": r[1], "relation": r[2], "strength": r[3],
                 "created_at": r[4].isoformat()} for r in rows]

    def file_state(self, user_id: str, file: str) -> tuple[int, int] | None:
        with self._cur() as cur:
            cur.execute("SELECT mtime_ns, size FROM memory_files WHERE user_id = %s AND file = %s", (user_id, file))
            row = cur.fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def user_ids(self) -> list[str]:
        with self._cur() as cur:
            cur.execute('SELECT DISTINCT user_id COLLATE "C" AS u FROM user_memories ORDER BY u')
            return [r[0] for r in cur.fetchall()]

    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None:
        with self._cur(write=True) as cur:
            cur.execute("INSERT INTO memory_state VALUES (%s, %s, %s, %s, now()) ON CONFLICT (user_id, kind, key) "
                        "DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at",
                        (user_id, kind, key, json.dumps(value, ensure_ascii=False)))

    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None:
        with self._cur() as cur:
            cur.execute("SELECT value FROM memory_state WHERE user_id = %s AND kind = %s AND key = %s",
                        (user_id, kind, key))
            row = cur.fetchone()
        return row[0] if row else None

    def list_state(self, user_id: str, kind: str) -> list[str]:
        with self._cur() as cur:
            cur.execute('SELECT key FROM memory_state WHERE user_id = %s AND kind = %s ORDER BY key COLLATE "C"',
                        (user_id, kind))
            return [r[0] for r in cur.fetchall()]

    def delete_state(self, user_id: str, kind: str, key: str) -> None:
        with self._cur(write=True) as cur:
            cur.execute("DELETE FROM memory_state WHERE user_id = %s AND kind = %s AND key = %s", (user_id, kind, key))

    def try_lease(self, user_id: str, name: str, holder: str, ttl: float) -> bool:
        """An advisory lock on a connection of its own (freed by the server if this process dies)."""
        with self._lock:
            if (user_id, name) in self._leases:
                return self._leases[(user_id, name)][0] == holder
            conn = connect(self.dsn)
            try:
                got = conn.execute("SELECT pg_try_advisory_lock(%s)", (leases.advisory_key(user_id, name),)).fetchone()
            except self._psycopg.Error as exc:
                conn.close()
                raise MemoryIndexError(f"PostgreSQL index at {self.where}: {exc}") from exc
            if not got or not got[0]:
                conn.close()
                return False
            self._leases[(user_id, name)] = (holder, conn)
            return True

    def release_lease(self, user_id: str, name: str, holder: str) -> None:
        with self._lock:
            held = self._leases.get((user_id, name))
            if held is None or held[0] != holder:
                return
            del self._leases[(user_id, name)]
            self._end_lease(user_id, name, held[1])

    def _end_lease(self, user_id: str, name: str, conn: Any) -> None:
        """Unlock, then close: a closed session's lock is freed by the server a moment after the close returns."""
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (leases.advisory_key(user_id, name),))
        except self._psycopg.Error as exc:  # the session is going anyway, and its lock with it
            log.warning("PostgreSQL index at %s: lease %s/%s not unlocked before close: %s", self.where,
                        user_id, name, exc)
        finally:
            conn.close()

    def storage_bytes(self) -> int:
        """Size on disk of the index's tables with their indexes and TOAST (for ``memfold bench``)."""
        with self._cur() as cur:
            cur.execute("SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) FROM unnest(%s::text[]) t",
                        (["user_memories", "memory_relations", "memory_history", "memory_files", "memory_state",
                          "memory_access_log", "memory_usage_log", "memory_access", "memory_seq", "memory_tombstones",
                          "memory_second_vectors", "memfold_meta", "memfold_schema_version"],))
            return int(cur.fetchone()[0])

    def close(self) -> None:
        if self._access is not None:
            try:
                self._access.close()  # what searches recorded is written before the pool goes
            except Exception as exc:  # noqa: BLE001 - closing goes on; the loss is named
                log.error("PostgreSQL index at %s: access statistics of %d rows not written at close: %s", self.where,
                          len(self._access), exc)
            self._access = None
        with self._lock:
            for (user_id, name), (_, conn) in self._leases.items():
                self._end_lease(user_id, name, conn)
            self._leases.clear()
        self._keywords.clear()
        self._near.clear()
        self.pool.close()
