"""The LLM steps of the write path (SPEC §4.2 and §4.4), used by ``WritePath`` when an LLM is
configured: one extraction call per ``add``, at most one merge decision per similar memory,
a cap on calls per operation, and the token usage recorded per operation."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from .. import prompts
from ..models import MemoryRecord, MemoryType
from ..providers.chat import ChatModel, make_chat_model
from . import merge
from . import records as rec
from .llm_calls import LLMCalls, record_usage, usage_stats
from .llm_extract import Extraction, SourceTurns, extract, transcript
from .store import UserStore, daily_file

if TYPE_CHECKING:
    from ..config import LLMSettings
    from ..index.base import Index

log = logging.getLogger("memfold")
DEFAULT_MAX_CALLS = 8
Decisions = dict[int, tuple[merge.MergeDecision, "np.ndarray | None"]]


class LLMWriteSteps:
    """``llm``: the ``[llm]`` settings (the chat model is made from them), a ready ``ChatModel``,
    or None for the deterministic write path."""

    def __init__(self, llm: "LLMSettings | ChatModel | None", max_calls: int | None = None):
        if llm is None or isinstance(llm, ChatModel):
            self.chat: ChatModel | None = llm
            self.max_calls = max_calls or DEFAULT_MAX_CALLS
        else:
            self.chat = make_chat_model(llm)
            self.max_calls = max_calls or llm.max_calls_per_operation
        if self.max_calls < 1:
            from ..errors import ConfigError

            raise ConfigError(f"setting [llm] max_calls_per_operation must be at least 1, got {self.max_calls}")

    def begin(self) -> LLMCalls | None:
        """The call budget of one operation, or None when no LLM is configured."""
        return LLMCalls(self.chat, self.max_calls) if self.chat is not None else None

    def extract(self, calls: LLMCalls, source: SourceTurns, *, default_language: str, today: str) -> Extraction:
        text = transcript(source.turns)
        lang = prompts.language_of("\n".join(source.user_text), default_language)
        return extract(calls, text, language=lang, today=today)

    def decide(self, calls: LLMCalls, store: UserStore, user_id: str, records: Sequence[MemoryRecord],
               vecs: np.ndarray, threshold: float, skip: set[int]) -> Decisions:
        """Merge decisions for candidates near an existing memory, asked before the workspace
        lock is taken; the locked write re-checks that the existing memory did not change."""
        near = store.index.vector_search_many(user_id, vecs, 3, min_score=threshold)
        ids = sorted({mid for row in near for mid, s in row if s >= threshold})
        existing = {r.id: r for r in store.index.get(user_id, ids)}
        decided = merge.decide_all(calls, records, vecs, near, existing, threshold, store.space.language, skip)
        merged = {i: merge.merged_record(existing[d.old_id], records[i], d)
                  for i, d in decided.items() if d.action == "merge"}
        vectors = {}
        if merged:
            keys = sorted(merged)
            embedded = store.embedder.embed([rec.embed_text(merged[k]) for k in keys])
            vectors = {k: embedded[n] for n, k in enumerate(keys)}
        return {i: (d, vectors.get(i)) for i, d in decided.items()}

    @staticmethod
    def decision_for(i: int, twin: MemoryRecord, decisions: Decisions | None
                     ) -> tuple[merge.MergeDecision, np.ndarray | None]:
        if decisions is None:  # no LLM configured: the deterministic rule
            return merge.NEWEST_WINS, None
        got = decisions.get(i)
        if got is not None and got[0].applies_to(twin):
            return got
        return merge.keep_both("no LLM decision for this pair (changed meanwhile, or one call per memory)", twin), None

    @staticmethod
    def finish(store: UserStore, user_id: str, calls: LLMCalls | None, operation: str = "add") -> None:
        if calls is not None and calls.calls:
            record_usage(store.index, user_id, operation, calls, lock=store.space.lock)

    @staticmethod
    def usage(index: "Index", user_id: str) -> dict:
        return usage_stats(index, user_id)


def note_records(source: SourceTurns, when: datetime, limit: int) -> list[tuple[MemoryType, str, str]]:
    """(type, content, file) of the notes that keep a conversation whose extraction failed:
    what the user said, in chunks of at most ``limit`` characters, in the day's note file."""
    chunks: list[str] = []
    current = ""
    for line in source.user_text:
        while len(line) > limit:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(line[:limit])
            line = line[limit:]
        if current and len(current) + 1 + len(line) > limit:
            chunks.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        chunks.append(current)
    return [(MemoryType.NOTE, c, daily_file(when)) for c in chunks]

