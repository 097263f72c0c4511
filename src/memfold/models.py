"""Plain value types shared by every layer (frozen dataclasses, no I/O)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any


class MemoryType(str, enum.Enum):
    """The kind of a memory; it decides the section of MEMORY.md (skills go to learnings.md)."""

    EVENT = "event"
    PREFERENCE = "preference"
    FACT = "fact"
    PATTERN = "pattern"
    TODO = "todo"
    NOTE = "note"
    SKILL = "skill"

    @classmethod
    def parse(cls, value: "str | MemoryType") -> "MemoryType":
        from .errors import InvalidInputError

        if isinstance(value, MemoryType):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            allowed = ", ".join(t.value for t in cls)
            raise InvalidInputError(f"unknown memory type {value!r}; use one of: {allowed}") from None


# Where records live. File-backed records have their text in a workspace file;
# episodic turns are stored in the index database, not in MEMORY.md (a digest, not a chat log).
FILE_MEMORY = "MEMORY.md"
FILE_LEARNINGS = "learnings.md"
EPISODIC = ""  # file value of an episodic turn
TURN = "turn"  # what a result that is a conversation turn says it is (``MemoryRecord.kind``)


def fillable(cls: type, names: Iterable[str]) -> bool:
    """Whether instances of the frozen dataclass ``cls`` may be made by filling a bare instance's
    ``__dict__`` with ``names``' values (hot paths: its ``__init__`` sets each field through
    ``object.__setattr__``): its fields are exactly ``names``, and it has no ``__post_init__`` and no
    ``__slots__``. When not, callers take the constructor."""
    return ({f.name for f in fields(cls)} == set(names) and not hasattr(cls, "__post_init__")
            and not hasattr(cls, "__slots__"))


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


@dataclass(frozen=True)
class MemoryRecord:
    """One memory. ``file`` is the workspace file that holds it ('' = an episodic turn)."""

    id: str
    user_id: str
    memory_type: MemoryType
    content: str
    created_at: datetime
    updated_at: datetime
    importance: float = 0.5
    confidence: float = 1.0
    access_count: int = 0
    last_accessed_at: datetime | None = None
    is_active: bool = True
    structured_data: dict[str, Any] = field(default_factory=dict)
    source_ids: tuple[str, ...] = ()
    agent_id: str | None = None
    source_session_id: str | None = None
    superseded_by: str | None = None
    file: str = FILE_MEMORY
    context: str = ""  # extra text indexed with the record (speaker, neighbouring turn); not shown

    def with_(self, **changes: Any) -> "MemoryRecord":
        return replace(self, **changes)

    @property
    def kind(self) -> str:
        """What the result is, as every surface shows it: ``turn`` for a conversation turn kept in
        the index, else the memory's type (``preference``, ``fact``, ``event``, …)."""
        return TURN if self.file == EPISODIC else self.memory_type.value

    @property
    def turn_key(self) -> str | None:
        """A turn's key (its first source id: the caller's turn id, or the id memfold gave the
        turn); a memory extracted from the turn lists that key among its ``source_ids``."""
        return self.source_ids[0] if self.file == EPISODIC and self.source_ids else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "user_id": self.user_id,
            "memory_type": self.memory_type.value,
            "kind": self.kind,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "importance": self.importance,
            "confidence": self.confidence,
            "access_count": self.access_count,
            "last_accessed_at": self.last_accessed_at.isoformat() if self.last_accessed_at else None,
            "is_active": self.is_active,
            "structured_data": dict(self.structured_data),
            "source_ids": list(self.source_ids),
            "agent_id": self.agent_id,
            "source_session_id": self.source_session_id,
            "superseded_by": self.superseded_by,
            "file": self.file,
            "context": self.context,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MemoryRecord":
        def ts(v: Any) -> datetime | None:
            if v in (None, ""):
                return None
            t = datetime.fromisoformat(str(v))
            return t if t.tzinfo else t.replace(tzinfo=timezone.utc)

        return cls(
            id=str(d["id"]),
            user_id=str(d.get("user_id", "default")),
            memory_type=MemoryType.parse(d.get("memory_type", "note")),
            content=str(d["content"]),
            created_at=ts(d.get("created_at")) or utcnow(),
            updated_at=ts(d.get("updated_at")) or ts(d.get("created_at")) or utcnow(),
            importance=float(d.get("importance", 0.5)),
            confidence=float(d.get("confidence", 1.0)),
            access_count=int(d.get("access_count", 0)),
            last_accessed_at=ts(d.get("last_accessed_at")),
            is_active=bool(d.get("is_active", True)),
            structured_data=dict(d.get("structured_data") or {}),
            source_ids=tuple(str(s) for s in (d.get("source_ids") or ())),
            agent_id=d.get("agent_id"),
            source_session_id=d.get("source_session_id"),
            superseded_by=d.get("superseded_by"),
            file=str(d.get("file", FILE_MEMORY)),
            context=str(d.get("context", "")),
        )


@dataclass(frozen=True)
class SearchHit:
    record: MemoryRecord
    score: float
    similarity: float
    keyword_score: float = 0.0
    vector_score: float = 0.0
    relevance: float = 1.0  # calibrated, absolute (engine/read/relevance.py); hits below min_score are dropped
    # search(related=True): the memories related to this one (relation, direction, strength, id, content)
    related: tuple[dict[str, Any], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = self.record.to_dict()
        d.update(score=round(self.score, 6), similarity=round(self.similarity, 6), relevance=round(self.relevance, 4))
        if self.related is not None:
            d["related"] = [dict(r) for r in self.related]
        return d


@dataclass(frozen=True)
class DailyNote:
    date: str  # YYYY-MM-DD
    path: str  # relative to the user folder
    text: str


@dataclass(frozen=True)
class Retrieval:
    """What the read path returns: ranked memories plus recent daily notes.

    With no query, ``full_text`` holds the whole MEMORY.md."""

    hits: tuple[SearchHit, ...]
    recent_notes: tuple[DailyNote, ...] = ()
    full_text: str | None = None


@dataclass(frozen=True)
class HistoryEntry:
    memory_id: str
    user_id: str
    action: str  # add | update | merge | replace | archive | delete | forget | edit
    at: datetime
    old_content: str | None = None
    new_content: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "user_id": self.user_id,
            "action": self.action,
            "at": self.at.isoformat(),
            "old_content": self.old_content,
            "new_content": self.new_content,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    timestamp: datetime | None = None
    turn_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class AddResult:
    """What one ``add`` call did."""

    added: tuple[MemoryRecord, ...] = ()
    merged: tuple[MemoryRecord, ...] = ()  # existing records that absorbed a near-duplicate
    skipped: tuple[str, ...] = ()  # reasons, one per ignored piece of input
    refused: tuple[str, ...] = ()  # reasons, one per refused piece of input (secrets)
    warnings: tuple[str, ...] = ()  # what went wrong but lost nothing (an LLM failure: content kept as a note)
    forgotten: tuple[MemoryRecord, ...] = ()  # memories deleted because the input asked to forget them
    redacted: tuple[str, ...] = ()  # pieces of input stored with their secrets replaced by "[redacted]"
    completed: tuple[MemoryRecord, ...] = ()  # open todos closed because the input said they are done

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": [r.to_dict() for r in self.added],
            "merged": [r.to_dict() for r in self.merged],
            "skipped": list(self.skipped),
            "refused": list(self.refused),
            "warnings": list(self.warnings),
            "forgotten": [r.to_dict() for r in self.forgotten],
            "redacted": list(self.redacted),
            "completed": [r.to_dict() for r in self.completed],
        }
