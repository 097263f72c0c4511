"""Maintenance in the background (``memfold serve``): a daemon thread that runs ``run_due`` for
every namespace every ``interval`` seconds. The jobs decide themselves what is due (the 24-hour
rule, thresholds), and the lease keeps a run from overlapping one of another process."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import MaintenanceRun
from .runner import run_due

if TYPE_CHECKING:
    from ..engine.memory import Memory

log = logging.getLogger("memfold")


class Scheduler:
    def __init__(self, memory: "Memory", interval: float = 3600.0,
                 on_run: Callable[[MaintenanceRun], None] | None = None):
        if interval <= 0:
            raise ValueError(f"the maintenance interval must be positive, got {interval}")
        self.memory = memory
        self.interval = interval
        self.on_run = on_run
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Scheduler":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memfold-maintenance", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop after the run in progress (if any)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run_once(self) -> MaintenanceRun:
        run = run_due(self.memory)
        for res in run.failed:
            log.warning("maintenance: %s", res.summary())
        if self.on_run is not None:
            self.on_run(run)
        return run

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - a bad run must not end the background thread
                log.exception("maintenance run failed")
            self._stop.wait(self.interval)
