"""The write path without an LLM (SPEC §4): input → guard → extraction → dedupe → persist."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..errors import InvalidInputError, SecretRefusedError
from ..models import EPISODIC, AddResult, HistoryEntry, MemoryRecord, MemoryType, Message, utcnow
from ..policy import Policy
from ..text import extraction
from ..text.memory_markdown import clean_content
from ..text.secrets import find_secret
from . import records as rec
from .store import UserStore, file_for

log = logging.getLogger("memfold")
MAX_CONTENT_CHARS = 20_000
USER_ROLES = {"user", "human"}
DEFAULT_IMPORTANCE = {MemoryType.PREFERENCE: 0.7, MemoryType.TODO: 0.7, MemoryType.FACT: 0.6, MemoryType.SKILL: 0.7}


@dataclass(frozen=True)
class Candidate:
    record: MemoryRecord
    origin: str  # "text" | "turn" | "extracted"


def parse_messages(data: Sequence[Any]) -> list[Message]:
    out: list[Message] = []
    for i, m in enumerate(data):
        if isinstance(m, Message):
            out.append(m)
            continue
        if not isinstance(m, dict):
            raise InvalidInputError(f"message {i} must be an object with 'role' and 'content', got {type(m).__name__}")
        role, content = m.get("role"), m.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InvalidInputError(f"message {i} needs string fields 'role' and 'content'")
        ts = m.get("timestamp") or m.get("created_at")
        when = None
        if isinstance(ts, datetime):
            when = ts
        elif ts:
            try:
                when = datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
            except ValueError:
                raise InvalidInputError(f"message {i}: timestamp {ts!r} is not ISO 8601") from None
        if when is not None and when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        tid = m.get("turn_id") or m.get("id") or m.get("dia_id")
        out.append(Message(role=role.lower(), content=content, timestamp=when,
                           turn_id=str(tid) if tid is not None else None, name=m.get("name") or m.get("speaker")))
    return out


class WritePath:
    def __init__(self, store: Callable[[str], UserStore], policy: Callable[[str], Policy]):
        self._store = store
        self._policy = policy

    def add(self, data: str | Sequence[Any], user_id: str, *, memory_type: str | MemoryType | None = None,
            importance: float | None = None, agent_id: str | None = None, session_id: str | None = None,
            structured_data: dict[str, Any] | None = None, infer: bool = True,
            source_ids: Sequence[str] = ()) -> AddResult:
        if importance is not None and not (0.0 <= float(importance) <= 1.0):
            raise InvalidInputError(f"importance must be between 0 and 1, got {importance}")
        mtype = MemoryType.parse(memory_type) if memory_type is not None else None
        now = utcnow()
        skipped: list[str] = []
        refused: list[str] = []
        cands: list[Candidate] = []
        if isinstance(data, str):
            text = clean_content(data)
            if not text:
                return AddResult(skipped=("empty content",))
            self._check_size(text)
            kind = find_secret(text)
            if kind:
                raise SecretRefusedError(f"refused: the text contains a {kind}; secrets are never stored")
            t, data_rules = extraction.classify(text) if mtype is None else (mtype, {})
            cands.append(Candidate(self._record(
                user_id, t, text, now, importance if importance is not None else DEFAULT_IMPORTANCE.get(t, 0.5),
                structured_data or data_rules, tuple(source_ids), agent_id, session_id), "text"))
        else:
            messages = parse_messages(data)
            prev = ""
            for i, m in enumerate(messages):
                text = clean_content(m.content)
                label = m.turn_id or f"message {i}"
                if not text:
                    skipped.append(f"{label}: empty")
                    continue
                kind = find_secret(text)
                if kind:
                    refused.append(f"{label}: contains a {kind}; not stored")
                    prev = ""
                    continue
                self._check_size(text)
                when = m.timestamp or now
                src = (m.turn_id,) if m.turn_id else tuple(source_ids)
                if m.role in USER_ROLES:
                    speaker = f"{m.name}: " if m.name else ""
                    context = f"{when.date().isoformat()} {prev}\n{speaker}".strip() if prev else \
                        f"{when.date().isoformat()} {speaker}".strip()
                    cands.append(Candidate(self._record(
                        user_id, MemoryType.EVENT, text, when, importance if importance is not None else 0.3,
                        {"role": m.role, **({"speaker": m.name} if m.name else {})}, src, agent_id, session_id,
                        file=EPISODIC, context=context), "turn"))
                    if infer:
                        for ex in extraction.extract(text):
                            t = mtype or ex.memory_type
                            cands.append(Candidate(self._record(
                                user_id, t, ex.content, when, importance if importance is not None else ex.importance,
                                ex.structured_data, src, agent_id, session_id), "extracted"))
                prev = (f"{m.name}: " if m.name else "") + text
        if not cands:
            return AddResult(skipped=tuple(skipped), refused=tuple(refused))
        added, merged = self._dedupe_and_persist(user_id, cands)
        return AddResult(added=tuple(added), merged=tuple(merged), skipped=tuple(skipped), refused=tuple(refused))

    @staticmethod
    def _check_size(text: str) -> None:
        if len(text) > MAX_CONTENT_CHARS:
            raise InvalidInputError(
                f"content of {len(text)} characters is longer than the limit of {MAX_CONTENT_CHARS}; split it first")

    @staticmethod
    def _record(user_id: str, t: MemoryType, content: str, when: datetime, importance: float,
                data: dict[str, Any], src: tuple[str, ...], agent_id: str | None, session_id: str | None,
                file: str | None = None, context: str = "") -> MemoryRecord:
        r = MemoryRecord(id=rec.new_id(), user_id=user_id, memory_type=t, content=content, created_at=when,
                         updated_at=when, importance=float(importance), structured_data=dict(data), source_ids=src,
                         agent_id=agent_id, source_session_id=session_id, file="", context=context)
        return r.with_(file=file if file is not None else file_for(r))

    def _dedupe_and_persist(self, user_id: str, cands: list[Candidate]) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        store = self._store(user_id)
        vecs = store.embedder.embed([rec.index_text(c.record) for c in cands])
        with store.space.lock:  # the duplicate check and the write must see the same state
            store.sync()
            return self._persist_locked(user_id, store, cands, vecs)

    def _persist_locked(self, user_id: str, store: UserStore, cands: list[Candidate], vecs: np.ndarray
                        ) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        threshold = self._policy(user_id).dedupe_threshold
        near = store.index.vector_search_many(user_id, vecs, 3)
        hit_ids = sorted({mid for row in near for mid, s in row if s >= threshold})
        existing = {r.id: r for r in store.index.get(user_id, hit_ids)}
        keep: list[int] = []
        updates: dict[str, MemoryRecord] = {}
        replaced: list[tuple[MemoryRecord, int]] = []
        for i, c in enumerate(cands):
            episodic = c.record.file == EPISODIC
            twin = None
            for mid, s in near[i]:
                old = updates.get(mid) or existing.get(mid)
                if s >= threshold and old is not None and old.is_active and (old.file == EPISODIC) == episodic:
                    twin = old
                    break
            if twin is None:  # also look among the earlier candidates of this call
                for j in keep:
                    if (cands[j].record.file == EPISODIC) == episodic and float(vecs[i] @ vecs[j]) >= threshold:
                        twin = cands[j].record
                        break
                if twin is not None and twin.content.strip().lower() != c.record.content.strip().lower() \
                        and not episodic:
                    keep.append(i)  # a near-duplicate with different words within one call: keep both
                    continue
                if twin is not None:
                    j = next(j for j in keep if cands[j].record.id == twin.id)
                    cands[j] = Candidate(_absorb(cands[j].record, c.record), cands[j].origin)
                    continue
                keep.append(i)
                continue
            same_words = twin.content.strip().lower() == c.record.content.strip().lower()
            if episodic or same_words:
                updates[twin.id] = _absorb(updates.get(twin.id, twin), c.record)
            else:  # the deterministic rule: a changed near-duplicate replaces the old one (newest wins)
                replaced.append((twin, i))
                keep.append(i)
        new_records = [cands[i].record for i in keep]
        history = [HistoryEntry(r.id, user_id, "add", utcnow(), None, r.content,
                                {"type": r.memory_type.value, "file": r.file or "index", "origin": cands[i].origin})
                   for i, r in zip(keep, new_records)]
        store.append(new_records, vecs[keep] if keep else np.zeros((0, vecs.shape[1]), np.float32), history)
        merged: list[MemoryRecord] = []
        for mid, new in updates.items():
            old = existing[mid]
            if new.file == EPISODIC:
                store.index.upsert([rec.item(new, None)])
                store.index.append_history([HistoryEntry(mid, user_id, "merge", utcnow(), old.content, new.content,
                                                         {"source_ids": list(new.source_ids), "rule": "duplicate"})])
            else:
                store.rewrite(old, new, "merge", {"source_ids": list(new.source_ids), "rule": "duplicate"})
            merged.append(new)
        for old, i in replaced:
            newer = cands[i].record
            store.archive(old, newer.id, {"rule": "newest wins", "similar_to": newer.id})
            store.index.add_relation(user_id, newer.id, old.id, "contradicts", 1.0)
        return new_records, merged


def _absorb(keep: MemoryRecord, dup: MemoryRecord) -> MemoryRecord:
    src = tuple(dict.fromkeys(keep.source_ids + dup.source_ids))
    return keep.with_(source_ids=src, importance=max(keep.importance, dup.importance), updated_at=utcnow())
