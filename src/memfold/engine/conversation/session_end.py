"""Session end (seeds 002 and 003: "extraction at session end").

A session's messages reach long-term memory when they are folded into the summary
(``Session._maybe_fold``). The ones still in the verbatim buffer when the conversation ends
would never get there; ending a session sends them to extraction through the same ``add``
as folding (the LLM when ``[llm]`` is configured, the zh/en rules otherwise), marks them
done and records the session as closed. A session ends by ``Session.close()``, by leaving
its ``with`` block, by ``/exit`` in ``memfold chat``, or by its time to live: a session
untouched for ``session_ttl_minutes`` is closed by whoever finds it expired (opening or
using it, or opening another session of the namespace).

Every message carries a ``DONE`` flag once it was extracted, or when it was added while
memory was off (it is never extracted), so ending a session twice, reopening and ending it
again, or two processes ending it at once never extract a message twice: the end runs under
a per-namespace session lock (a file lock, so other processes wait too)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import MemfoldError, ReadOnlyWorkspaceError, SessionClosedError
from ...models import EPISODIC, MemoryRecord, utcnow
from ...workspace.files import FileLock

if TYPE_CHECKING:
    from .ports import SessionPorts

log = logging.getLogger("memfold")
STATE_KIND = "session"
DONE = "x"  # message flag: extracted already, or added while memory was off
SWEEP_INTERVAL_S = 60.0  # a namespace's sessions are checked for expiry at most this often per process
SWEEP_MAX = 200  # sessions examined per sweep; the next sweep goes on where this one stopped
SWEEP_END_MAX = 5  # sessions ended per sweep (each may cost an LLM call while a session is being opened)
SWEEP_USERS_MAX = 10_000  # namespaces whose last sweep time is remembered (older entries are dropped)


@dataclass(frozen=True)
class SessionEnd:
    """What ending a session did. ``extracted``: buffer messages sent to extraction;
    ``added``: the memories stored from them (the episodic turns not counted)."""

    session_id: str
    reason: str  # "close" | "ttl"
    extracted: int = 0
    added: tuple[MemoryRecord, ...] = ()
    warnings: tuple[str, ...] = ()
    already_closed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "reason": self.reason, "extracted": self.extracted,
                "added": [r.to_dict() for r in self.added], "warnings": list(self.warnings),
                "already_closed": self.already_closed}


def pending(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages not extracted yet (and not added while memory was off)."""
    return [m for m in messages if not m.get(DONE)]


def expired(state: dict[str, Any], ttl_minutes: int, now: datetime | None = None) -> bool:
    """True when an open session was last changed more than ``ttl_minutes`` ago (0: never expires)."""
    if ttl_minutes <= 0 or state.get("closed_at"):
        return False
    try:
        last = datetime.fromisoformat(state.get("updated_at") or state.get("created_at") or "")
    except ValueError:
        return False  # no usable date: never closed behind the owner's back
    if last.tzinfo is None:
        last = last.replace(tzinfo=timezone.utc)
    return (now or utcnow()) - last > timedelta(minutes=ttl_minutes)


class SessionLocks:
    """One file lock per namespace (``<user>/.session.lock``), the same instance for every call
    of a process so that nested use in a thread re-enters instead of waiting for itself."""

    def __init__(self, user_dir: Callable[[str], Path]):
        self._user_dir = user_dir
        self._locks: dict[str, FileLock] = {}
        self._guard = threading.Lock()

    def __call__(self, user_id: str) -> FileLock:
        with self._guard:
            lock = self._locks.get(user_id)
            if lock is None:
                lock = self._locks[user_id] = FileLock(self._user_dir(user_id) / ".session.lock")
            return lock


_LOCAL = threading.RLock()


def may_extract(ports: "SessionPorts", user_id: str, memory_enabled: bool) -> bool:
    """Whether a session's messages may go to long-term memory: memory on for the session and,
    read now, for the namespace (``memfold memory off`` while a session runs is honoured)."""
    return memory_enabled and (ports.enabled is None or ports.enabled(user_id))


def _lock(ports: "SessionPorts", user_id: str) -> Any:
    return ports.lock(user_id) if ports.lock is not None else _LOCAL


def guarded(ports: "SessionPorts", user_id: str, local: Any) -> ExitStack:
    """The namespace's session lock (other processes wait too), then ``local`` (a session's own)."""
    stack = ExitStack()
    try:
        stack.enter_context(_lock(ports, user_id))
    except ReadOnlyWorkspaceError:
        pass  # nothing can be written here: reads go on without the lock
    stack.enter_context(local)
    return stack


def closed_error(session_id: str, user_id: str, closed_at: str, reason: str) -> SessionClosedError:
    how = "after session_ttl_minutes without a message" if reason == "ttl" else "closed"
    return SessionClosedError(f"session {session_id!r} of user {user_id!r} ended at {closed_at} ({how}); "
                              "reopen() it or use a new session id")


