"""The SQLite index's transactions (``BEGIN IMMEDIATE`` … ``COMMIT``, re-entrant within one index
object) and its errors in words a user can act on."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MemoryIndexError

if TYPE_CHECKING:
    from .sqlite import SqliteIndex


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


def _unpin(ix: "SqliteIndex") -> None:
    search = getattr(ix, "_search", None)  # not yet while the index opens
    if search is not None:
        search.unpin()


class _Tx:
    """BEGIN IMMEDIATE … COMMIT, re-entrant within one index object."""

    def __init__(self, index: "SqliteIndex"):
        self.index = index

    def __enter__(self) -> None:
        ix = self.index
        if ix.read_only:
            ix._refuse_write()
        ix._lock.acquire()
        depth = getattr(ix, "_tx_depth", 0)
        if depth == 0:
            ix._writes = getattr(ix, "_writes", 0) + 1  # before anything is written: kept reads are stale
            _unpin(ix)
            try:
                ix._db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                ix._lock.release()
                raise MemoryIndexError(f"cannot write index {ix.path}: {_reason(exc)}") from exc
            except BaseException:
                ix._lock.release()
                raise
        ix._tx_depth = depth + 1

    def __exit__(self, exc_type: object, exc: BaseException | None, _tb: object) -> None:
        ix = self.index
        ix._tx_depth -= 1
        try:
            if ix._tx_depth == 0:
                _unpin(ix)  # the seq a search of this thread read inside the transaction: read again
                if exc_type is None:
                    try:
                        ix._db.execute("COMMIT")
                    except sqlite3.DatabaseError as failed:
                        _rollback(ix._db)
                        raise MemoryIndexError(f"cannot write index {ix.path}: {_reason(failed)}") from failed
                else:
                    _rollback(ix._db)
                    if isinstance(exc, sqlite3.DatabaseError):
                        raise MemoryIndexError(f"cannot write index {ix.path}: {_reason(exc)}") from exc
        finally:
            ix._lock.release()
