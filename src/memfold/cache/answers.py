"""Prepared search answers (``AnswerCache``): what a search worked out before scoring, kept in process
under the index's change counter, so that a repeated search only scores its candidates again.

A search's candidates, their similarity (fusion, keyword feedback, session lift, query adjustments
and the time cue of its day), their parts, their cosines and the records read for them depend only
on the rows, the policy and the query: under one change counter (any write of rows, in any process,
moves it) they are what the index would give again. What does not move the counter is the access
statistics (``access_count``, ``last_accessed_at``): they enter the score through the time decay
and are returned with the hits. So a repeated search reads the candidates' access statistics
alone (``access_stats``: one short statement on PostgreSQL instead of whole rows, and no lookup of
query vector, keyword or vector candidates, nor of the keyword feedback's rows) and scores, sorts,
collapses and filters the candidates as ``Retriever.search`` does: the same answer as the index's.

Kept in process only (like the first tier of ``TieredCache``): the value is records and floats,
whose encoding for Redis would cost what it saves; the candidates' ids and scores are shared by
``CachedIndex``'s keyword and vector lookups as before. Bounded: ``max_entries`` answers, least
recently used first out, each kept ``ttl`` seconds at most; an entry whose counter has passed is
never reached again and ages out."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from ..models import MemoryRecord


@dataclass
class Prepared:
    """One search worked out up to its scores. ``cands``: (record as read, similarity, keyword part,
    vector part) of every candidate the filters keep; ``held``: query terms held per id, as the
    relevance floor asked the index (grown by later searches that reach further down)."""

    policy: Any  # the namespace's Policy the answer was made with
    day: date  # the day of the search's ``now``: the query's time cues are resolved against it
    cands: list[tuple[MemoryRecord, float, float, float]]
    cosines: dict[str, float]
    cos_floor: float
    qset: set[str]
    held: dict[str, int] = field(default_factory=dict)


class AnswerCache:
    """A thread-safe LRU of ``Prepared`` answers (at most ``max_entries``, each for ``ttl`` seconds)."""

    def __init__(self, max_entries: int = 128, ttl: float = 3600.0):
        self.max_entries = max(1, max_entries)
        self.ttl = ttl
        self._data: OrderedDict[Hashable, tuple[float, Prepared]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Prepared | None:
        with self._lock:
            got = self._data.get(key)
            if got is None:
                return None
            if got[0] <= time.monotonic():
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return got[1]

    def put(self, key: Hashable, value: Prepared) -> None:
        with self._lock:
            self._data[key] = (time.monotonic() + self.ttl, value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
