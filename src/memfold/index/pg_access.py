"""Access statistics of the PostgreSQL index written behind the search (``[index] access_delay_ms``).

Recording a search's accesses was a transaction of its own (the hits locked in id order, one
``UPDATE``, a log row, a commit): on a cached search most of its time. ``AccessQueue`` keeps them in
process instead, merged per row, and a background thread writes everything queued in one
transaction at most ``delay`` seconds later. Bounds: at most ``max_rows`` distinct rows and
``max_calls`` log entries wait; a search that finds the queue full writes it itself before
queueing (nothing is dropped). ``close`` writes what is left; a failed write keeps the batch for
the next attempt.

This process sees its own accesses at once: rows it reads get what is queued for them added
(``overlay``), the batch a flush is writing included until its COMMIT, which no read overlaps (a
read/write lock held by reads and by the flush around its COMMIT only): a read sees a batch in the
table or in the queue, never in both or neither. Other processes see them after the
flush, within ``delay``."""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..models import MemoryRecord

log = logging.getLogger("memfold.index")

MAX_ROWS = 10_000  # distinct rows whose accesses may wait
MAX_CALLS = 2_000  # access-log entries (one per search) that may wait


Writer = Callable[["Batch", Callable[[], AbstractContextManager[None]]], None]  # (batch, around its COMMIT)


@dataclass
class Batch:
    """Queued accesses: per (namespace, id) a count and the latest time, and the log's entries."""

    rows: dict[tuple[str, str], tuple[int, datetime]]
    calls: list[tuple[str, datetime, list[str]]]


class _RWLock:
    """Many readers or one writer; a waiting writer goes before new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class AccessQueue:
    """Accesses waiting to be written by ``write(batch)`` (one transaction), from a daemon thread."""

    def __init__(self, write: Writer, delay: float, *, max_rows: int = MAX_ROWS,
                 max_calls: int = MAX_CALLS):
        self._write = write
        self.delay = delay
        self.max_rows = max_rows
        self.max_calls = max_calls
        self._mu = threading.Lock()  # guards the queue
        self._flushing = threading.Lock()  # one flush at a time
        self._rw = _RWLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._closed = False
        self._failing = False
        self._batch = Batch({}, [])
        self._inflight: Batch | None = None  # the batch a flush is writing
        self._thread: threading.Thread | None = None
        ref = weakref.ref(self)  # a process that exits without closing the index still writes what waits

        def at_exit() -> None:
            q = ref()
            if q is not None:
                q._exit_flush()

        self._at_exit = at_exit
        atexit.register(self._at_exit)

    def _exit_flush(self) -> None:
        if not self._closed:
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - the process ends either way; the loss is named
                log.error("access statistics of %d rows not written at exit: %s", len(self), exc)

    def __len__(self) -> int:
        with self._mu:
            return len(self._batch.rows)

    def add(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        """Queue one search's accesses; write the queue first when it is full."""
        while True:
            with self._mu:
                b = self._batch
                new = sum(1 for i in set(ids) if (user_id, i) not in b.rows)
                if len(b.rows) + new <= self.max_rows and len(b.calls) < self.max_calls or not b.calls:
                    for i in ids:
                        b.rows[(user_id, i)] = (b.rows.get((user_id, i), (0, at))[0] + 1, at)  # as one UPDATE per search
                    b.calls.append((user_id, at, list(ids)))
                    break
            self.flush()  # full: the caller writes it (backpressure), then queues
        self._start()
        self._wake.set()

    def _start(self) -> None:
        if self._thread is None and not self._closed:
            with self._mu:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="memfold-access", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait()
            if self._closed:
                return
            self._wake.clear()
            # gather what more searches record within the delay, then write it all at once
            self._stop.wait(self.delay)
            try:
                self.flush()
            except Exception as exc:  # kept queued; the next add or close retries
                if not self._failing:
                    log.warning("access statistics could not be written (kept, retried): %s", exc)
                self._failing = True
                self._stop.wait(max(self.delay, 1.0))

    def flush(self) -> int:
        """Write everything queued now; returns how many rows' statistics were written. A failed
        write puts the batch back (merged with what was queued meanwhile) and raises."""
        with self._flushing:
            with self._mu:
                batch, self._batch = self._batch, Batch({}, [])
                self._inflight = batch  # still added to reads until its commit is visible
            if not batch.calls:
                self._inflight = None
                return 0
            try:
                self._write(batch, self._committing)
            except BaseException:
                with self._mu:
                    self._inflight = None
                    for key, (k, at) in self._batch.rows.items():  # queued meanwhile: later, its time wins
                        batch.rows[key] = (batch.rows.get(key, (0, at))[0] + k, at)
                    batch.calls.extend(self._batch.calls)
                    self._batch = batch
                raise
            self._failing = False
            return len(batch.rows)

    @contextmanager
    def _committing(self) -> Iterator[None]:
        """Around the flush's COMMIT only: no read runs while the batch becomes visible in the table,
        and it leaves the reads' overlay in the same moment (a commit that fails leaves it there)."""
        with self._rw.write():
            yield
            with self._mu:
                self._inflight = None

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Around a read of rows that ``overlay`` completes: no flush runs in between."""
        with self._rw.read():
            yield

    def overlay(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` (read inside ``reading``) with the accesses still queued for them."""
        with self._mu:
            queues = [b.rows for b in (self._inflight, self._batch) if b is not None and b.rows]
            if not queues:
                return records
            out = []
            for r in records:
                for rows in queues:  # the batch being written, then what was queued since
                    q = rows.get((r.user_id, r.id))
                    if q is not None:
                        r = replace(r, access_count=r.access_count + q[0], last_accessed_at=q[1])
                out.append(r)
            return out

    def overlay_stats(self, user_id: str, stats: dict[str, tuple[int, datetime | None]]
                      ) -> dict[str, tuple[int, datetime | None]]:
        """``stats`` (id -> access count, last access; read inside ``reading``) with the accesses still
        queued for them, as ``overlay`` adds them to records."""
        with self._mu:
            queues = [b.rows for b in (self._inflight, self._batch) if b is not None and b.rows]
            if not queues:
                return stats
            out = dict(stats)
            for mid, (count, at) in stats.items():
                for rows in queues:
                    q = rows.get((user_id, mid))
                    if q is not None:
                        count, at = count + q[0], q[1]
                out[mid] = (count, at)
            return out

    def close(self) -> None:
        """Stop the thread and write what is queued (a normal close loses nothing)."""
        self._closed = True
        atexit.unregister(self._at_exit)
        self._stop.set()
        self._wake.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=max(5.0, 2 * self.delay))
        self.flush()


