"""Records the SQLite index has read, kept between reads (``SqliteIndex.get``): a search reads the
rows of its ~30 candidates, and the next searches of the same namespace mostly ask for rows read
before. A row read again costs an SQL statement and a record made from it; a kept one costs a
dictionary lookup and a copy.

Bounded: at most ``size`` records (least recently used leave first). Valid only while the file
has not changed: every entry was read at a *token* (SQLite's ``PRAGMA data_version``, which moves
when another connection, in this process or another, commits a change; and the index object's
count of its own write transactions), and a different token empties the cache before the next
read. The one write that keeps it is the index's own ``record_access`` outside any other
transaction: it updates the kept records' access statistics exactly as its ``UPDATE`` did
(``patch_access``). Each record handed out is a copy with its own ``structured_data`` dict: a
caller that changes one cannot change what the next read returns. The read path alone
(``SqliteIndex.get_shared``) gets the kept records themselves: it changes none of them and hands out
copies of the few it returns (``engine/read/read.py``), not of its ~30 candidates."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from ..models import MemoryRecord
from .rows import FILL_RECORD, timestamp, with_access

DEFAULT_SIZE = 4096


def own_copy(r: MemoryRecord) -> MemoryRecord:
    """``r`` with a ``structured_data`` dict of its own (what a caller may change without changing ``r``)."""
    if not FILL_RECORD:
        return replace(r, structured_data=dict(r.structured_data))
    rec = object.__new__(MemoryRecord)
    rec.__dict__.update(r.__dict__)
    rec.__dict__["structured_data"] = dict(r.structured_data)
    return rec


class RecordCache:
    """(namespace, id) -> the record as read at ``token``; at most ``size`` of them."""

    def __init__(self, size: int = DEFAULT_SIZE):
        if size < 0:
            raise ValueError(f"record cache size must be >= 0, got {size}")
        self.size = size
        self.token: tuple[int, int] | None = None
        self._records: OrderedDict[tuple[str, str], MemoryRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def check(self, token: tuple[int, int]) -> None:
        """Forget everything read at another token than ``token`` (the file has changed since)."""
        if token != self.token:
            self._records.clear()
            self.token = token

    def take(self, user_id: str, ids: Sequence[str], out: dict[str, MemoryRecord], copy: bool = True) -> list[str]:
        """Copies of the kept records of ``ids`` into ``out`` (``copy=False``: the kept records themselves,
        for a reader that changes nothing and copies what it hands out); returns the ids not kept (to read)."""
        kept = self._records
        missing: list[str] = []
        for mid in ids:
            r = kept.get((user_id, mid))
            if r is None:
                missing.append(mid)
            else:
                kept.move_to_end((user_id, mid))
                out[mid] = own_copy(r) if copy else r
        return missing

    def put(self, user_id: str, records: Iterable[MemoryRecord], copy: bool = True) -> None:
        """Keep ``records`` (read at the current token), each as a copy of its own (``copy=False``: the
        records themselves, handed to a reader that changes nothing)."""
        if self.size == 0:
            return
        kept = self._records
        for r in records:
            kept[(user_id, r.id)] = own_copy(r) if copy else r
            kept.move_to_end((user_id, r.id))
        while len(kept) > self.size:
            kept.popitem(last=False)

    def patch_access(self, user_id: str, ids: Sequence[str], at: datetime) -> None:
        """The kept records of ``ids`` as ``record_access(user_id, ids, at)`` left their rows: one more
        access per occurrence of the id, the last access at ``at`` (as the row stores and reads it)."""
        at_read = timestamp(at.isoformat())
        kept = self._records
        for mid in ids:
            r = kept.get((user_id, mid))
            if r is not None:
                kept[(user_id, mid)] = with_access(r, r.access_count + 1, at_read)

    def clear(self) -> None:
        self._records.clear()
        self.token = None
