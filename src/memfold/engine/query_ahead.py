"""The query's vector computed on a worker thread while the search does its keyword side.

A search first needs two independent things: the query's vector (the bundled model's forward pass,
~2 ms of numpy work that releases the GIL) and its keyword candidates (query terms, BM25, reading the
candidates' rows: a few tenths of a millisecond of Python and SQLite). ``embed_ahead`` starts the
first on one worker thread and returns at once; the caller does the second, then takes the vector
with ``result()``. ``[embedder] query_ahead`` turns it on (off by default): on the 2-core machine of
its measurements, shared with other processes, no core was free for the worker and a search cost
~0.3 ms more CPU with it (docs/benchmarks.md, "session 5"); the handoff itself is ~10 µs.

Bounds: one worker thread per process, created on first use and reused by every search of every
``Memory``; it holds at most one query at a time. A search that finds it busy (another thread's
search is using it) embeds its query on its own thread, as before: nothing queues behind another
search's model pass. After a ``fork`` the child makes its own worker (the parent's thread does not
exist there). The worker's result is the very same call the caller would have made
(``query_vector``): the same vector to the bit (the model runs its BLAS on one thread either way)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Slot:
    """One job handed to the worker, and what came of it."""

    __slots__ = ("job", "done", "value", "error")

    def __init__(self, job: Callable[[], Any]):
        self.job = job
        self.done = threading.Lock()
        self.done.acquire()  # released by the worker when the job has run
        self.value: Any = None
        self.error: BaseException | None = None


class Ahead(Generic[T]):
    """A value being computed on the worker, or to be computed by the caller when it asks for it."""

    __slots__ = ("_slot", "_job")

    def __init__(self, slot: _Slot | None = None, job: Callable[[], T] | None = None):
        self._slot = slot
        self._job = job

    @property
    def on_worker(self) -> bool:
        return self._slot is not None

    def result(self) -> T:
        slot = self._slot
        if slot is None:
            assert self._job is not None
            return self._job()
        with slot.done:  # waits for the worker
            pass
        if slot.error is not None:
            raise slot.error
        return slot.value  # type: ignore[no-any-return]


class AheadWorker:
    """One worker thread, one job at a time; callers that find it busy run their job themselves
    (when they ask for its result). The handoff is two locks (~10 µs; a ``ThreadPoolExecutor``'s
    future cost ~80 µs of CPU per job here)."""

    def __init__(self) -> None:
        self.after_fork()
        self.jobs_on_worker = 0  # counters for tests and benchmarks
        self.jobs_inline = 0

    def after_fork(self) -> None:
        """A fresh state (also in a forked child: the parent's thread does not exist there)."""
        self._free = threading.Lock()  # held from a job's handoff until the worker has finished it
        self._go = threading.Lock()  # released to wake the worker
        self._go.acquire()
        self._make = threading.Lock()
        self._slot: _Slot | None = None
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], T]) -> Ahead[T]:
        """``job`` started on the worker when it is free (``result()`` waits for it), else left to the caller."""
        if self._free.acquire(blocking=False):
            try:
                self._ensure_thread()
            except RuntimeError:  # no new threads (the interpreter is shutting down)
                self._free.release()
            else:
                slot = self._slot = _Slot(job)
                self.jobs_on_worker += 1
                self._go.release()
                return Ahead(slot=slot)
        self.jobs_inline += 1
        return Ahead(job=job)

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            with self._make:
                if self._thread is None or not self._thread.is_alive():
                    t = threading.Thread(target=self._loop, name="memfold-query-ahead", daemon=True)
                    t.start()
                    self._thread = t

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            slot = self._slot
            self._slot = None
            if slot is None:  # pragma: no cover - a release without a job cannot happen
                continue
            try:
                slot.value = slot.job()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised by result()
                slot.error = exc
            finally:
                slot.job = None  # type: ignore[assignment]  # no reference to the search's objects kept
                self._free.release()  # free before the caller wakes: its next search finds it free
                slot.done.release()

    def threads(self) -> int:
        """Live worker threads of this process (0 or 1)."""
        return int(self._thread is not None and self._thread.is_alive())


WORKER = AheadWorker()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WORKER.after_fork)


def embed_ahead(job: Callable[[], T], enabled: bool = True) -> Ahead[T]:
    """``job`` (the query's vector) on the process's worker thread when ``enabled`` and the worker is
    free; otherwise the caller runs it when it asks for the result."""
    return WORKER.submit(job) if enabled else Ahead(job=job)
