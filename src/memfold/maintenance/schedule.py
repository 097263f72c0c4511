"""Maintenance in the background. ``Scheduler``: a daemon thread that runs ``run_due`` for every
namespace every ``interval`` seconds, in every long-lived process (``memfold serve``, ``memfold
mcp``, ``memfold chat``, a library ``Memory`` kept open; ``background_scheduler`` makes it from
the ``[maintenance]`` settings). The jobs decide themselves what is due (the 24-hour rule,
thresholds), and the lease keeps a run from overlapping one of another process. A run never
happens inside a caller's request: it has its own thread, at a lower CPU priority where the system
allows it, resting ``pause_seconds`` between namespaces, each job stopping between two steps
past ``job_seconds``. ``AutoCompression``: the long-term compression started by the add that
crossed the threshold."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime

from ..models import FILE_MEMORY, utcnow
from .base import STATE_KIND, Host, MaintenanceRun
from .longterm import INTERVAL, LongTermCompression
from .runner import Bounds, run_due

log = logging.getLogger("memfold")


NICE = 10  # the background thread's priority increment (Linux: per thread)


def background_scheduler(memory: Host, interval_minutes: float | None = None,
                         first_after: float | None = None) -> "Scheduler | None":
    """The scheduler of a long-lived process from ``[maintenance]`` (not started); None when
    background maintenance is off or its interval is 0."""
    ms = memory.settings.maintenance
    minutes = ms.interval_minutes if interval_minutes is None else interval_minutes
    if not ms.background or minutes <= 0:
        return None
    return Scheduler(memory, interval=minutes * 60.0, first_after=ms.first_run_seconds if first_after is None
                     else first_after, pause=ms.pause_seconds, job_seconds=ms.job_seconds or None)


class Scheduler:
    def __init__(self, memory: Host, interval: float = 3600.0,
                 on_run: Callable[[MaintenanceRun], None] | None = None, first_after: float = 0.0,
                 pause: float = 0.0, job_seconds: float | None = None):
        if interval <= 0:
            raise ValueError(f"the maintenance interval must be positive, got {interval}")
        self.memory = memory
        self.interval = interval
        self.on_run = on_run
        self.first_after = first_after  # seconds before the first run (a server starts serving first)
        self._stop = threading.Event()
        self.bounds = Bounds(pause=pause, job_seconds=job_seconds, stop=self._stop)
        self._thread: threading.Thread | None = None
        self.runs = 0  # runs finished (failed ones too)

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

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run_once(self) -> MaintenanceRun:
        run = run_due(self.memory, bounds=self.bounds)
        for res in run.failed:
            log.warning("maintenance: %s", res.summary())
        for res in run.results:
            if res.status == "done":
                log.info("background maintenance: %s", res.summary())
        if self.on_run is not None:
            self.on_run(run)
        return run

    def _loop(self) -> None:
        try:  # Linux sets the priority of one thread; elsewhere the call fails and the thread runs as it is
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICE))
        except (AttributeError, OSError):
            pass
        if self.first_after > 0:
            self._stop.wait(self.first_after)
        while not self._stop.is_set() and not self.memory.closed:
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - a bad run must not end the background thread
                if self.memory.closed:  # the memory was closed under the run: nothing is left to keep
                    log.debug("background maintenance stopped: the memory was closed during a run")
                    break
                log.exception("maintenance run failed")
            self.runs += 1
            self._stop.wait(self.interval)


class AutoCompression:
    """Seed 001 §1.6: an add that leaves MEMORY.md over ``long_term_compress_char_threshold`` starts
    the long-term compression in a background thread (one per namespace at a time; the job's own
    24-hour rule and the lease still apply). ``Memory.close`` waits for it."""

    def __init__(self) -> None:
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def after_add(self, memory: Host, user_id: str) -> bool:
        """Start the compression when it is due; True when a thread was started. Cheap otherwise: one
        stat of MEMORY.md, one state read when the file is big enough."""
        threshold = memory.policy(user_id).long_term_compress_char_threshold
        if threshold <= 0:
            return False
        path = memory.workspace.user(user_id).dir / FILE_MEMORY
        try:
            if path.stat().st_size <= threshold:  # characters ≤ bytes: not over the threshold
                return False
        except FileNotFoundError:
            return False
        doc = memory.index.get_state(user_id, STATE_KIND, LongTermCompression.name) or {}
        last = doc.get("last_success")
        if isinstance(last, str) and utcnow() - datetime.fromisoformat(last) < INTERVAL:
            return False
        with self._lock:
            running = self._threads.get(user_id)
            if running is not None and running.is_alive():
                return False
            t = threading.Thread(target=self._run, args=(memory, user_id), name=f"memfold-compress-{user_id}",
                                 daemon=True)
            self._threads[user_id] = t
            t.start()
        return True

    @staticmethod
    def _run(memory: Host, user_id: str) -> None:
        try:
            for res in run_due(memory, user_id, jobs=[LongTermCompression.name]).results:
                log.info("background compression: %s", res.summary())
        except Exception:  # noqa: BLE001 - a background failure is logged; the next add tries again
            log.exception("background compression of %s failed", user_id)

    def join(self, timeout: float | None = None) -> None:
        with self._lock:
            threads = list(self._threads.values())
            self._threads.clear()
        for t in threads:
            t.join(timeout)
