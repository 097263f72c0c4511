"""One search on the PostgreSQL index in as few round trips as the answer allows (``search_scope``).

A search asks the index for keyword candidates, vector candidates, the rows of the best fused ones
(keyword feedback, ``engine/read/rank_keywords.py``), a second keyword search, then the rows of every
candidate: five round trips after the sync's, each a few hundred microseconds of loopback and
scheduling. Inside ``search_scope(user_id)`` (the read path opens one per search, on its thread):

- every candidate id the searches return is noted; the nearest-rows query also returns the rows of
  its hits and of the keyword candidates noted before it (one statement), and a ``get`` of rows not
  yet read reads them with every noted candidate not yet read: what follows asks for them;
- a ``get`` answers from the rows read in the scope (with the queued access statistics as they
  were when read, ``pg_access``);
- the namespace's keyword counter read with the files' states (``file_states``) serves every keyword
  search of the scope, as the change counter serves a cache's lookups (``CachedIndex.search_scope``).

So a search is the sync's round trip, the nearest rows with the candidates' rows, and (with keyword
feedback) the rows of the feedback's new candidates. The scope ends with the search: outside it
every call reads the table. A write of this process inside it forgets what the scope read."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..models import MemoryRecord
from .pg_rows_mixin import _COL_LIST, _N
from .rows import record_from_row, timestamp

# ``structured_data`` as its text: rows repeat a few short objects, decoded once each (``rows._flat_json``)
# instead of by the driver row by row
_SEL_COLS = ", ".join(f"{c}::text" if c == "structured_data" else c for c in _COL_LIST)
_M_COLS = ", ".join(f"m.{c}::text" if c == "structured_data" else f"m.{c}" for c in _COL_LIST)
# the nearest rows (HNSW) with their rows and those of the noted candidates, in one statement
_NEAREST_ROWS = (
    "WITH v AS MATERIALIZED (SELECT id, s, row_number() OVER () AS r FROM (SELECT id, 1 - (embedding <=> %(v)s) AS s "
    "FROM user_memories WHERE user_id = %(user)s AND is_active AND embedding IS NOT NULL "
    "ORDER BY embedding <=> %(v)s LIMIT %(limit)s) x), "
    "w AS (SELECT id FROM v UNION SELECT unnest(%(more)s::text[])) "
    f"SELECT v.r, v.s, {_M_COLS}{{terms}} FROM w JOIN memory_rows m ON m.id = w.id AND m.user_id = %(user)s "
    "LEFT JOIN v ON v.id = w.id")


class Scope:
    """What one search on one thread has read and noted."""

    __slots__ = ("user_id", "rows", "noted", "seq", "terms")

    def __init__(self, user_id: str):
        self.user_id = user_id
        self.rows: dict[str, MemoryRecord | None] = {}  # id -> its row as read (None: not in the namespace)
        self.noted: dict[str, None] = {}  # candidate ids not read yet, in the order noted
        self.seq: tuple[int, int] | None = None  # the keyword counter (seq, floor) the scope searches at
        self.terms: dict[str, frozenset[str]] = {}  # id -> its stored keyword terms (keyword-searchable rows)

    def note(self, ids: Sequence[str]) -> None:
        for i in ids:
            if i not in self.rows:
                self.noted[i] = None

    def keep(self, records: Sequence[MemoryRecord], asked: Sequence[str]) -> None:
        for r in records:
            self.rows[r.id] = r
            self.noted.pop(r.id, None)
        for i in asked:
            self.rows.setdefault(i, None)
            self.noted.pop(i, None)

    def forget(self) -> None:
        self.rows.clear()
        self.noted.clear()
        self.terms.clear()
        self.seq = None


class PgSearchScope:
    """``search_scope``, ``get`` and the scope's side of the searches (a mixin of ``PostgresIndex``)."""

    if TYPE_CHECKING:  # provided by PostgresIndex
        _psycopg: Any
        _keywords: Any
        where: str

        def _cur(self, write: bool = False) -> AbstractContextManager[Any]: ...

        def _reading(self) -> AbstractContextManager[None]: ...

        def _overlay(self, records: list[MemoryRecord]) -> list[MemoryRecord]: ...

        def _overlay_stats(self, user_id: str, stats: dict[str, tuple[int, datetime | None]]
                           ) -> dict[str, tuple[int, datetime | None]]: ...

        def _take_seq(self, user_id: str) -> tuple[int, int] | None: ...

    _scopes: threading.local  # this index's scope per thread (set by PostgresIndex.__init__)

    @contextmanager
    def search_scope(self, user_id: str) -> Iterator[None]:
        """Within the block, this thread's reads of ``user_id`` are those of one search (module doc)."""
        if getattr(self._scopes, "scope", None) is not None:  # nested: the outer scope stands
            yield
            return
        self._scopes.scope = Scope(user_id)
        try:
            yield
        finally:
            self._scopes.scope = None

    def _scope(self, user_id: str) -> Scope | None:
        s = getattr(self._scopes, "scope", None)
        return s if s is not None and s.user_id == user_id else None

    def _forget_scope(self) -> None:
        """A write of this process: what the scope read may have changed."""
        s = getattr(self._scopes, "scope", None)
        if s is not None:
            s.forget()

    def expect_rows(self, user_id: str, ids: Sequence[str]) -> None:
        """Candidates whose rows the search will ask for (a cache answered the search that found them)."""
        s = self._scope(user_id)
        if s is not None:
            s.note(ids)

    def _seq_of_scope(self, user_id: str) -> tuple[int, int] | None:
        """The keyword counter a keyword search uses: the scope's, once read with the files' states."""
        s = self._scope(user_id)
        if s is None:
            return self._take_seq(user_id)
        if s.seq is None:
            s.seq = self._take_seq(user_id)
        return s.seq

    def get(self, user_id: str, ids: Sequence[str]) -> list[MemoryRecord]:
        if not ids:
            return []
        s = self._scope(user_id)
        if s is None:
            out = {r.id: r for r in self._read_rows(user_id, ids)}
            return [out[i] for i in ids if i in out]
        missing = [i for i in dict.fromkeys(ids) if i not in s.rows]
        if missing:  # with every candidate noted and not read yet: what follows asks for them
            asked = list(dict.fromkeys(missing + list(s.noted)))
            s.keep(self._read_rows(user_id, asked, s if self._wants_terms(user_id) else None), asked)
        return [r for r in (s.rows.get(i) for i in ids) if r is not None]

    def _read_rows(self, user_id: str, ids: Sequence[str], s: Scope | None = None) -> list[MemoryRecord]:
        """The rows of ``ids``; in a scope ``s`` with their stored keyword terms (for ``terms_held``)."""
        with self._cur() as cur, self._reading():  # the connection first: a flush holds one while it waits
            cur.execute(f"SELECT {_SEL_COLS}{', terms' if s is not None else ''} FROM memory_rows "
                        "WHERE user_id = %s AND id = ANY(%s)", (user_id, list(ids)))
            got = cur.fetchall()
            records = self._overlay([record_from_row(r[:_N]) for r in got])
        if s is not None:
            s.terms.update((r[0], frozenset(r[_N])) for r in got if r[_N] is not None)
        return records

    def access_stats(self, user_id: str, ids: Sequence[str]) -> dict[str, tuple[int, datetime | None]]:
        """id -> (access count, last access) of the rows of ``ids`` in the namespace, as ``get`` would
        read them (with this process's queued accesses), without the rest of the rows: a prepared
        search answer (``cache/answers.py``) needs nothing else to score its candidates again."""
        if not ids:
            return {}
        with self._cur() as cur, self._reading():
            cur.execute("SELECT id, access_count, last_accessed_at FROM memory_rows WHERE user_id = %s "
                        "AND id = ANY(%s)", (user_id, list(ids)))
            return self._overlay_stats(user_id, {r[0]: (int(r[1]), timestamp(r[2])) for r in cur.fetchall()})

    def _wants_terms(self, user_id: str) -> bool:
        """Read the rows' stored terms too: this process holds no keyword index of the namespace (its
        searches were answered by a shared cache), which ``terms_held`` would otherwise use."""
        return not self._keywords.holds(user_id)

    def _nearest_in_scope(self, s: Scope, user_id: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """The nearest rows, and the rows of them and of the noted candidates, in one statement."""
        more = [i for i in s.noted if i not in s.rows]
        with_terms = self._wants_terms(user_id)
        with self._cur() as cur, self._reading():
            cur.execute(_NEAREST_ROWS.format(terms=", m.terms" if with_terms else ""),
                        {"v": vector, "user": user_id, "limit": limit, "more": more})
            got = cur.fetchall()
            records = self._overlay([record_from_row(r[2: 2 + _N]) for r in got])
        if with_terms:
            s.terms.update((r[2], frozenset(r[2 + _N])) for r in got if r[2 + _N] is not None)
        hits = sorted((int(r[0]), r[2], float(r[1])) for r in got if r[0] is not None)
        s.keep(records, more)
        return [(mid, score) for _, mid, score in hits]

    def doc_terms(self, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """The keyword terms (with counts) of the rows of ``ids`` this process's keyword index of the
        namespace holds as the search left it (others: left out, the caller tokenises their text), as
        the SQLite index answers the keyword feedback (``engine/read/rank_keywords.py``)."""
        return self._keywords.doc_terms(user_id, ids)  # type: ignore[no-any-return]

    def terms_held(self, user_id: str, ids: Sequence[str], terms: Sequence[str]) -> dict[str, int]:
        """How many of the distinct ``terms`` each of ``ids`` holds: from this process's keyword index of
        the namespace as the search left it, else from the stored terms the search's scope read with the
        rows (rows neither holds: left out, the caller tokenises)."""
        s = self._scope(user_id)
        out = self._keywords.terms_held(user_id, [i for i in ids if s is None or i not in s.terms], terms)
        if s is not None:
            wanted = set(terms)
            out.update((i, len(wanted & s.terms[i])) for i in ids if i in s.terms)
        return out
