"""The SQLite index's transactions (``SqliteTransactions``: ``BEGIN IMMEDIATE`` … ``COMMIT``,
re-entrant within one index object, with the state the index reads of them) and its errors in
words a user can act on."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import MemoryIndexError, ReadOnlyWorkspaceError


def _rollback(db: sqlite3.Connection) -> None:
    """Undo the open transaction, if SQLite has not already (it does after a full disk)."""
    if db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.DatabaseError:
            pass


def _reason(exc: sqlite3.DatabaseError) -> str:
    """An SQLite error in words a user can act on. Never advice to delete the index: episodic turns,
    history and sessions live only there."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in text:
        return ("the disk is full; nothing of this change was stored (the Markdown files are unchanged). "
                "Free some space and try again")
    if "readonly" in text or "read-only" in text:
        return f"{text} (the workspace is read-only for this process)"
    if "not a database" in text or "malformed" in text:
        return (f"{text}. The Markdown files are not affected; keep this file (episodic turns, history and "
                "sessions live only in it) and restore it from a backup if you have one")
    return text


def _read_only(path: Path) -> bool:
    """Whether this process may not write the index: its folder (lock and WAL files live there) or
    the file itself is not writable."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK))


class SqliteTransactions:
    """The write transactions of one ``SqliteIndex`` on its connection: ``BEGIN IMMEDIATE`` …
    ``COMMIT``, re-entrant within the index object (``begin()`` inside an open one joins it), under
    the index's lock. It owns what the index reads of them: ``depth`` (open transactions of this
    object: its reads inside one may be rolled back, so no cache keeps them) and ``writes`` (write
    transactions begun: part of the record cache's token). ``on_boundary`` is called as the
    outermost transaction begins and ends (the search structures read their seq again)."""

    def __init__(self, db: sqlite3.Connection, path: Path, lock: Any, *, read_only: bool = False):
        self.db = db
        self.path = path
        self.lock = lock  # the index's threading.RLock
        self.read_only = read_only
        self.depth = 0
        self.writes = 0
        self.on_boundary: Callable[[], None] | None = None  # set once the search structures exist

    def begin(self) -> "SqliteTransactions":
        """One transaction: ``with transactions.begin(): ...``; all or none of its writes are kept.
        The object is its own context manager (it holds no state per block: the depth counts them)."""
        return self

    def refuse_write(self) -> None:
        """Every write of a read-only index raises this."""
        raise ReadOnlyWorkspaceError(f"the workspace {self.path.parent} is read-only: nothing can be written to it")

    def _boundary(self) -> None:
        if self.on_boundary is not None:
            self.on_boundary()

    def __enter__(self) -> None:
        if self.read_only:
            self.refuse_write()
        self.lock.acquire()
        if self.depth == 0:
            self.writes += 1  # before anything is written: kept reads are stale
            self._boundary()
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                self.lock.release()
                raise MemoryIndexError(f"cannot write index {self.path}: {_reason(exc)}") from exc
            except BaseException:
                self.lock.release()
                raise
        self.depth += 1

    def __exit__(self, exc_type: object, exc: BaseException | None, _tb: object) -> None:
        self.depth -= 1
        try:
            if self.depth == 0:
                self._boundary()  # the seq a search of this thread read inside the transaction: read again
                if exc_type is None:
                    try:
                        self.db.execute("COMMIT")
                    except sqlite3.DatabaseError as err:
                        _rollback(self.db)
                        raise MemoryIndexError(f"cannot write index {self.path}: {_reason(err)}") from err
                else:
                    _rollback(self.db)
                    if isinstance(exc, sqlite3.DatabaseError):
                        raise MemoryIndexError(f"cannot write index {self.path}: {_reason(exc)}") from exc
        finally:
            self.lock.release()