def end_session(ports: "SessionPorts", user_id: str, session_id: str, *, reason: str = "close",
                memory_enabled: bool = True, ttl_minutes: int = 0, agent_id: str | None = None) -> SessionEnd | None:
    """End one session: extract its pending messages, flag them, record it closed.

    ``reason="ttl"`` ends it only when it is (still) expired; returns None when there was
    nothing to end. An extraction that raises leaves the session open and unchanged (nothing
    is lost; the next end tries again) and the error propagates."""
    with _lock(ports, user_id):
        stored = ports.state.get_state(user_id, STATE_KIND, session_id)
        now = utcnow()
        if stored is None:
            if reason == "ttl":
                return None
            stored = {"version": 1, "session_id": session_id, "agent_id": agent_id, "messages": [],
                      "created_at": now.isoformat()}
        if stored.get("closed_at"):
            return SessionEnd(session_id, reason, already_closed=True)
        if reason == "ttl" and not expired(stored, ttl_minutes, now):
            return None
        messages: list[dict[str, Any]] = stored.setdefault("messages", [])
        todo = [m for m in pending(messages) if m.get("content", "").strip()] \
            if may_extract(ports, user_id, memory_enabled) else []
        added: tuple[MemoryRecord, ...] = ()
        warnings: tuple[str, ...] = ()
        if todo:
            res = ports.ingest.add([{"role": m["role"], "content": m["content"], "timestamp": m.get("at")}
                                    for m in todo], user_id, agent_id=stored.get("agent_id") or agent_id,
                                   session_id=session_id)
            added = tuple(r for r in res.added if r.file != EPISODIC)
            warnings = tuple(res.warnings) + tuple(res.refused)
        for m in messages:
            m[DONE] = True
        stored.update(closed_at=now.isoformat(), closed_reason=reason,
                      updated_at=now.isoformat(timespec="microseconds"))
        ports.state.put_state(user_id, STATE_KIND, session_id, stored)
    log.info("session %s of %s ended (%s): %d message(s) extracted, %d memorie(s) added", session_id, user_id,
             reason, len(todo), len(added))
    return SessionEnd(session_id, reason, len(todo), added, warnings)


def end_expired(ports: "SessionPorts", user_id: str, session_id: str, ttl_minutes: int, memory_enabled: bool) -> None:
    """End a session found expired by its owner; a failure leaves it open (tried again at the next access)."""
    try:
        end_session(ports, user_id, session_id, reason="ttl", ttl_minutes=ttl_minutes, memory_enabled=memory_enabled)
    except MemfoldError as exc:
        log.warning("session %s expired, but ending it failed: %s", session_id, exc)


def reopen(ports: "SessionPorts", user_id: str, session_id: str) -> bool:
    """Mark a closed session open again (its messages stay flagged as extracted). True when it was closed."""
    with _lock(ports, user_id):
        stored = ports.state.get_state(user_id, STATE_KIND, session_id)
        if stored is None or not stored.get("closed_at"):
            return False
        stored.update(closed_at="", closed_reason="", updated_at=utcnow().isoformat(timespec="microseconds"))
        ports.state.put_state(user_id, STATE_KIND, session_id, stored)
        return True


def close_expired(ports: "SessionPorts", user_id: str, ttl_minutes: int, *, skip: str | None = None,
                  ids: list[str] | None = None, max_end: int | None = None) -> tuple[list[SessionEnd], int]:
    """End the expired sessions of a namespace (or of ``ids`` only), at most ``max_end`` of them
    (each may cost an LLM call); returns them and how many ids were examined. A session whose
    extraction fails stays open and is tried again next time; a read-only workspace is left alone."""
    ended: list[SessionEnd] = []
    ids = ports.state.list_state(user_id, STATE_KIND) if ids is None else ids
    if ttl_minutes <= 0:
        return ended, len(ids)
    for n, sid in enumerate(ids):
        if max_end is not None and len(ended) >= max_end:
            return ended, n
        if sid == skip:
            continue
        stored = ports.state.get_state(user_id, STATE_KIND, sid)
        if stored is None or not expired(stored, ttl_minutes):
            continue
        try:
            res = end_session(ports, user_id, sid, reason="ttl", ttl_minutes=ttl_minutes)
        except ReadOnlyWorkspaceError:
            return ended, len(ids)
        except MemfoldError as exc:
            log.warning("expired session %s of %s: extraction failed, left open: %s", sid, user_id, exc)
            continue
        if res is not None and not res.already_closed:
            ended.append(res)
    return ended, len(ids)


class SessionEnds:
    """The session-end wiring of one ``Memory``: the per-namespace session ``locks`` and the
    expiry ``sweep`` (``close_expired`` at most once per ``interval`` seconds per namespace in
    this process, run when a session is opened, so abandoned sessions end without a scheduler)."""

    def __init__(self, user_dir: Callable[[str], Path], ports: Callable[[], "SessionPorts"],
                 interval: float = SWEEP_INTERVAL_S):
        self.locks = SessionLocks(user_dir)
        self._ports = ports
        self.interval = interval
        self._last: dict[str, float] = {}
        self._cursor: dict[str, int] = {}  # where the next sweep of a namespace starts
        self._guard = threading.Lock()

    def sweep(self, user_id: str, ttl_minutes: int, *, skip: str | None = None) -> list[SessionEnd]:
        if ttl_minutes <= 0:
            return []
        now = time.monotonic()
        with self._guard:
            last = self._last.get(user_id)
            if last is not None and now - last < self.interval:
                return []
            if len(self._last) >= SWEEP_USERS_MAX:  # bounded: forget namespaces not swept lately
                for u in [u for u, t in self._last.items() if now - t >= self.interval]:
                    self._last.pop(u, None)
                    self._cursor.pop(u, None)
            self._last[user_id] = now
        ports = self._ports()
        ids = ports.state.list_state(user_id, STATE_KIND)
        with self._guard:
            start = self._cursor.get(user_id, 0) % max(1, len(ids))
        chunk = (ids[start:] + ids[:start])[:SWEEP_MAX]
        ended, examined = close_expired(ports, user_id, ttl_minutes, skip=skip, ids=chunk, max_end=SWEEP_END_MAX)
        with self._guard:
            self._cursor[user_id] = start + examined
        return ended
