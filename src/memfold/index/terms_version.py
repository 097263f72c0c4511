"""Keyword terms stored by an older ``text.terms`` (``TERMS_VERSION``): rebuilt once from the
stored text when the index is opened.

Both indexes keep the version their terms were made with (SQLite: the ``meta`` table; PostgreSQL:
``memfold_meta``), key ``terms_version``; an index without it predates versioning (version 1). An
older one has every keyword-searchable row's terms made again from its context and content in one
transaction, under the lock that already serialises opening (SQLite: the ``.init.lock`` file;
PostgreSQL: an advisory lock), so that of two processes opening at once one rebuilds and the other
finds the new version. The rewritten rows take a new change counter value: the in-process keyword
indexes (and their snapshots) and the query caches of every process see them as changed. Archived
rows (terms NULL) stay out of keyword search. A read-only workspace cannot be rebuilt: it is
searched with a warning. An index made by a newer memfold is left as it is (with a warning)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..text.terms import TERMS_VERSION, fts_document, keyword_text
from . import snapshot

log = logging.getLogger("memfold")

KEY = "terms_version"
BATCH = 2000  # rows re-made per statement
PROGRESS_MIN = 5000  # rows from which the rebuild reports its progress on stderr
_PG_LOCK_KEY = 0x6D656D74  # pg_advisory_xact_lock key of the rebuild ("memt")


def _stored(value: Any) -> int:
    return int(value) if value is not None else 1


def _progress(done: int, total: int, where: str) -> None:
    if total >= PROGRESS_MIN:
        sys.stderr.write(f"memfold: rebuilding the keyword terms of {where} (new word stemming): {done}/{total}\n")
        sys.stderr.flush()


def _warn_newer(version: int, where: str) -> None:
    log.warning("the keyword terms of %s were made by a newer memfold (terms version %d, this one makes %d): "
                "keyword search may miss; upgrade memfold", where, version, TERMS_VERSION)


def _documents(rows: Iterable[tuple[Any, str, str]]) -> list[tuple[Any, str]]:
    return [(key, fts_document(keyword_text(content, context))) for key, content, context in rows]


def refresh_sqlite(db: Any, path: Path) -> int:
    """Inside the caller's write transaction (and its open lock): rebuild the terms of an index made
    with older ones. Returns the number of rows rebuilt."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
    version = _stored(row[0] if row else None)  # a new index has no rows: nothing to rebuild
    if version > TERMS_VERSION:
        _warn_newer(version, str(path))
        return 0
    n = 0
    if version < TERMS_VERSION:
        rowids = [r[0] for r in db.execute("SELECT rowid FROM memories WHERE terms IS NOT NULL ORDER BY rowid")]
        if rowids:
            seq = int(db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'seq' "
                                 "RETURNING value").fetchone()[0])
            for start in range(0, len(rowids), BATCH):
                part = rowids[start: start + BATCH]
                rows = db.execute(f"SELECT rowid, content, context FROM memories WHERE rowid IN "
                                  f"({','.join('?' * len(part))})", part).fetchall()
                db.executemany("UPDATE memories SET terms = ?, seq = ? WHERE rowid = ?",
                               [(doc, seq, key) for key, doc in _documents(rows)])
                n += len(part)
                _progress(n, len(rowids), str(path))
            log.info("rebuilt the keyword terms of %d memories in %s (terms version %d -> %d)",
                     n, path, version, TERMS_VERSION)
    if version != TERMS_VERSION:  # an index at the current version is only read at open
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (KEY, str(TERMS_VERSION)))
    if n:  # snapshots of the search structures hold the old terms: built again from the rows
        for old in snapshot.cache_dir(path).glob("*.npz"):
            old.unlink(missing_ok=True)
    return n


def check_read_only(db: Any, path: Path) -> None:
    """A read-only index cannot be rebuilt: say so when its terms are older."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
    version = _stored(row[0] if row else None)
    if version < TERMS_VERSION:
        log.warning("the keyword terms of %s are of an older memfold (terms version %d, this one makes %d) and the "
                    "workspace is read-only: keyword search may miss inflected words until memfold opens it "
                    "where it may write", path, version, TERMS_VERSION)
    elif version > TERMS_VERSION:
        _warn_newer(version, str(path))


_PG_UPDATE = ("UPDATE user_memories AS u SET terms = CASE WHEN v.t = '' THEN '{}'::text[] "
              "ELSE string_to_array(v.t, ' ') END, seq = v.s "
              "FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS v(id, t, s) WHERE u.id = v.id")


def refresh_postgres(conn: Any, where: str) -> int:
    """On an autocommit connection: rebuild, in one transaction under an advisory lock, the terms of
    a database made with older ones. Returns the number of rows rebuilt."""
    from .pg_search import bump

    with conn.cursor() as cur:  # the usual case, terms already current: one read, no lock taken
        cur.execute("SELECT value FROM memfold_meta WHERE key = %s", (KEY,))
        current = cur.fetchone()
    if current is not None and int(current[0]) == TERMS_VERSION:
        return 0
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK_KEY,))
        cur.execute("SELECT value FROM memfold_meta WHERE key = %s", (KEY,))
        row = cur.fetchone()
        if row is not None and int(row[0]) > TERMS_VERSION:
            _warn_newer(int(row[0]), where)
            return 0
        n = 0
        if row is None or int(row[0]) < TERMS_VERSION:
            cur.execute("SELECT DISTINCT user_id FROM user_memories WHERE terms IS NOT NULL")
            seqs = bump(cur, [r[0] for r in cur.fetchall()])
            cur.execute("SELECT count(*) FROM user_memories WHERE terms IS NOT NULL")
            total, last = int(cur.fetchone()[0]), -1
            while True:
                cur.execute("SELECT n, id, user_id, content, context FROM user_memories WHERE terms IS NOT NULL "
                            "AND n > %s ORDER BY n LIMIT %s", (last, BATCH))
                rows = cur.fetchall()
                if not rows:
                    break
                last = rows[-1][0]
                docs = _documents((r[1], r[3], r[4]) for r in rows)
                cur.execute(_PG_UPDATE, ([d[0] for d in docs], [d[1] for d in docs], [seqs[r[2]] for r in rows]))
                n += len(rows)
                _progress(n, total, where)
            if n:
                log.info("rebuilt the keyword terms of %d memories in the PostgreSQL index at %s (terms version "
                         "%s -> %d)", n, where, row[0] if row else 1, TERMS_VERSION)
            cur.execute("INSERT INTO memfold_meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = "
                        "EXCLUDED.value", (KEY, str(TERMS_VERSION)))
        return n
