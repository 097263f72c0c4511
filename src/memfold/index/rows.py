"""Stored rows as both backends read them: the one conversion of a memories row into a
``MemoryRecord`` (and of a history row into a ``HistoryEntry``), and the named rows the row
iterators yield (``base.RowSource``: what a copy of an index reads)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from ..models import HistoryEntry, MemoryRecord, MemoryType, fillable

# the columns of a memories row, in the order both backends select them (PostgreSQL names the
# importance column ``importance_score``); the names are MemoryRecord's fields
RECORD_FIELDS = ("id", "user_id", "agent_id", "memory_type", "content", "context", "structured_data",
                 "source_ids", "source_session_id", "file", "created_at", "updated_at", "importance",
                 "confidence", "access_count", "last_accessed_at", "is_active", "superseded_by")
HISTORY_FIELDS = ("memory_id", "user_id", "action", "at", "old_content", "new_content", "detail")


@dataclass(frozen=True)
class RelationRow:
    user_id: str
    source_id: str
    target_id: str
    relation: str
    strength: float


@dataclass(frozen=True)
class FileState:
    """What the index recorded of a workspace file after indexing it (change detection)."""

    user_id: str
    file: str
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class StateDoc:
    """One document of the state store (sessions, pin lists, usage)."""

    user_id: str
    kind: str
    key: str
    value: dict[str, Any]


def timestamp(value: str | datetime | None) -> datetime | None:
    """A stored time (SQLite: ISO text; PostgreSQL: ``timestamptz``) as an aware datetime; naive means UTC."""
    if value is None or value == "":
        return None
    t = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _json(value: Any, empty: Any) -> Any:
    """A stored JSON value (SQLite: text; PostgreSQL: decoded ``jsonb`` or an array)."""
    if value is None or value == "":
        return empty
    return json.loads(value) if isinstance(value, (str, bytes)) else value


_SCALARS = (str, int, float, bool, type(None))


@lru_cache(maxsize=4096)
def _flat_json(text: str) -> tuple[Any, ...] | None:
    """A short JSON text decoded once: an object's items or an array's values, when every value is
    a scalar (a copy of them shares nothing mutable); None for anything else (decoded each time).
    Rows repeat a few such texts (``{"role": "user"}``, ``[]``), and a search reads dozens of rows."""
    value = json.loads(text)
    if isinstance(value, dict) and all(isinstance(v, _SCALARS) for v in value.values()):
        return ("d", tuple(value.items()))
    if isinstance(value, list) and all(isinstance(v, _SCALARS) for v in value):
        return ("l", tuple(value))
    return None


def _stored_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and len(value) <= 256 and value:
        flat = _flat_json(value)
        if flat is not None and flat[0] == "d":
            return dict(flat[1])
    return dict(_json(value, {}))


def _stored_tuple(value: Any) -> tuple[Any, ...]:
    if isinstance(value, str) and len(value) <= 256 and value:
        flat = _flat_json(value)
        if flat is not None and flat[0] == "l":
            return flat[1]
    return tuple(_json(value, ()))


_TYPES = {t.value: t for t in MemoryType}
# every field of MemoryRecord comes from the row and it has no __post_init__: a record is made by
# filling a bare instance's __dict__ (a frozen dataclass's __init__ sets each field through
# object.__setattr__, a third of the time of reading a row); anything else takes the constructor
FILL_RECORD = fillable(MemoryRecord, RECORD_FIELDS)


def with_access(r: MemoryRecord, count: int, at: datetime | None) -> MemoryRecord:
    """``r`` with the access statistics ``count`` and ``at`` (itself when they are its own)."""
    if r.access_count == count and r.last_accessed_at == at:
        return r
    if not FILL_RECORD:
        return replace(r, access_count=count, last_accessed_at=at)
    rec = object.__new__(MemoryRecord)
    rec.__dict__.update(r.__dict__, access_count=count, last_accessed_at=at)
    return rec


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A memories row, its columns in ``RECORD_FIELDS`` order, as either backend returns it."""
    f = dict(zip(RECORD_FIELDS, row, strict=True))
    mtype = f["memory_type"]
    created, updated = timestamp(f["created_at"]), timestamp(f["updated_at"])
    if created is None or updated is None:
        now = datetime.now(timezone.utc)
        created, updated = created or now, updated or now
    f.update(memory_type=_TYPES.get(mtype) or MemoryType(mtype), structured_data=_stored_dict(f["structured_data"]),
             source_ids=_stored_tuple(f["source_ids"]), created_at=created, updated_at=updated,
             last_accessed_at=timestamp(f["last_accessed_at"]), is_active=bool(f["is_active"]))
    if not FILL_RECORD:
        return MemoryRecord(**f)
    rec = object.__new__(MemoryRecord)
    rec.__dict__.update(f)
    return rec


def history_from_row(row: Sequence[Any]) -> HistoryEntry:
    """A history row, its columns in ``HISTORY_FIELDS`` order, as either backend returns it."""
    f = dict(zip(HISTORY_FIELDS, row, strict=True))
    f.update(at=timestamp(f["at"]) or datetime.now(timezone.utc), detail=dict(_json(f["detail"], {})))
    return HistoryEntry(**f)
