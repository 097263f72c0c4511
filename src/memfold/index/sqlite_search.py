"""The SQLite index's in-process search structures: per namespace one ``VectorMatrix`` and one
``KeywordIndex``, started from a snapshot when there is a usable one, brought up to date from the
index's change counter (rows whose ``seq`` is newer, plus tombstones), and snapshotted at close.
The caller (``SqliteIndex``) holds its lock around every call."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from . import snapshot
from .keywords import KeywordIndex
from .vectors import VectorMatrix

log = logging.getLogger(__name__)


class SearchStructures:
    def __init__(self, db: sqlite3.Connection, index_path: Path, instance: str, dim: int, exact_max: int):
        self.db, self.index_path, self.instance = db, index_path, instance
        self.dim, self.exact_max = dim, exact_max
        self.matrices: dict[str, VectorMatrix] = {}
        self.keywords: dict[str, KeywordIndex] = {}
        self.snapshot_seq: dict[str, int | None] = {}  # seq of the snapshot a namespace started from
        self._pin = threading.local()  # this thread's search (``pinned``): the seq it read first
        snapshot.remove_leftovers(snapshot.cache_dir(index_path))

    def current_seq(self) -> int:
        pin = self._pin.__dict__
        seq = pin.get("seq")
        if seq is None:
            seq = int(self.db.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])
            if pin.get("on"):
                pin["seq"] = seq
        return seq

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """One search on this thread: the index's seq is read once, at its first lookup, and serves its
        later ones (a search answers as the index stood when it began, as ``CachedIndex.pinned`` does;
        a write transaction of this thread reads it again: ``unpin``)."""
        pin = self._pin.__dict__
        if pin.get("on"):  # nested: the outer search stands
            yield
            return
        pin["on"] = True
        try:
            yield
        finally:
            pin.clear()

    def unpin(self) -> None:
        """This thread writes: its search reads the seq again at its next lookup."""
        self._pin.__dict__.pop("seq", None)

    def matrix(self, user_id: str) -> VectorMatrix:
        """The namespace's vectors, brought up to date with changes from any process."""
        self._open(user_id)
        m = self.matrices[user_id]

        def add(ids: list[str], blobs: list[bytes]) -> None:
            m.upsert(ids, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), self.dim))

        self._catch_up(user_id, m, "CASE WHEN is_active THEN embedding END", add)
        return m

    def keyword_index(self, user_id: str) -> KeywordIndex:
        """The namespace's keyword terms (NULL: not searchable), brought up to date like ``matrix``."""
        self._open(user_id)
        k = self.keywords[user_id]
        self._catch_up(user_id, k, "terms", k.upsert)
        return k

    def _open(self, user_id: str) -> None:
        """Start a namespace from its snapshot when there is a usable one, else empty."""
        if user_id in self.matrices:
            return
        got = snapshot.load(snapshot.path_for(self.index_path, user_id), instance=self.instance,
                            seq_now=self.current_seq(), user_id=user_id, dim=self.dim, exact_max=self.exact_max)
        if got is None:
            m, k, self.snapshot_seq[user_id] = VectorMatrix(self.dim, self.exact_max), KeywordIndex(), None
        else:
            seq, m, k = got
            m.seq = k.seq = self.snapshot_seq[user_id] = seq
        self.matrices[user_id], self.keywords[user_id] = m, k

    def _catch_up(self, user_id: str, struct: VectorMatrix | KeywordIndex, column: str,
                  add: Callable[[list[str], list[Any]], None]) -> None:
        """Apply the rows changed since ``struct.seq``: tombstoned ids and rows whose ``column`` is
        NULL leave it, the others are (re)placed with their value."""
        seq = self.current_seq()
        if struct.seq == seq or (struct.seq > seq and "seq" in self._pin.__dict__):  # newer than the pin: as is
            return
        rows = self.db.execute(f"SELECT id, {column} FROM memories WHERE user_id = ? AND seq > ?",
                               (user_id, struct.seq)).fetchall()
        gone = [r[0] for r in self.db.execute("SELECT id FROM tombstones WHERE user_id = ? AND seq > ?",
                                              (user_id, struct.seq))]
        struct.remove(gone + [r[0] for r in rows if r[1] is None])
        live = [r for r in rows if r[1] is not None]
        if live:
            add([r[0] for r in live], [r[1] for r in live])
        struct.seq = seq

    def footprint(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per loaded namespace, the sizes of its structures (``vectors``, ``keywords``), caught up first."""
        return {u: {"vectors": self.matrix(u).footprint(), "keywords": self.keyword_index(u).footprint()}
                for u in list(self.matrices)}
    def drop_snapshot(self, user_id: str) -> None:
        """Delete the namespace's snapshot (rows were deleted: it still holds their vectors and words).
        When this process has the namespace loaded, a fresh snapshot is cut at close, from the
        caught-up structures, which hold neither."""
        snapshot.path_for(self.index_path, user_id).unlink(missing_ok=True)
        if user_id in self.snapshot_seq:
            self.snapshot_seq[user_id] = None

    def save_snapshots(self) -> None:
        """Cut a snapshot of each namespace this process loaded that is big enough and has changed by
        a tenth (at least 1000 rows) since its last snapshot. Never raises: it is a cache."""
        for user_id in list(self.matrices):
            try:
                self.db.execute("BEGIN")  # one read snapshot: both structures at the same seq
                try:
                    since = self.snapshot_seq.get(user_id)
                    live = int(self.db.execute("SELECT COUNT(*) FROM memories WHERE user_id = ? AND is_active = 1",
                                               (user_id,)).fetchone()[0])
                    changed = live if since is None else self.db.execute(
                        "SELECT (SELECT count(*) FROM memories WHERE user_id = ? AND seq > ?) + "
                        "(SELECT count(*) FROM tombstones WHERE user_id = ? AND seq > ?)",
                        (user_id, since, user_id, since)).fetchone()[0]
                    if live < snapshot.MIN_ROWS or changed < max(1000, live // 10):
                        continue
                    m, k = self.matrix(user_id), self.keyword_index(user_id)
                finally:
                    self.db.execute("COMMIT")
                snapshot.save(snapshot.path_for(self.index_path, user_id), instance=self.instance, seq=m.seq,
                              user_id=user_id, vectors=m, keywords=k)
                self.snapshot_seq[user_id] = m.seq
            except Exception as exc:  # noqa: BLE001 - a cache: never fail a close for it
                log.warning("could not write the search snapshot of %s: %s", user_id, exc)


class SqliteTermReads:
    """What the read path asks of the SQLite index's keyword terms, answered from memory (a mixin)."""

    _lock: Any  # a threading.RLock
    _search: SearchStructures

    def terms_held(self, user_id: str, ids: Sequence[str], terms: Sequence[str]) -> dict[str, int]:
        """How many of the distinct ``terms`` each keyword-searchable row of ``ids`` holds (others: left out)."""
        with self._lock:
            return self._search.keyword_index(user_id).terms_held(ids, terms)

    def doc_terms(self, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """The keyword terms (with counts) of each keyword-searchable row of ``ids`` (others: left out)."""
        with self._lock:
            return self._search.keyword_index(user_id).doc_terms(ids)
