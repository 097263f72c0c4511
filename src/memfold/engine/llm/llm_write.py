"""The LLM steps of the write path (SPEC §4.2), used by ``WritePath`` when an LLM is
configured: one extraction call per ``add``, a cap on calls per operation (merge decisions:
``merge.LlmDecider``), and the token usage recorded per operation."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from ... import prompts
from ...models import MemoryType
from ...providers.chat import ChatModel, make_chat_model
from ..storage.store import UserStore, daily_file
from .llm_calls import LLMCalls, record_usage, usage_stats
from .llm_extract import Extraction, SourceTurns, extract, transcript

if TYPE_CHECKING:
    from ...config import LLMSettings
    from ...index.base import Index

log = logging.getLogger("memfold")
DEFAULT_MAX_CALLS = 8


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
            from ...errors import ConfigError

            raise ConfigError(f"setting [llm] max_calls_per_operation must be at least 1, got {self.max_calls}")

    def begin(self) -> LLMCalls | None:
        """The call budget of one operation, or None when no LLM is configured."""
        return LLMCalls(self.chat, self.max_calls) if self.chat is not None else None

    def extract(self, calls: LLMCalls, source: SourceTurns, *, default_language: str, today: str) -> Extraction:
        text = transcript(source.turns)
        lang = prompts.language_of("\n".join(source.user_text), default_language)
        return extract(calls, text, language=lang, today=today)

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

