"""Forget requests inside added content (seed 002: "忘了这个" → delete it at once).

A user message such as "forget this", "忘了这个", "别记", "forget that I like sushi" is never
stored itself. What it points at is not stored either or, when it was stored before, is
deleted from file and index (``UserStore.rewrite``: backup + history entry ``forget``):

- an explicit object ("forget that I like sushi") → every memory ``Memory.forget`` matches;
- "this" with other words in the same message ("我和老板吵架了，这个别记") → that message;
- "this" alone → the user's previous message of the same call, or, when the call has none,
  what the previous ``add`` of the namespace stored from its last user message."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from ...index.base import Index
from ...models import MemoryRecord, Message
from ...text.forget import find_request
from ...text.secrets import redact
from ..storage.purge import purge
from ..storage.store import UserStore

log = logging.getLogger("memfold")
STATE_KIND, LAST_ADD = "write", "last_add"
FinderFn = Callable[[str, str], list[MemoryRecord]]  # (query, user_id) -> records that match


@dataclass
class ForgetPlan:
    dropped: dict[int, str] = field(default_factory=dict)  # message index -> why it is not stored
    requests: list[tuple[int, str | None]] = field(default_factory=list)  # (message index, query | None = last add)


def plan(messages: Sequence[Message], user_roles: Collection[str]) -> ForgetPlan:
    out = ForgetPlan()
    last_user: int | None = None
    for i, m in enumerate(messages):
        if m.role not in user_roles:
            continue
        req = find_request(m.content)
        if req is None:
            last_user = i
            continue
        out.dropped[i] = "a request to forget; not stored"
        if req.query:
            out.requests.append((i, req.query))
        elif req.points_back and last_user is not None:
            for j in range(last_user, i):  # the message it points at and the replies to it
                out.dropped.setdefault(j, f"the user asked to forget it (message {i})")
        elif req.points_back:
            out.requests.append((i, None))
    return out


def remember_last_add(index: Index, user_id: str, ids: Sequence[str]) -> None:
    if ids:
        index.put_state(user_id, STATE_KIND, LAST_ADD, {"ids": list(ids)})


def apply(store: UserStore, user_id: str, requests: Sequence[tuple[int, str | None]], find: FinderFn | None,
          turn_of: dict[str, int]) -> list[MemoryRecord]:
    """Delete what the requests point at. Records stored in this call from messages after a
    request are spared (the user said them after asking to forget)."""
    gone: list[MemoryRecord] = []
    seen: set[str] = set()
    for i, query in requests:
        if query is None:
            doc = store.index.get_state(user_id, STATE_KIND, LAST_ADD) or {}
            targets = [r for r in store.index.get(user_id, [str(x) for x in doc.get("ids") or []]) if r.is_active]
            detail = {"request": "forget this", "by": "conversation"}
        elif find is not None:
            targets = [r for r in find(query, user_id) if turn_of.get(r.id, -1) <= i]
            detail = {"query": redact(query), "by": "conversation"}
        else:
            continue
        for r in targets:
            if r.id in seen:
                continue
            seen.add(r.id)
            store.rewrite(r, None, "forget", detail)
            gone.append(r)
        log.info("forget request %r of %s: %d memories deleted", redact(query or "this"), user_id, len(targets))
    # deleted means deleted: history words, older versions, backups, snapshot, a quoted echo of the words
    purge(store, gone, [q for _, q in requests if q])
    return gone
