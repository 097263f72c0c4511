"""Stored rows as both backends read them: the one conversion of a memories row into a
``MemoryRecord`` (and of a history row into a ``HistoryEntry``), and the named rows the row
iterators yield (``base.RowSource``: what a copy of an index reads)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..models import HistoryEntry, MemoryRecord, MemoryType

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


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A memories row, its columns in ``RECORD_FIELDS`` order, as either backend returns it."""
    f = dict(zip(RECORD_FIELDS, row, strict=True))
    now = datetime.now(timezone.utc)
    f.update(memory_type=MemoryType(f["memory_type"]), structured_data=dict(_json(f["structured_data"], {})),
             source_ids=tuple(_json(f["source_ids"], ())), created_at=timestamp(f["created_at"]) or now,
             updated_at=timestamp(f["updated_at"]) or now, last_accessed_at=timestamp(f["last_accessed_at"]),
             is_active=bool(f["is_active"]))
    return MemoryRecord(**f)


def history_from_row(row: Sequence[Any]) -> HistoryEntry:
    """A history row, its columns in ``HISTORY_FIELDS`` order, as either backend returns it."""
    f = dict(zip(HISTORY_FIELDS, row, strict=True))
    f.update(at=timestamp(f["at"]) or datetime.now(timezone.utc), detail=dict(_json(f["detail"], {})))
    return HistoryEntry(**f)
