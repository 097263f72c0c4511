"""The pin list of an agent: the last ``max_recent_memories`` memories it saved, oldest first,
kept in a bounded deque (O(1) append and eviction) and persisted in the index's state store
(kind ``"agent"``), so it survives restarts with the sessions.

Each pin keeps the id of the memory it copies. What is shown (``PinStore.current``) follows the
memory: its text as it is now when MEMORY.md was edited by hand, nothing once it was deleted.
Pins without an id (saved by an older version) are shown as saved."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ...index.base import Index
from ...text.secrets import redact

log = logging.getLogger("memfold")
STATE_KIND = "agent"


class PinList:
    """``recent_memories`` of one agent. ``pin_content`` is the old unbounded string: kept so that
    code reading or writing it does not break, and never used."""

    def __init__(self, agent_id: str, max_items: int, items: Iterable[str | tuple[str, str | None]] = ()):
        self.agent_id = agent_id
        self.MAX_RECENT_MEMORIES = int(max_items)
        self._items: deque[tuple[str, str | None]] = deque(maxlen=self.MAX_RECENT_MEMORIES)
        for item in items:
            if isinstance(item, tuple):
                self.add(*item)
            else:
                self.add(item)
        self.pin_content = ""  # backward compatible; has no effect

    def add(self, content: str | None, memory_id: str | None = None) -> bool:
        """Append one memory (with the id of the memory it copies, if any); empty or whitespace
        content is skipped. The oldest falls out."""
        if not isinstance(content, str) or not content.strip():
            return False
        self._items.append((content.strip(), memory_id if isinstance(memory_id, str) and memory_id else None))
        return True

    @property
    def recent_memories(self) -> list[str]:
        """Oldest first; a copy."""
        return [c for c, _ in self._items]

    @property
    def items(self) -> list[tuple[str, str | None]]:
        """(content, memory id or None) pairs, oldest first; a copy."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def render(self) -> str:
        return "\n".join(self.recent_memories)

    def to_state(self) -> dict[str, Any]:
        return {"recent_memories": self.recent_memories, "ids": [i for _, i in self._items],
                "max": self.MAX_RECENT_MEMORIES}

    @classmethod
    def from_state(cls, agent_id: str, max_items: int, state: dict[str, Any] | None) -> "PinList":
        """Tolerates an old or foreign state without ``recent_memories`` or ``ids`` (compatible, silent)."""
        items = (state or {}).get("recent_memories")
        if not isinstance(items, list):
            if state:
                log.info("agent %s: stored state has no recent_memories list; starting empty", agent_id)
            items = []
        ids = (state or {}).get("ids")
        if not isinstance(ids, list) or len(ids) != len(items):
            ids = [None] * len(items)
        return cls(agent_id, max_items, ((s, i if isinstance(i, str) else None)
                                         for s, i in zip(items, ids) if isinstance(s, str)))


class PinStore:
    """Loads and saves pin lists of (user_id, agent_id) in the index state store."""

    def __init__(self, index: Index, max_items: Callable[[str], int]):
        self._index = index
        self._max = max_items
        self._lock = threading.Lock()

    def get(self, user_id: str, agent_id: str) -> PinList:
        return PinList.from_state(agent_id, self._max(user_id), self._index.get_state(user_id, STATE_KIND, agent_id))

    def current(self, user_id: str, agent_id: str) -> PinList:
        """The pin list as the memories it copies are now: a pin whose memory was edited (by hand
        in MEMORY.md, or through ``update``) shows the new text; one whose memory is gone is left
        out. Pins without an id are shown as saved. The stored list is not changed."""
        pins = self.get(user_id, agent_id)
        ids = [i for _, i in pins.items if i]
        if not ids:
            return pins
        found = {r.id: r for r in self._index.get(user_id, ids)}
        shown: list[tuple[str, str | None]] = []
        for content, memory_id in pins.items:
            if memory_id is None:
                shown.append((content, None))
            elif memory_id in found:
                shown.append((redact(found[memory_id].content), memory_id))
        return PinList(agent_id, pins.MAX_RECENT_MEMORIES, shown)

    def append(self, user_id: str, agent_id: str, items: Iterable[str | tuple[str, str | None]]) -> PinList:
        """Pin each non-empty content (or (content, memory id) pair) in order and persist the list."""
        with self._lock:
            pins = self.get(user_id, agent_id)
            pairs = [item if isinstance(item, tuple) else (item, None) for item in items]
            changed = [pins.add(redact(c) if isinstance(c, str) else c, i) for c, i in pairs]  # persisted: no secret
            if any(changed):
                self._index.put_state(user_id, STATE_KIND, agent_id, pins.to_state())
            return pins

    def discard(self, user_id: str, contents: Iterable[str]) -> int:
        """Remove these contents from every pin list of the namespace (a forgotten or deleted
        memory must not keep coming back through the pins). Returns how many were removed."""
        gone = {c.strip() for c in contents if isinstance(c, str) and c.strip()}
        removed = 0
        if not gone:
            return 0
        with self._lock:
            for agent_id in self._index.list_state(user_id, STATE_KIND):
                pins = self.get(user_id, agent_id)
                kept = [(c, i) for c, i in pins.items if c not in gone]
                if len(kept) != len(pins):
                    removed += len(pins) - len(kept)
                    self._index.put_state(user_id, STATE_KIND, agent_id,
                                          PinList(agent_id, pins.MAX_RECENT_MEMORIES, kept).to_state())
        return removed

    def clear(self, user_id: str, agent_id: str) -> None:
        with self._lock:
            self._index.delete_state(user_id, STATE_KIND, agent_id)
