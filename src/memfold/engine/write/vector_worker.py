"""Write-ahead mode (``[index] write_ahead = true``): ``add`` stores a memory in its file and in
the index without its vector (keyword-searchable at once) and returns; this worker gives the
rows their vectors from a background thread.

After an add wakes it, the worker waits ``write_ahead_delay_ms`` to gather what else arrives,
embeds the rows that still lack a vector (oldest first, ``batch`` at a time) and stores the
vectors, so a vector follows its row within that delay plus one batch's embedding time. The
rows waiting are the index's own (``VectorBacklog.pending_vectors``): nothing is held only in
memory, so a process killed in between loses nothing; the next ``Memory`` opened on the index
finds the rows without a vector and embeds them. ``close`` embeds what is left before it returns."""

from __future__ import annotations

import logging
import threading
from typing import Any

from ...index.base import ReadOnlyMode, capability
from ...providers.embedder import Embedder
from ..storage import records as rec

log = logging.getLogger("memfold")

BATCH = 256
MAX_BACKOFF_S = 30.0


class VectorWorker:
    def __init__(self, index: Any, embedder: Embedder, delay_ms: int, *, batch: int = BATCH):
        if delay_ms < 0:
            raise ValueError(f"write_ahead_delay_ms must be 0 or more, got {delay_ms}")
        self.index = index
        self.embedder = embedder
        self.delay_s = delay_ms / 1000.0
        self.batch = max(1, batch)
        self.embedded = 0  # rows given their vector by this worker
        self._wake = threading.Event()
        self._cond = threading.Condition()
        self._idle_rounds = 0  # drains that ended with no row left
        self._stopping = False
        self._drain_at_stop = True
        self._stopped = threading.Event()  # interrupts the gathering delay
        self._thread = threading.Thread(target=self._run, name="memfold-vectors", daemon=True)
        self._thread.start()

    def notify(self) -> None:
        """Rows without a vector were written."""
        self._wake.set()

    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until every row written before this call has its vector (True), or ``timeout``."""
        with self._cond:
            target = self._idle_rounds + 1
            self._wake.set()
            return self._cond.wait_for(lambda: self._idle_rounds >= target or not self._thread.is_alive(),
                                       timeout=timeout) and self._idle_rounds >= target

    def close(self, timeout: float = 300.0, *, drain: bool = True) -> None:
        """Embed what is left (``drain=False``: leave it to the next process that opens the index),
        then stop the thread."""
        self._drain_at_stop = drain
        self._stopping = True
        self._stopped.set()
        self._wake.set()
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
        while True:
            rows = self.index.pending_vectors(self.batch)
            if not rows:
                break
            vectors = self.embedder.embed([rec.embed_text(r) for r in rows])
            done = self.index.set_vectors(rows, vectors)
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
