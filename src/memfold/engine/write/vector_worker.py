"""Write-ahead mode (``[index] write_ahead = true``): ``add`` stores a memory in its file and in
the index without its vector (keyword-searchable at once) and returns; this worker gives the
rows their vectors from a background thread.

After an add wakes it, the worker waits ``write_ahead_delay_ms`` to gather what else arrives,
embeds the rows that still lack a vector (oldest first, ``batch`` at a time) and stores the
vectors, so a vector follows its row within that delay plus one batch's embedding time. The
rows waiting are the index's own (``VectorBacklog.pending_vectors``): nothing is held only in
memory, so a process killed in between loses nothing; the next ``Memory`` opened on the index
finds the rows without a vector and embeds them. ``close`` embeds what is left before it returns.

The same worker writes the second vectors of ``[search] profile = "quality"`` (``start_second``):
every add is acknowledged with its row and first vector as usual; the worker then embeds the
rows that lack a vector of the second model (``SecondVectors``), always, not only in
write-ahead mode, and a ``Memory`` opened with that profile catches up the rows left without one."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...index.base import ReadOnlyMode, SecondVectors, capability
from ...models import MemoryRecord
from ...providers.embedder import Embedder
from ..storage import records as rec

log = logging.getLogger("memfold")

BATCH = 256
SECOND_BATCH = 32  # rows per batch of the second model (~2 s of multilingual-e5-small on one core)
CLOSE_DRAIN_S = 10.0  # ``Memory.close`` embeds the second vectors still missing for at most this long
MAX_BACKOFF_S = 30.0


Pending = Callable[[int], list[MemoryRecord]]  # up to n rows waiting for their vector, oldest first
Store = Callable[[Sequence[MemoryRecord], np.ndarray], int]  # their vectors stored; how many rows took theirs


class VectorWorker:
    """Embeds the rows ``pending`` names and hands their vectors to ``store`` (by default the
    index's own ``VectorBacklog``: rows stored without their vector)."""

    def __init__(self, index: Any, embedder: Embedder, delay_ms: int, *, batch: int = BATCH,
                 pending: Pending | None = None, store: Store | None = None, name: str = "memfold-vectors"):
        if delay_ms < 0:
            raise ValueError(f"write_ahead_delay_ms must be 0 or more, got {delay_ms}")
        self.index = index
        self.embedder = embedder
        self._pending: Pending = pending or index.pending_vectors
        self._store: Store = store or index.set_vectors
        self.delay_s = delay_ms / 1000.0
        self.batch = max(1, batch)
        self.embedded = 0  # rows given their vector by this worker
        self.embed_seconds = 0.0  # time spent embedding them (``memfold bench`` reports it)
        self.written = False  # ``wrote`` was called: rows of this process wait
        self._wake = threading.Event()
        self._cond = threading.Condition()
        self._idle_rounds = 0  # drains that ended with no row left
        self._stopping = False
        self._drain_at_stop = True
        self._stopped = threading.Event()  # interrupts the gathering delay
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def notify(self) -> None:
        """Rows without a vector were written."""
        self._wake.set()

    def wrote(self) -> None:
        """This process wrote rows without a vector (``close`` then embeds them before it returns)."""
        self.written = True
        self._wake.set()

    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until every row written before this call has its vector (True), or ``timeout``."""
        with self._cond:
            target = self._idle_rounds + 1
            self._wake.set()
            return self._cond.wait_for(lambda: self._idle_rounds >= target or not self._thread.is_alive(),
                                       timeout=timeout) and self._idle_rounds >= target

    def close(self, timeout: float = 300.0, *, drain: bool = True, drain_seconds: float | None = None) -> None:
        """Embed what is left (``drain=False``: leave it to the next process that opens the index;
        ``drain_seconds``: embed for at most that long, then leave the rest after the batch in hand),
        then stop the thread."""
        self._drain_at_stop = drain
        self._stopping = True
        self._stopped.set()
        self._wake.set()
        if drain and drain_seconds is not None:
            self._thread.join(drain_seconds)
            if self._thread.is_alive():
                log.info("rows still without their %s vector are embedded by the next process that opens the "
                         "index", self.embedder.name)
                self._drain_at_stop = False
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("the vector worker did not finish within %.0f s; the rows still without a vector are "
                        "embedded by the next process that opens the index", timeout)

    def _run(self) -> None:
        backoff = 0.0
        while True:
            if not self._stopping:
                self._wake.wait(backoff or None)
                if self.delay_s and not self._stopping:
                    self._stopped.wait(self.delay_s)  # gather what else arrives into one batch
            self._wake.clear()
            if self._stopping and not self._drain_at_stop:
                return
            try:
                self._drain()
                backoff = 0.0
            except Exception as exc:  # noqa: BLE001 - the rows stay in the index; retried with backoff
                backoff = min(MAX_BACKOFF_S, max(0.5, 2 * backoff))
                log.warning("the vector worker could not embed the waiting rows (%s); retrying in %.1f s",
                            exc, backoff)
                if self._stopping:
                    return
                continue
            if self._stopping:
                return

    def _drain(self) -> None:
        while not (self._stopping and not self._drain_at_stop):
            rows = self._pending(self.batch)
            if not rows:
                break
            t0 = time.perf_counter()
            vectors = self.embedder.embed([rec.embed_text(r) for r in rows])
            self.embed_seconds += time.perf_counter() - t0
            done = self._store(rows, vectors)
            self.embedded += done
            if done == 0:  # nothing could be stored (another process was faster, or a read-only index)
                break
        with self._cond:
            self._idle_rounds += 1
            self._cond.notify_all()


def start_for(index: Any, embedder: Embedder, write_ahead: bool, delay_ms: int) -> VectorWorker | None:
    """The worker a ``Memory`` needs: in write-ahead mode always; otherwise only when the index holds
    rows without a vector (a write-ahead process was killed before their vectors were stored)."""
    if delay_ms < 0:
        from ...errors import ConfigError

        raise ConfigError(f"setting [index] write_ahead_delay_ms must be 0 or more, got {delay_ms}")
    ro = capability(index, ReadOnlyMode)
    if ro is not None and ro.read_only:
        return None
    pending = index.pending_vectors
    if not write_ahead:
        waiting = pending(1)
        if not waiting:
            return None
        log.info("the index holds rows without a vector (a write-ahead process stopped early); embedding them")
    worker = VectorWorker(index, embedder, delay_ms)
    worker.notify()  # rows left by an earlier process are embedded right away
    return worker


def start_second(index: Any, embedder: Embedder, delay_ms: int) -> VectorWorker | None:
    """The worker of the second vectors (``embedder``'s, kept under its name): started at once, so
    the rows an earlier process left without one are embedded now; None on a read-only index or
    one without ``SecondVectors``."""
    second = capability(index, SecondVectors)
    ro = capability(index, ReadOnlyMode)
    if second is None or (ro is not None and ro.read_only):
        return None
    model = embedder.name
    worker = VectorWorker(index, embedder, delay_ms, pending=lambda n: second.pending_second_vectors(model, n),
                          store=lambda rows, vecs: second.set_second_vectors(model, rows, vecs),
                          name="memfold-second-vectors", batch=SECOND_BATCH)
    worker.notify()
    return worker