def write_batch(cur: Any, batch: Batch) -> None:
    """The queued accesses in one transaction's statements: added to the rows' entries in
    ``memory_access`` (schema 6; in id order, so two writers never wait on each other in a cycle),
    for the rows that still exist; the log's entries. The memory rows themselves are not written."""
    keys = sorted(batch.rows, key=lambda k: (k[1], k[0]))
    cur.execute("INSERT INTO memory_access AS a (id, k, at) SELECT m.id, c.k, c.at "
                "FROM unnest(%s::text[], %s::text[], %s::int[], %s::timestamptz[]) WITH ORDINALITY AS c(u, id, k, at, o) "
                "JOIN user_memories m ON m.id = c.id AND m.user_id = c.u ORDER BY c.o "
                "ON CONFLICT (id) DO UPDATE SET k = a.k + EXCLUDED.k, at = greatest(a.at, EXCLUDED.at)",
                ([u for u, _ in keys], [i for _, i in keys], [batch.rows[k][0] for k in keys],
                 [batch.rows[k][1] for k in keys]))
    cur.executemany("INSERT INTO memory_access_log (user_id, at, ids) VALUES (%s, %s, %s)", batch.calls)


class PgAccess:
    """``record_access`` of ``PostgresIndex`` (a mixin): queued when ``options.access_delay_ms`` > 0,
    else written inside the call; with the hooks its reads and writes use."""

    if TYPE_CHECKING:  # provided by PostgresIndex
        _access: AccessQueue | None

        def _cur(self, write: bool = False) -> AbstractContextManager[Any]: ...

    def _write_access(self, batch: Batch, committing: Callable[[], AbstractContextManager[None]] = nullcontext
                      ) -> None:
        """One transaction; its COMMIT inside ``committing()`` (reads wait only for that). Statistics, not
        memories: the commit does not wait for the WAL flush (a server crash may lose the last ones)."""
        with self._cur() as cur:
            cur.execute("BEGIN")
            try:
                cur.execute("SET LOCAL synchronous_commit = off")
                write_batch(cur, batch)
            except BaseException:
                with suppress(Exception):  # a broken connection: the pool replaces it
                    cur.execute("ROLLBACK")
                raise
            with committing():
                cur.execute("COMMIT")

    def record_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        if not ids:
            return
        if self._access is not None:
            self._access.add(user_id, ids, at)
            return
        self._write_access(Batch({(user_id, i): (ids.count(i), at) for i in ids}, [(user_id, at, list(ids))]))

    def flush_access(self) -> int:
        """Write the queued access statistics now (reads that rank by them and every row write call this)."""
        return self._access.flush() if self._access is not None else 0

    def _reading(self) -> AbstractContextManager[None]:
        return self._access.reading() if self._access is not None else nullcontext()

    def _overlay(self, records: list[MemoryRecord]) -> list[MemoryRecord]:
        return self._access.overlay(records) if self._access is not None else records

    def _overlay_stats(self, user_id: str, stats: dict[str, tuple[int, datetime | None]]
                       ) -> dict[str, tuple[int, datetime | None]]:
        return self._access.overlay_stats(user_id, stats) if self._access is not None else stats
