"""LLM extraction (seed 003 §4.1 ``_llm_extract_memories``): typed memories from a conversation
or its summary, with the seed's fields ``memory_type``, ``content``, ``structured_data`` and
``importance_score``.

The answer may be a bare JSON array or an object with a ``memories`` array. It is validated;
an invalid answer is sent back once with the validation error; when the second answer is
invalid too, or the endpoint fails, ``Extraction.error`` says why and the caller keeps the
source text as a note. Everything sent is passed through ``redact`` first."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ... import prompts
from ...errors import ProviderError
from ...models import MemoryType
from ...text.extraction import Extracted
from ...text.memory_markdown import clean_content
from ...text.secrets import a_kind, redact, redact_data, screen
from .llm_calls import LLMCalls, parse_json_answer

log = logging.getLogger("memfold")
MAX_MEMORY_CHARS = 4000
MAX_SOURCE_CHARS = 60_000  # longer sources are cut at the start (the newest turns are kept)
TYPES = tuple(t.value for t in MemoryType)
DEFAULT_IMPORTANCE = 0.5

EXTRACT_SCHEMA: dict[str, Any] = {
    "title": "memories",
    "type": "object",
    "properties": {"memories": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "memory_type": {"type": "string", "enum": list(TYPES)},
            "content": {"type": "string"},
            "structured_data": {"type": "object"},
            "importance_score": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["memory_type", "content", "structured_data", "importance_score"],
    }}},
    "required": ["memories"],
}


class InvalidAnswer(ValueError):
    """The model's answer does not have the expected shape; the message says what is wrong."""


@dataclass(frozen=True)
class Extraction:
    memories: tuple[Extracted, ...] = ()
    refused: tuple[str, ...] = ()  # answer items dropped because they held a secret
    error: str | None = None  # why nothing could be extracted (the caller keeps the source as a note)
    language: str = "en"
    calls: int = 0


@dataclass
class Turn:
    speaker: str  # "User", "Assistant" or a name
    text: str
    when: str = ""  # ISO date, optional


def transcript(turns: Sequence[Turn]) -> str:
    """The conversation as plain lines, secrets redacted, cut to ``MAX_SOURCE_CHARS``."""
    lines = [f"[{t.when}] {t.speaker}: {redact(t.text)}" if t.when else f"{t.speaker}: {redact(t.text)}"
             for t in turns]
    text = "\n".join(lines)
    if len(text) > MAX_SOURCE_CHARS:
        text = "…\n" + text[-MAX_SOURCE_CHARS:].split("\n", 1)[-1]
    return text


def validate(payload: Any) -> tuple[list[Extracted], list[str]]:
    """Memories from a parsed answer, and the reasons for items refused as secrets.
    Raises InvalidAnswer naming the first problem."""
    if isinstance(payload, dict) and "memories" in payload:
        items = payload["memories"]
        if not isinstance(items, list):
            raise InvalidAnswer(f"'memories' must be an array, got {type(items).__name__}")
    elif isinstance(payload, dict) and "memory_type" in payload:
        items = [payload]
    elif isinstance(payload, list):
        items = payload
    else:
        raise InvalidAnswer("expected a JSON array of memories or an object with a 'memories' array, "
                            f"got {type(payload).__name__}")
    out: list[Extracted] = []
    refused: list[str] = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise InvalidAnswer(f"memory {n} must be an object, got {type(item).__name__}")
        raw_type = item.get("memory_type")
        if not isinstance(raw_type, str) or raw_type.strip().lower() not in TYPES:
            raise InvalidAnswer(f"memory {n}: memory_type {raw_type!r} is not one of {', '.join(TYPES)}")
        content = item.get("content")
        if not isinstance(content, str) or not clean_content(content):
            raise InvalidAnswer(f"memory {n}: content must be a non-empty string")
        content = clean_content(content)
        if len(content) > MAX_MEMORY_CHARS:
            raise InvalidAnswer(f"memory {n}: content has {len(content)} characters, more than {MAX_MEMORY_CHARS}")
        data = item.get("structured_data")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InvalidAnswer(f"memory {n}: structured_data must be an object, got {type(data).__name__}")
        importance = item.get("importance_score", DEFAULT_IMPORTANCE)
        try:
            if isinstance(importance, bool):
                raise ValueError
            importance = float(importance)
        except (TypeError, ValueError):
            raise InvalidAnswer(f"memory {n}: importance_score must be a number, got {importance!r}") from None
        if not 0.0 <= importance <= 1.0:
            raise InvalidAnswer(f"memory {n}: importance_score {importance} is not between 0 and 1")
        screened = screen(content)  # the model saw redacted text; a secret here is guarded all the same
        if screened.mostly_secret:
            refused.append(f"an extracted memory contained {a_kind(screened.kinds[0])}; not stored")
            continue
        out.append(Extracted(MemoryType.parse(raw_type), screened.text, importance, redact_data(data)))
    return out, refused


def extract(calls: LLMCalls, source: str, *, language: str, today: str) -> Extraction:
    """One extraction call (plus one retry when the answer is invalid) over ``source``, which is
    a transcript or a summary. Never raises for endpoint failures: see ``Extraction.error``."""
    lang = language if language in prompts.LANGUAGES else "en"
    source = redact(source)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompts.render("system", lang)},
        {"role": "user", "content": prompts.render("extract", lang, conversation=source, today=today)},
    ]
    error = ""
    for attempt in (1, 2):
        try:
            result = calls.complete(messages, purpose="extract", json_schema=EXTRACT_SCHEMA)
        except ProviderError as exc:
            log.warning("LLM extraction failed: %s", redact(str(exc)))
            return Extraction(error=f"LLM extraction failed: {redact(str(exc))}", language=lang, calls=attempt)
        try:
            memories, refused = validate(parse_json_answer(result.text))
        except ValueError as exc:
            error = redact(str(exc))  # the message may quote the answer
            calls.failed()
            log.warning("LLM extraction answer %d/2 is invalid: %s", attempt, error)
            messages = messages[:2] + [
                {"role": "assistant", "content": redact(result.text[:MAX_MEMORY_CHARS])},
                {"role": "user", "content": prompts.render("extract_retry", lang, error=error, types=", ".join(TYPES))},
            ]
            continue
        return Extraction(tuple(memories), tuple(refused), None, lang, attempt)
    return Extraction(error=f"LLM extraction answer invalid after a retry: {error}", language=lang, calls=2)


@dataclass
class SourceTurns:
    """The accepted turns of one ``add``, for the transcript and the fallback note."""

    turns: list[Turn] = field(default_factory=list)
    user_text: list[str] = field(default_factory=list)  # what the user said, in order

    def add(self, speaker: str, text: str, when: str, is_user: bool) -> None:
        self.turns.append(Turn(speaker, text, when))
        if is_user:
            self.user_text.append(f"{speaker}: {text}" if speaker not in ("User", "用户") else text)
