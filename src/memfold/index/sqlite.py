"""The embedded index: one SQLite file in WAL mode holding every row, its Python-made keyword
terms and its float32 vector; both are searched in process (``KeywordIndex`` BM25 and
``VectorMatrix``), kept up to date from the index's change counter."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbedderChangedError, MemoryIndexError, ReadOnlyWorkspaceError
from ..filters import Filter
from ..models import HistoryEntry, MemoryRecord
from ..workspace.files import FileLock
from . import leases, terms_version
from .base import IndexItem
from .filter_sql import to_sql
from .record_cache import DEFAULT_SIZE as RECORD_CACHE_SIZE
from .record_cache import RecordCache
from .rows import RECORD_FIELDS, history_from_row, record_from_row
from .sqlite_cache import SqliteCacheReads
from .sqlite_rows import SqlitePurge, SqliteRowReads
from .sqlite_schema import SCHEMA, SCHEMA_VERSION, migrate
from .sqlite_search import SearchStructures, SqliteTermReads
from .sqlite_second import SqliteSecondVectors
from .sqlite_tx import SqliteTransactions, _read_only, _reason
from .sqlite_upsert import JSON_TEXT, upsert_rows
from .vectors import EXACT_MAX

_COLS = ", ".join(RECORD_FIELDS)  # SQLite's column names are MemoryRecord's fields


class SqliteIndex(SqliteRowReads, SqlitePurge, SqliteCacheReads, SqliteTermReads, SqliteSecondVectors):
    """``Index`` over one SQLite file. Thread-safe; several processes may share the file (WAL)."""

    read_only = False  # True: opened on a workspace this process may not write (``ReadOnlyMode``)
    _txs: SqliteTransactions  # its write transactions (``index/sqlite_tx.py``)

    def __init__(self, path: Path, *, dim: int, embedder_name: str, vector_exact_max: int = EXACT_MAX,
                 record_cache: int = RECORD_CACHE_SIZE):
        self.path = Path(path)
        self.dim = dim
        self.vector_exact_max = vector_exact_max
        self._lock = threading.RLock()
        self._closed = False
        self._records = RecordCache(record_cache)  # rows read by ``get``, kept while the file is unchanged
        self.read_only = _read_only(self.path)
        if self.read_only:
            self._open_read_only(embedder_name)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
            self._txs = SqliteTransactions(self._db, self.path, self._lock)
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute("PRAGMA secure_delete=ON")  # deleted rows and freed pages are zeroed, not left behind
            # switching to WAL and creating the schema race between new processes: one at a time
            with FileLock(self.path.with_name(self.path.name + ".init.lock")):
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with FileLock(self.path.with_name(self.path.name + ".init.lock")), self._tx():
                for stmt in SCHEMA.strip().split(";\n"):
                    if stmt.strip():
                        self._db.execute(stmt)
                version = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if version is not None and int(version[0]) > SCHEMA_VERSION:
                    raise MemoryIndexError(f"index {self.path} has schema {version[0]}, newer than this memfold "
                                           f"({SCHEMA_VERSION}); upgrade memfold")
                if version is not None and int(version[0]) < SCHEMA_VERSION:
                    migrate(self._db)  # whatever the embedder: a rebuild for another one reads this schema
            with FileLock(self.path.with_name(self.path.name + ".init.lock")), self._tx():
                self._check_meta(embedder_name)
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('instance', ?)", (uuid.uuid4().hex,))
                instance = self._db.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()[0]
                terms_version.refresh_sqlite(self._db, self.path)  # terms of an older stemmer: made again
            self._search = SearchStructures(self._db, self.path, instance, dim, vector_exact_max)
            self._txs.on_boundary = self._search.unpin
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise MemoryIndexError(f"cannot open index {self.path}: {_reason(exc)}") from exc
        except BaseException:
            self._close_quietly()
            raise

    def _open_read_only(self, embedder_name: str) -> None:
        """A workspace this process may not write (read-only folder or file): reads work, nothing
        is created (no lock file, no WAL files), every write raises ``ReadOnlyWorkspaceError``."""
        if not self.path.exists():
            raise ReadOnlyWorkspaceError(f"the workspace {self.path.parent} is read-only and has no index yet; "
                                         "run memfold once where it may write")
        try:
            try:
                self._db = self._connect_ro("mode=ro")
            except sqlite3.OperationalError:  # WAL files that cannot be created: read the file as it is
                self._db = self._connect_ro("immutable=1")
            self._txs = SqliteTransactions(self._db, self.path, self._lock, read_only=True)
            version = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if version is None or int(version[0]) != SCHEMA_VERSION:
                raise MemoryIndexError(f"index {self.path} has schema {version[0] if version else 'none'} and this "
                                       f"memfold needs {SCHEMA_VERSION}; the workspace is read-only, so it cannot "
                                       "be migrated here")
            self._check_meta(embedder_name)
            terms_version.check_read_only(self._db, self.path)
            instance = self._db.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()
            self._search = SearchStructures(self._db, self.path, instance[0] if instance else "", self.dim,
                                            self.vector_exact_max)
            self._txs.on_boundary = self._search.unpin
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise MemoryIndexError(f"cannot read index {self.path}: {exc}") from exc
        except BaseException:
            self._close_quietly()
            raise

    def _connect_ro(self, flag: str) -> sqlite3.Connection:
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?{flag}", uri=True, timeout=60.0,
                             check_same_thread=False, isolation_level=None)
        try:
            db.execute("SELECT count(*) FROM meta").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def transaction(self) -> SqliteTransactions:
        """Several writes as one transaction (``with index.transaction(): ...``): all or none are kept."""
        return self._txs.begin()

    def _close_quietly(self) -> None:
        db = getattr(self, "_db", None)
        if db is not None:
            db.close()

    # ---- plumbing -------------------------------------------------------------------
    def _tx(self) -> SqliteTransactions:
        return self._txs.begin()

    def _check_meta(self, embedder_name: str) -> None:
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not meta:
            self._db.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("schema_version", str(SCHEMA_VERSION)), ("embedder", embedder_name), ("dim", str(self.dim)),
                ("seq", "0")])
            return
        if meta.get("embedder") != embedder_name or int(meta.get("dim", 0)) != self.dim:
            raise EmbedderChangedError(
                f"index {self.path} was built with embedder {meta.get('embedder')!r} (dim {meta.get('dim')}), "
                f"but {embedder_name!r} (dim {self.dim}) is configured; run 'memfold reindex' to rebuild it"
            )

    def _next_seq(self) -> int:
        row = self._db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'seq' RETURNING value")
        return int(row.fetchone()[0])

    # ---- writes --------------------------------------------------------------------
    def upsert(self, items: Sequence[IndexItem]) -> None:
        if not items:
            return
        with self._lock, self._tx():
            upsert_rows(self._db, items, self._next_seq(), self.dim)

    def pending_vectors(self, limit: int) -> list[MemoryRecord]:
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(
                f"SELECT {_COLS} FROM memories WHERE embedding IS NULL ORDER BY rowid LIMIT ?", (max(0, limit),))]

    def set_vectors(self, records: Sequence[MemoryRecord], vectors: np.ndarray) -> int:
        if not records or self.read_only:
            return 0
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(records), self.dim):
            raise MemoryIndexError(f"{len(records)} vectors of dim {self.dim} expected, got shape {vectors.shape}")
        with self._lock, self._tx():
            seq = self._next_seq()
            return sum(self._db.execute(
                "UPDATE memories SET embedding = ?, seq = ? WHERE id = ? AND user_id = ? AND embedding IS NULL",
                (vectors[i].tobytes(), seq, r.id, r.user_id)).rowcount for i, r in enumerate(records))

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._lock, self._tx():
            seq = self._next_seq()
            for mid in ids:
                row = self._db.execute("SELECT rowid FROM memories WHERE id = ? AND user_id = ?",
                                       (mid, user_id)).fetchone()
                if row is None:
                    continue
                self._db.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
                self._db.execute("DELETE FROM relations WHERE source_id = ? OR target_id = ?", (mid, mid))
                self._db.execute("INSERT INTO tombstones VALUES (?, ?, ?)", (seq, user_id, mid))

    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        if not ids or self.read_only:  # access statistics are a side effect of reading: not kept read-only
            return
        with self._lock:
            alone, before = not self._txs.depth, self._txs.writes
            with self._tx():
                self._db.executemany(
                    "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ? "
                    "AND user_id = ?", [(at.isoformat(), mid, user_id) for mid in ids])
                self._db.execute("INSERT INTO access_log VALUES (?, ?, ?)",
                                 (user_id, at.isoformat(), json.dumps(list(ids))))
            kept = self._records
            if alone and kept.token is not None and kept.token[1] == before:  # committed: nothing else written here
                kept.token = (kept.token[0], self._txs.writes)
                kept.patch_access(user_id, ids, at)

    def append_history(self, entries: Sequence[HistoryEntry]) -> None:
        if not entries:
            return
        with self._lock, self._tx():
            self._db.executemany(
                "INSERT INTO history (user_id, memory_id, action, at, old_content, new_content, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(e.user_id, e.memory_id, e.action, e.at.isoformat(), e.old_content, e.new_content,
                  JSON_TEXT.encode(e.detail)) for e in entries])

    def add_relation(self, user_id: str, source_id: str, target_id: str, relation: str, strength: float) -> None:
        with self._lock, self._tx():
            self._db.execute("INSERT OR REPLACE INTO relations VALUES (?, ?, ?, ?, ?, ?)",
                             (user_id, source_id, target_id, relation, strength,
                              datetime.now(timezone.utc).isoformat()))

    def remove_relation(self, user_id: str, source_id: str, target_id: str, relation: str | None = None) -> int:
        with self._lock, self._tx():
            cur = self._db.execute("DELETE FROM relations WHERE user_id = ? AND source_id = ? AND target_id = ? "
                                   "AND (? IS NULL OR relation = ?)", (user_id, source_id, target_id, relation, relation))
            return int(cur.rowcount)

    # ---- the usage record ----------------------------------------------------------------
    def log_usage(self, user_id: str, at: datetime, query: str, ids: Sequence[str], keep: int,
                  since: datetime | None) -> None:
        if self.read_only:  # like access statistics, a side effect of reading
            return
        with self._lock:
            alone, before = not self._txs.depth, self._txs.writes
            with self._tx():
                self._db.execute("INSERT INTO usage_log (user_id, at, query, ids) VALUES (?, ?, ?, ?)",
                                 (user_id, at.isoformat(), query, json.dumps(list(ids))))
                if since is not None:
                    self._db.execute("DELETE FROM usage_log WHERE user_id = ? AND at < ?",
                                     (user_id, since.isoformat()))
                cut = self._db.execute("SELECT n FROM usage_log WHERE user_id = ? ORDER BY n DESC LIMIT 1 OFFSET ?",
                                       (user_id, keep)).fetchone()
                if cut is not None:
                    self._db.execute("DELETE FROM usage_log WHERE user_id = ? AND n <= ?", (user_id, cut[0]))
            kept = self._records
            if alone and kept.token is not None and kept.token[1] == before:  # no record changed: kept rows stay true
                kept.token = (kept.token[0], self._txs.writes)

    def usage(self, user_id: str, limit: int) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT at, query, ids FROM usage_log WHERE user_id = ? ORDER BY n DESC LIMIT ?",
                                    (user_id, limit)).fetchall()
        return [{"at": at, "query": q, "ids": json.loads(ids)} for at, q, ids in rows]

    def forget_usage(self, user_id: str, ids: Sequence[str], words: Sequence[str] = ()) -> int:
        if not ids and not words:
            return 0
        gone = 0
        with self._lock, self._tx():
            for k in range(0, len(ids), 500):
                part = list(ids[k: k + 500])
                cur = self._db.execute(
                    "DELETE FROM usage_log WHERE user_id = ? AND EXISTS (SELECT 1 FROM json_each(usage_log.ids) "
                    f"WHERE value IN ({', '.join('?' * len(part))}))", (user_id, *part))
                gone += int(cur.rowcount)
            for w in words:
                cur = self._db.execute("DELETE FROM usage_log WHERE user_id = ? AND instr(lower(query), lower(?)) > 0",
                                       (user_id, w))
                gone += int(cur.rowcount)
        return gone

    def set_file_state(self, user_id: str, file: str, state: tuple[int, int] | None) -> None:
        with self._lock, self._tx():
            if state is None:
                self._db.execute("DELETE FROM files WHERE user_id = ? AND file = ?", (user_id, file))
            else:
                self._db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)", (user_id, file, *state))

    def clear_files(self, user_id: str) -> None:
        """Forget every file-backed row of a namespace (reindex); episodic turns stay."""
        ids = [r[0] for r in self._db.execute(
            "SELECT id FROM memories WHERE user_id = ? AND file != '' AND is_active = 1", (user_id,)).fetchall()]
        self.delete(user_id, ids)
        with self._lock, self._tx():
            self._db.execute("DELETE FROM files WHERE user_id = ?", (user_id,))

    # ---- reads ---------------------------------------------------------------------
    def get(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        return self._get(user_id, ids, True)

    def get_shared(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """``get`` for the read path: the record cache's records themselves, not copies. The caller
        changes none of them and copies those it hands out (``engine/read/read.py``)."""
        return self._get(user_id, ids, False)

    def _get(self, user_id: str, ids: Sequence[str], copy: bool) -> list[MemoryRecord]:
        if not ids:
            return []
        asked = ids
        with self._lock:
            out: dict[str, MemoryRecord] = {}
            kept = self._records if self._records.size and not self._txs.depth else None  # never a write's rows
            if kept is not None:
                kept.check((self._db.execute("PRAGMA data_version").fetchone()[0], self._txs.writes))
                ids = kept.take(user_id, ids, out, copy)
            read: list[MemoryRecord] = []
            for chunk in range(0, len(ids), 500):
                part = list(ids[chunk: chunk + 500])
                q = f"SELECT {_COLS} FROM memories WHERE +user_id = ? AND id IN ({','.join('?' * len(part))})"
                for r in self._db.execute(q, [user_id, *part]):
                    out[r[0]] = rec = record_from_row(r)
                    read.append(rec)
            if kept is not None:
                kept.put(user_id, read, copy)
        return [out[i] for i in asked if i in out]

    def list_records(self, user_id: str, *, active_only: bool = True, file: str | None = None,
                     memory_type: str | None = None, limit: int | None = None, offset: int = 0,
                     where_filter: Filter | None = None) -> list[MemoryRecord]:
        where, args = ["user_id = ?"], [user_id]
        if where_filter is not None:
            cond, more = to_sql(where_filter, "sqlite")
            where.append(cond)
            args.extend(more)
        if active_only:
            where.append("is_active = 1")
        if file is not None:
            where.append("file = ?")
            args.append(file)
        if memory_type is not None:
            where.append("memory_type = ?")
            args.append(memory_type)
        q = f"SELECT {_COLS} FROM memories WHERE {' AND '.join(where)} ORDER BY rowid LIMIT ? OFFSET ?"
        with self._lock:
            return [record_from_row(r) for r in self._db.execute(q, [*args, -1 if limit is None else limit, offset])]

    def matching_ids(self, user_id: str, ids: Sequence[str], where_filter: Filter) -> set[str]:
        """The ids among ``ids`` whose rows of the namespace match the filter."""
        cond, more = to_sql(where_filter, "sqlite")
        out: set[str] = set()
        with self._lock:
            for chunk in range(0, len(ids), 500):
                part = list(ids[chunk: chunk + 500])
                q = f"SELECT id FROM memories WHERE user_id = ? AND id IN ({','.join('?' * len(part))}) AND {cond}"
                out.update(r[0] for r in self._db.execute(q, [user_id, *part, *more]))
        return out

    def owners(self, memory_id: str) -> list[str]:
        """The namespaces that hold a row or a history entry of ``memory_id`` (a memory asked for without its namespace)."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT user_id FROM memories WHERE id = ?", (memory_id,)).fetchall()
            if not rows:
                rows = self._db.execute("SELECT DISTINCT user_id FROM history WHERE memory_id = ?", (memory_id,)).fetchall()
        return sorted(r[0] for r in rows)

    def content_hashes(self, user_id: str, file: str) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute(
                "SELECT id, content_hash FROM memories WHERE user_id = ? AND file = ? AND is_active = 1",
                (user_id, file)).fetchall())

    def foreign_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        out: set[str] = set()
        with self._lock:
            for chunk in range(0, len(ids), 500):
                part = list(ids[chunk: chunk + 500])
                q = f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(part))}) AND user_id != ?"
                out.update(r[0] for r in self._db.execute(q, [*part, user_id]))
        return out

    def count(self, user_id: str, *, active_only: bool = True) -> int:
        q = "SELECT COUNT(*) FROM memories WHERE user_id = ?" + (" AND is_active = 1" if active_only else "")
        with self._lock:
            return int(self._db.execute(q, (user_id,)).fetchone()[0])

    def search_scope(self, user_id: str) -> AbstractContextManager[None]:
        """One search (``engine/read/search_scope.py``): the index's seq read once for its lookups."""
        return self._search.pinned()

    def keyword_search(self, user_id: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        uniq = list(dict.fromkeys(t for t in terms if t))
        if not uniq or limit <= 0:
            return []
        with self._lock:
            return self._search.keyword_index(user_id).search(uniq, limit)

    def vector_search(self, user_id: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        with self._lock:
            return self._search.matrix(user_id).search(vector, limit)

    def vector_search_many(self, user_id: str, vectors: np.ndarray, limit: int,
                           min_score: float | None = None) -> list[list[tuple[str, float]]]:
        with self._lock:
            return self._search.matrix(user_id).search_many(vectors, limit, min_score=min_score)

    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]:
        with self._lock:
            rows = self._db.execute(
                "SELECT memory_id, user_id, action, at, old_content, new_content, detail FROM history "
                "WHERE user_id = ? AND memory_id = ? ORDER BY n", (user_id, memory_id)).fetchall()
        return [history_from_row(r) for r in rows]

    def relations(self, user_id: str, memory_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT source_id, target_id, relation, strength, created_at FROM relations "
                "WHERE user_id = ? AND (source_id = ? OR target_id = ?)", (user_id, memory_id, memory_id)).fetchall()
        return [dict(zip(("source_id", "target_id", "relation", "strength", "created_at"), r)) for r in rows]

    def file_state(self, user_id: str, file: str) -> tuple[int, int] | None:
        with self._lock:
            row = self._db.execute("SELECT mtime_ns, size FROM files WHERE user_id = ? AND file = ?",
                                   (user_id, file)).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def file_states(self, user_id: str) -> dict[str, tuple[int, int]]:
        """Every file state of the namespace in one query (``UserStore.sync`` on each search)."""
        with self._lock:
            rows = self._db.execute("SELECT file, mtime_ns, size FROM files WHERE user_id = ?", (user_id,)).fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def user_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT DISTINCT user_id FROM memories ORDER BY user_id")]

    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None:
        with self._lock, self._tx():
            self._db.execute("INSERT OR REPLACE INTO state VALUES (?, ?, ?, ?, ?)",
                             (user_id, kind, key, json.dumps(value, ensure_ascii=False),
                              datetime.now(timezone.utc).isoformat()))

    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM state WHERE user_id = ? AND kind = ? AND key = ?",
                                   (user_id, kind, key)).fetchone()
        return json.loads(row[0]) if row else None

    def list_state(self, user_id: str, kind: str) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute(
                "SELECT key FROM state WHERE user_id = ? AND kind = ? ORDER BY key", (user_id, kind))]

    def delete_state(self, user_id: str, kind: str, key: str) -> None:
        with self._lock, self._tx():
            self._db.execute("DELETE FROM state WHERE user_id = ? AND kind = ? AND key = ?", (user_id, kind, key))

    def try_lease(self, user_id: str, name: str, holder: str, ttl: float) -> bool:
        with self._lock, self._tx():
            return leases.sqlite_try_lease(self._db, user_id, name, holder, ttl)

    def release_lease(self, user_id: str, name: str, holder: str) -> None:
        with self._lock, self._tx():
            leases.sqlite_release_lease(self._db, user_id, name, holder)

    def search_footprint(self) -> dict[str, dict[str, dict[str, int]]]:
        """Sizes of the in-process search structures of each namespace this process has loaded."""
        with self._lock:
            return self._search.footprint()
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._records.clear()
            self._search.save_snapshots()
            self._db.close()
