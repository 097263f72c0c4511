"""Leases: one holder at a time of a named job per namespace (``Leases`` in ``index/base.py``).

SQLite keeps a lease as a row of the state table (kind ``lease``) written in a ``BEGIN IMMEDIATE``
transaction: a holder, its host and process id, and an expiry. A lease is free when it has
expired, or at once when its holder was a process of this machine that is gone (killed). PostgreSQL
uses an advisory lock held by a connection of its own: the server frees it when that connection
ends, whichever machine the holder ran on."""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
import zlib
from datetime import datetime, timezone
from typing import Any

KIND = "lease"


def new_holder() -> str:
    """A holder id naming this machine and process (and one run of it)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _alive_here(holder: str) -> bool:
    """False when ``holder`` is a process of this machine that no longer runs."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine's: only its expiry frees it
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sqlite_try_lease(db: Any, user_id: str, name: str, holder: str, ttl: float) -> bool:
    """Inside a write transaction of the SQLite index: take or renew the lease."""
    row = db.execute("SELECT value FROM state WHERE user_id = ? AND kind = ? AND key = ?",
                     (user_id, KIND, name)).fetchone()
    now = time.time()
    if row is not None:
        try:
            cur = json.loads(row[0])
        except ValueError:
            cur = {}
        other = str(cur.get("holder", ""))
        if other and other != holder and float(cur.get("expires", 0)) > now and _alive_here(other):
            return False
    value = {"holder": holder, "expires": now + ttl, "taken_at": datetime.now(timezone.utc).isoformat()}
    db.execute("INSERT OR REPLACE INTO state VALUES (?, ?, ?, ?, ?)",
               (user_id, KIND, name, json.dumps(value), datetime.now(timezone.utc).isoformat()))
    return True


def sqlite_release_lease(db: Any, user_id: str, name: str, holder: str) -> None:
    row = db.execute("SELECT value FROM state WHERE user_id = ? AND kind = ? AND key = ?",
                     (user_id, KIND, name)).fetchone()
    if row is not None and json.loads(row[0]).get("holder") == holder:
        db.execute("DELETE FROM state WHERE user_id = ? AND kind = ? AND key = ?", (user_id, KIND, name))


def advisory_key(user_id: str, name: str) -> int:
    """A signed 64-bit key for ``pg_try_advisory_lock`` from the namespace and the lease name."""
    data = f"memfold/{user_id}/{name}".encode("utf-8")
    value = (zlib.crc32(data) << 32) | zlib.crc32(data[::-1])
    return value - (1 << 64) if value >= (1 << 63) else value
