"""Atomic file writes and inter-process locks."""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
import threading
from pathlib import Path

from ..errors import ReadOnlyWorkspaceError


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never a torn one:
    temp file in the same folder, fsync, rename, fsync of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class FileLock:
    """An exclusive lock held by one thread of one process at a time (flock + a thread lock).

    Re-entrant within a thread, so engine code can nest locked sections."""

    _thread_locks: dict[str, threading.RLock] = {}
    _guard = threading.Lock()

    def __init__(self, path: Path):
        self.path = path
        with FileLock._guard:
            self._tlock = FileLock._thread_locks.setdefault(str(path), threading.RLock())
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> "FileLock":
        self._tlock.acquire()
        if self._depth == 0:
            try:
                fd = self._open()
            except BaseException:
                self._tlock.release()
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                self._tlock.release()
                raise
            self._fd = fd
        self._depth += 1
        return self

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
                raise ReadOnlyWorkspaceError(f"cannot write in {self.path.parent}: the workspace is read-only "
                                             "for this process") from None
            raise

    def acquire_nowait(self) -> bool:
        """Take the lock only if no other thread or process holds it; True when taken (then
        release it with ``__exit__``)."""
        if not self._tlock.acquire(blocking=False):
            return False
        if self._depth == 0:
            try:
                fd = self._open()
            except BaseException:
                self._tlock.release()
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                self._tlock.release()
                return False
            except BaseException:
                os.close(fd)
                self._tlock.release()
                raise
            self._fd = fd
        self._depth += 1
        return True

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        self._tlock.release()
