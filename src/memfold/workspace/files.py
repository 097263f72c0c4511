"""Atomic file writes and inter-process locks."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import sys
import tempfile
import threading
from collections.abc import Callable
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


def _renameat2():  # type: ignore[no-untyped-def]
    """libc's renameat2 (Linux), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names in one step; False where the system or file system cannot."""
    global _RENAMEAT2
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM):
        _RENAMEAT2 = None  # not supported here: fall back to check-then-rename from now on
        return False
    raise OSError(err, os.strerror(err), str(b))


class ChangedMeanwhile(Exception):
    """``atomic_swap``'s ``unchanged`` check failed: nothing was written."""


def atomic_swap(path: Path, text: str | bytes, read_old: Callable[[Path], str],
                unchanged: Callable[[], bool] | None = None) -> tuple[str | None, os.stat_result]:
    """Put ``text`` (or its UTF-8 bytes) at ``path`` atomically (temp file, fsync, rename) and return what it replaced,
    read with ``read_old`` after the swap (None when there was no file), and the ``stat`` of the
    new file as written (a later save by someone else changes what ``path`` stats to).

    On Linux the new file and the old one trade names in one step (``renameat2`` with
    ``RENAME_EXCHANGE``): whatever another program saved at ``path`` up to that instant, by
    renaming or by writing in place, is in the returned text, so the caller can merge it instead
    of losing it. Elsewhere the old text is read just before the rename, which leaves a window
    of a few microseconds in which another program's save is overwritten unseen.

    ``unchanged``, when given, is asked once the new file is on disk, just before the swap; when it
    says False nothing is replaced and ``ChangedMeanwhile`` is raised."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
            written = os.fstat(fh.fileno())
        old = None
        if unchanged is not None and not unchanged():
            raise ChangedMeanwhile(str(path))
        try:
            os.link(tmp, path)  # no file yet: create it, failing if someone just did
        except FileExistsError:
            if _exchange(tmp, path):
                old = read_old(tmp)
            else:
                old = read_old(path)
                os.replace(tmp, path)
        except OSError:  # a file system without hard links
            if path.exists():
                old = read_old(path)
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return old, written


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
        self._acquire(blocking=True)
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
        return self._acquire(blocking=False)

    def _acquire(self, blocking: bool) -> bool:
        if not self._tlock.acquire(blocking=blocking):
            return False
        if self._depth == 0:
            try:
                fd = self._open()
            except BaseException:
                self._tlock.release()
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
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
