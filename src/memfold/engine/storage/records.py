"""Conversions between memory-file entries, records and index items."""

from __future__ import annotations

import hashlib
import json
import re
import secrets as _secrets
from datetime import date, datetime, time, timezone
from typing import Any

import numpy as np

from ...index.base import IndexItem
from ...models import MemoryRecord, MemoryType
from ...text import memory_markdown as md
from ...text.terms import TermsMemo, fts_document, keyword_text

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id() -> str:
    """12 characters of a 32-letter alphabet: 60 random bits (one system call, not twelve)."""
    n = int.from_bytes(_secrets.token_bytes(8), "little")
    return "".join(_ALPHABET[(n >> (5 * k)) & 31] for k in range(12))


def meta_of(r: MemoryRecord, section: str) -> dict[str, Any]:
    """Fields a bullet cannot show, written into its id comment (only non-defaults)."""
    meta: dict[str, Any] = {}
    if md.DEFAULT_TYPE_OF_SECTION.get(section) is not r.memory_type:
        meta["type"] = r.memory_type.value
    if abs(r.importance - 0.5) > 1e-9:
        meta["importance"] = round(r.importance, 4)
    if abs(r.confidence - 1.0) > 1e-9:
        meta["confidence"] = round(r.confidence, 4)
    if r.source_ids:
        meta["src"] = list(r.source_ids)
    if r.structured_data:
        meta["data"] = r.structured_data
    if r.agent_id:
        meta["agent"] = r.agent_id
    if r.source_session_id:
        meta["session"] = r.source_session_id
    meta["at"] = r.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return meta


def render_record(r: MemoryRecord, lang: str) -> list[str]:
    section = md.SECTION_OF_TYPE[r.memory_type] if r.file in ("MEMORY.md", "learnings.md") else "daily"
    day = r.created_at.date().isoformat()
    if section == "daily":
        day = r.created_at.strftime("%Y-%m-%d %H:%M")
    return md.render(r.id, day, r.content, meta_of(r, section), lang)


def _parse_ts(v: Any) -> datetime | None:
    if not isinstance(v, str):
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def record_from_entry(e: md.Entry, entry_id: str, user_id: str, file: str, fallback_day: date | None) -> MemoryRecord:
    meta = e.meta
    created = _parse_ts(meta.get("at"))
    if created is None:
        day = fallback_day
        if e.date:
            try:
                day = date.fromisoformat(e.date)
            except ValueError:
                day = fallback_day
        created = datetime.combine(day or datetime.now(timezone.utc).date(), time(0), tzinfo=timezone.utc)
    mtype = MemoryType.NOTE if not file.endswith(".md") or file.startswith("memory/") else e.memory_type
    if file.startswith("memory/") and "type" in meta:
        mtype = e.memory_type

    def num(key: str, default: float) -> float:
        try:
            v = float(meta.get(key, default))
        except (TypeError, ValueError):
            return default
        return min(1.0, max(0.0, v))

    src = meta.get("src") or []
    data = meta.get("data") or {}
    return MemoryRecord(
        id=entry_id, user_id=user_id, memory_type=mtype, content=e.content, created_at=created, updated_at=created,
        importance=num("importance", 0.5), confidence=num("confidence", 1.0),
        structured_data=data if isinstance(data, dict) else {},
        source_ids=tuple(str(s) for s in src) if isinstance(src, list) else (),
        agent_id=meta.get("agent") if isinstance(meta.get("agent"), str) else None,
        source_session_id=meta.get("session") if isinstance(meta.get("session"), str) else None,
        file=file,
    )


_HASH_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)  # json.dumps(…) with these, made once


def content_hash(r: MemoryRecord) -> str:
    """Hash of what a file holds for a record; a hand edit changes it."""
    payload = _HASH_JSON.encode([r.memory_type.value, r.content, r.importance, r.confidence, list(r.source_ids),
                                 r.structured_data, r.agent_id])
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()


def index_text(r: MemoryRecord) -> str:
    """The text that is keyword-indexed: the content plus its context."""
    return keyword_text(r.content, r.context)


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2} ")


def embed_text(r: MemoryRecord) -> str:
    """The text that is embedded: ``index_text`` without the ISO form of the day that starts a
    turn's context (the context also names the day in words). Digits are costly for the model
    (4 of a bench turn's 46 tokens) and measured neutral for it: LoCoMo R@1/5/10/20 0.3919/0.6594/
    0.7575/0.8075 without against 0.3904/0.6667/0.7566/0.8069 with (docs/benchmarks.md)."""
    text = index_text(r)
    return text[11:] if r.context and _ISO_DAY.match(r.context) else text


def item(r: MemoryRecord, vector: np.ndarray | None, memo: TermsMemo | None = None) -> IndexItem:
    """The index row of ``r``; ``memo``: the terms of the batch's texts so far (a batch of turns)."""
    terms = memo.document(r.content, r.context) if memo is not None else fts_document(index_text(r))
    return IndexItem(record=r, vector=vector, terms=terms, content_hash=content_hash(r))
