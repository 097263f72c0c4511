"""Merge decisions for near-duplicates (seed 003 ``_merge_or_update``, SPEC §4.4).

When a new memory is similar to an existing one (cosine ≥ ``dedupe_threshold``) and its words
differ, the LLM answers ``{"action": "replace|merge|keep_both", "reason", "merged_content"}``.
``replace`` and ``merge`` archive the old record (``superseded_by``) and relate the two
(``contradicts`` / ``refines``). Without an LLM the deterministic rule applies: the newest wins.
When the LLM fails or answers nonsense, both are kept: nothing stored changes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import prompts
from ..errors import ProviderError
from ..models import EPISODIC, MemoryRecord
from ..text.memory_markdown import clean_content
from ..text.secrets import a_kind, find_secret, redact
from .llm_calls import LLMCalls, parse_json_answer

log = logging.getLogger("memfold")
ACTIONS = ("replace", "merge", "keep_both")
MAX_MERGED_CHARS = 4000

MERGE_SCHEMA: dict[str, Any] = {
    "title": "merge_decision",
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "reason": {"type": "string"},
        "merged_content": {"type": "string"},
    },
    "required": ["action", "reason"],
}


@dataclass(frozen=True)
class MergeDecision:
    action: str  # replace | merge | keep_both
    rule: str  # "llm", "newest wins", or why the LLM could not decide
    reason: str = ""
    merged_content: str = ""
    old_id: str = ""  # the existing record the decision is about
    old_content: str = ""

    @property
    def relation(self) -> str:
        return {"replace": "contradicts", "merge": "refines"}.get(self.action, "")

    def applies_to(self, old: MemoryRecord) -> bool:
        """False when the existing record changed since the LLM saw it."""
        return self.old_id == old.id and self.old_content == old.content


NEWEST_WINS = MergeDecision("replace", "newest wins")


def keep_both(rule: str, old: MemoryRecord | None = None) -> MergeDecision:
    return MergeDecision("keep_both", rule, old_id=old.id if old else "", old_content=old.content if old else "")


def parse_decision(text: str) -> tuple[str, str, str]:
    """(action, reason, merged_content) from an answer; ValueError says what is wrong."""
    data = parse_json_answer(text)
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    action = str(data.get("action", "")).strip().lower().replace("-", "_").replace(" ", "_")
    if action not in ACTIONS:
        raise ValueError(f"action {data.get('action')!r} is not one of {', '.join(ACTIONS)}")
    reason = data.get("reason")
    reason = redact(reason.strip()) if isinstance(reason, str) else ""  # kept in the history
    merged = data.get("merged_content")
    merged = clean_content(merged) if isinstance(merged, str) else ""
    if action == "merge":
        if not merged:
            raise ValueError("action 'merge' needs a non-empty merged_content")
        if len(merged) > MAX_MERGED_CHARS:
            raise ValueError(f"merged_content has {len(merged)} characters, more than {MAX_MERGED_CHARS}")
        kind = find_secret(merged)
        if kind:
            raise ValueError(f"merged_content contains {a_kind(kind)}")
    return action, reason, merged if action == "merge" else ""


def decide(calls: LLMCalls, old: MemoryRecord, new: MemoryRecord, language: str) -> MergeDecision:
    """Ask the LLM once what to do with ``new`` given the similar ``old``."""
    lang = language if language in prompts.LANGUAGES else "en"
    messages = [
        {"role": "system", "content": prompts.render("system", lang)},
        {"role": "user", "content": prompts.render("merge", lang, existing=redact(old.content),
                                                   new=redact(new.content))},
    ]
    try:
        result = calls.complete(messages, purpose="merge", json_schema=MERGE_SCHEMA)
    except ProviderError as exc:
        log.warning("LLM merge decision for %s failed (%s); both memories are kept", old.id, exc)
        return keep_both(f"LLM merge decision failed: {exc}", old)
    try:
        action, reason, merged = parse_decision(result.text)
    except ValueError as exc:
        calls.failed()
        problem = redact(str(exc))  # it may quote the answer
        log.warning("LLM merge decision for %s is unusable (%s); both memories are kept", old.id, problem)
        return keep_both(f"LLM merge answer unusable: {problem}", old)
    return MergeDecision(action, "llm", reason, merged, old.id, old.content)


def decide_all(calls: LLMCalls, cands: Sequence[MemoryRecord], vecs: np.ndarray,
               near: Sequence[Sequence[tuple[str, float]]], existing: dict[str, MemoryRecord],
               threshold: float, language: str, skip: set[int]) -> dict[int, MergeDecision]:
    """Decisions for every candidate whose nearest active file-backed memory is a changed
    near-duplicate; at most one LLM call per existing memory (the first candidate asks)."""
    out: dict[int, MergeDecision] = {}
    asked: set[str] = set()
    for i, new in enumerate(cands):
        if i in skip or new.file == EPISODIC:
            continue
        twin = next((existing[mid] for mid, s in near[i] if s >= threshold and mid in existing
                     and existing[mid].is_active and existing[mid].file != EPISODIC), None)
        if twin is None or twin.content.strip().lower() == new.content.strip().lower() or twin.id in asked:
            continue
        asked.add(twin.id)
        out[i] = decide(calls, twin, new, prompts.language_of(twin.content + "\n" + new.content, language))
    return out


def merged_record(old: MemoryRecord, new: MemoryRecord, decision: MergeDecision) -> MemoryRecord:
    """The new record carrying the merged content and what both sides knew."""
    return new.with_(content=decision.merged_content, importance=max(old.importance, new.importance),
                     source_ids=tuple(dict.fromkeys(old.source_ids + new.source_ids)),
                     structured_data={**old.structured_data, **new.structured_data},
                     confidence=(old.confidence + new.confidence) / 2)

