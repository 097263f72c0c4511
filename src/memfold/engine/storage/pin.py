"""The pin list of an agent (seed 000): the last ``max_recent_memories`` memories it saved,
oldest first, kept in a bounded deque (O(1) append and eviction) and persisted in the
index's state store (kind ``"agent"``), so it survives restarts with the sessions."""

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
    """``recent_memories`` of one agent. ``pin_content`` is the old unbounded string of the
    seed: kept so that code reading or writing it does not break, and never used."""

    def __init__(self, agent_id: str, max_items: int, items: Iterable[str] = ()):
        self.agent_id = agent_id
        self.MAX_RECENT_MEMORIES = int(max_items)
        self._items: deque[str] = deque(maxlen=self.MAX_RECENT_MEMORIES)
        for text in items:
            self.add(text)
        self.pin_content = ""  # backward compatible; has no effect

    def add(self, content: str | None) -> bool:
        """Append one memory; empty or whitespace content is skipped. The oldest falls out."""
        if not isinstance(content, str) or not content.strip():
            return False
        self._items.append(content.strip())
        return True

    @property
    def recent_memories(self) -> list[str]:
        """Oldest first; a copy."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def render(self) -> str:
        return "\n".join(self._items)

    def to_state(self) -> dict[str, Any]:
        return {"recent_memories": list(self._items), "max": self.MAX_RECENT_MEMORIES}

    @classmethod
    def from_state(cls, agent_id: str, max_items: int, state: dict[str, Any] | None) -> "PinList":
        """Tolerates an old or foreign state without ``recent_memories`` (seed 000: compatible, silent)."""
        items = (state or {}).get("recent_memories")
        if not isinstance(items, list):
            if state:
                log.info("agent %s: stored state has no recent_memories list; starting empty", agent_id)
            items = []
        return cls(agent_id, max_items, (s for s in items if isinstance(s, str)))


class PinStore:
    """Loads and saves pin lists of (user_id, agent_id) in the index state store."""

    def __init__(self, index: Index, max_items: Callable[[str], int]):
        self._index = index
        self._max = max_items
        self._lock = threading.Lock()

    def get(self, user_id: str, agent_id: str) -> PinList:
        return PinList.from_state(agent_id, self._max(user_id), self._index.get_state(user_id, STATE_KIND, agent_id))

    def append(self, user_id: str, agent_id: str, contents: Iterable[str]) -> PinList:
        """Pin each non-empty content in order and persist the list."""
        with self._lock:
            pins = self.get(user_id, agent_id)
            changed = [pins.add(redact(c) if isinstance(c, str) else c) for c in contents]  # persisted: no secret
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
                kept = [c for c in pins.recent_memories if c not in gone]
                if len(kept) != len(pins):
                    removed += len(pins) - len(kept)
                    self._index.put_state(user_id, STATE_KIND, agent_id,
                                          PinList(agent_id, pins.MAX_RECENT_MEMORIES, kept).to_state())
        return removed

    def clear(self, user_id: str, agent_id: str) -> None:
        with self._lock:
            self._index.delete_state(user_id, STATE_KIND, agent_id)
