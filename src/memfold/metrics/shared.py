"""The metrics of running processes, for the other processes of the same workspace.

A process that serves (each ``memfold serve`` worker, ``memfold mcp``) writes what it recorded —
the ``memfold_*`` families of its registry, in Prometheus' text format — to
``<root>/.metrics/<host>-<pid>.json``: every ``INTERVAL`` seconds when something changed, at
least every ``HEARTBEAT`` seconds, and removes the file when it stops. ``memfold stats
--metrics``, a process of its own, reads the files of the processes still running (``running``)
and adds them up (``families``): the numbers a user asks for are those of the server or MCP
process they talk to, not the zeros of the command line's own run.

A file is a running process's when its process is alive (same machine) or, for a process of
another machine sharing the folder, when it was written within ``STALE`` seconds; other files
are removed when read, so the folder holds one file per running process."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from ..workspace.files import atomic_write

log = logging.getLogger("memfold")
FOLDER = ".metrics"
INTERVAL = 2.0  # seconds between two looks at this process's metrics
HEARTBEAT = 30.0  # a file is rewritten at least this often, changed or not
STALE = 3 * HEARTBEAT  # a file older than this belongs to no running process
MAX_FILES = 64  # files read by one reader (the newest first)
MAX_FILE_BYTES = 4 * 1024 * 1024  # a larger file is not memfold's: skipped


class _Own:
    """The memfold families of this process's registry (not the interpreter's gc and process ones)."""

    def collect(self) -> Iterator[Metric]:
        return (f for f in REGISTRY.collect() if f.name.startswith("memfold_"))


def folder(root: str | os.PathLike[str]) -> Path:
    return Path(root) / FOLDER


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except OSError:
        return False
    return True


class Publisher:
    """Writes this process's metrics for the workspace at ``root`` while it runs (``start``/``stop``)."""

    def __init__(self, root: str | os.PathLike[str], kind: str, *, interval: float = INTERVAL):
        self.kind = kind
        self.interval = interval
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.path = folder(root) / f"{self.host}-{self.pid}.json"
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._last_text: str | None = None
        self._last_write = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def publish(self, *, force: bool = False) -> None:
        """Write the file now when the metrics changed, the heartbeat is due or ``force``."""
        text = generate_latest(_Own()).decode("utf-8")  # type: ignore[arg-type]
        now = time.monotonic()
        if not force and text == self._last_text and now - self._last_write < HEARTBEAT:
            return
        doc = {"kind": self.kind, "pid": self.pid, "host": self.host, "started_at": self.started_at,
               "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "metrics": text}
        try:
            atomic_write(self.path, json.dumps(doc, ensure_ascii=False))
        except OSError as exc:  # a read-only workspace: the metrics stay at GET /metrics only
            log.warning("could not write the metrics file %s: %s", self.path, exc)
            return
        self._last_text, self._last_write = text, now

    def start(self) -> "Publisher":
        self.publish(force=True)
        self._thread = threading.Thread(target=self._run, name="memfold-metrics-file", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.publish()
            except Exception as exc:  # never let the thread die silently
                log.warning("metrics file: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass


def running(root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The documents of the processes of this workspace that are running, newest first (files of
    processes that are gone are removed)."""
    base = folder(root)
    try:
        paths = sorted(base.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    host = socket.gethostname()
    out: list[dict[str, Any]] = []
    for p in paths:
        try:
            st = p.stat()
            if st.st_size > MAX_FILE_BYTES:
                continue
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), str):
            continue
        fresh = time.time() - st.st_mtime < STALE
        pid = doc.get("pid")
        mine = doc.get("host") == host
        alive = fresh and (not mine or (isinstance(pid, int) and _alive(pid)))
        if not alive:
            if not fresh or mine:
                p.unlink(missing_ok=True)
            continue
        if len(out) < MAX_FILES:
            out.append(doc)
    return out


def families(docs: Iterable[dict[str, Any]]) -> list[Metric]:
    """The metric families of every document (samples of the same name are added up by the reader)."""
    out: list[Metric] = []
    for doc in docs:
        try:
            out.extend(text_string_to_metric_families(doc["metrics"]))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("metrics of process %s unreadable: %s", doc.get("pid"), exc)
    return out


def describe(docs: list[dict[str, Any]]) -> str:
    """``memfold serve (pid 41), memfold mcp (pid 77)``."""
    return ", ".join(f"memfold {d.get('kind', '?')} (pid {d.get('pid', '?')}"
                     + (f" on {d['host']}" if d.get("host") != socket.gethostname() else "") + ")" for d in docs)
