"""LLM calls of one operation: a cap on their number, token usage, and its record.

Every engine call to the chat model goes through an ``LLMCalls`` made for one operation
(one ``add``). It refuses calls beyond ``[llm] max_calls_per_operation`` and sums the token
usage the endpoint reports; ``record_usage`` adds the sums to the namespace's usage
document (index state, kind ``usage``), which ``memfold stats`` shows."""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ...errors import ProviderError
from ...index.base import Index
from ...models import utcnow
from ...providers.chat import ChatModel, ChatResult
from ...text.memory_markdown import clean_content
from ...text.secrets import a_kind, find_secret

log = logging.getLogger("memfold")
USAGE_KIND, USAGE_KEY = "usage", "llm"
RECENT_OPERATIONS = 20
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
_usage_lock = threading.Lock()


class CallCapReached(ProviderError):
    """The operation already made ``[llm] max_calls_per_operation`` LLM calls."""


@dataclass
class LLMCalls:
    chat: ChatModel
    max_calls: int
    calls: int = 0
    failures: int = 0
    by_purpose: dict[str, int] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KEYS, 0))

    def complete(self, messages: list[dict[str, Any]], *, purpose: str,
                 json_schema: dict[str, Any] | None = None, temperature: float = 0.3) -> ChatResult:
        if self.calls >= self.max_calls:
            raise CallCapReached(f"the cap of {self.max_calls} LLM calls per operation is reached "
                                 "([llm] max_calls_per_operation)")
        self.calls += 1
        self.by_purpose[purpose] = self.by_purpose.get(purpose, 0) + 1
        try:
            result = self.chat.complete(messages, json_schema=json_schema, temperature=temperature)
        except ProviderError:
            self.failures += 1
            raise
        for k in TOKEN_KEYS:
            self.usage[k] += int(result.usage.get(k, 0))
        return result

    def failed(self) -> None:
        """Count an answer that was received but could not be used."""
        self.failures += 1


def record_usage(index: Index, user_id: str, operation: str, calls: LLMCalls, lock: Any = None) -> None:
    """Add one operation's calls and tokens to the namespace's usage document (``lock``: the
    namespace's workspace lock, so that processes do not lose each other's counts)."""
    if not calls.calls:
        return
    entry: dict[str, Any] = {"operation": operation, "at": utcnow().isoformat(), "calls": calls.calls, "failures": calls.failures,
             "purposes": dict(calls.by_purpose), **calls.usage}
    with _usage_lock, (lock if lock is not None else _nolock()):
        doc = index.get_state(user_id, USAGE_KIND, USAGE_KEY) or {}
        totals = doc.get("totals") or {}
        for k in ("operations", "calls", "failures", *TOKEN_KEYS):
            totals[k] = int(totals.get(k, 0)) + (1 if k == "operations" else int(entry.get(k, 0)))
        by_op = doc.get("by_operation") or {}
        op = by_op.setdefault(operation, {})
        for k in ("operations", "calls", *TOKEN_KEYS):
            op[k] = int(op.get(k, 0)) + (1 if k == "operations" else int(entry.get(k, 0)))
        recent = (doc.get("recent") or [])[-(RECENT_OPERATIONS - 1):] + [entry]
        index.put_state(user_id, USAGE_KIND, USAGE_KEY, {"totals": totals, "by_operation": by_op, "recent": recent})


def usage_stats(index: Index, user_id: str) -> dict[str, Any]:
    """Totals and per-operation sums of LLM calls and tokens (zeros when none were made)."""
    doc = index.get_state(user_id, USAGE_KIND, USAGE_KEY) or {}
    totals = {k: 0 for k in ("operations", "calls", "failures", *TOKEN_KEYS)}
    totals.update(doc.get("totals") or {})
    recent = doc.get("recent") or []
    return {**totals, "by_operation": doc.get("by_operation") or {}, "last": recent[-1] if recent else None}


class _nolock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.S)


def parse_json_answer(text: str) -> Any:
    """The JSON value in a model's answer: reasoning tags and code fences are taken off, and
    text around one JSON object or array is ignored. ValueError says what is wrong."""
    body = _THINK.sub("", text).strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ValueError("the answer is empty")
    try:
        return json.loads(body)
    except json.JSONDecodeError as first:
        starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
        if starts:
            start = min(starts)
            end = body.rfind("}" if body[start] == "{" else "]")
            if end > start:
                try:
                    return json.loads(body[start: end + 1])
                except json.JSONDecodeError:
                    pass
        raise ValueError(f"the answer is not valid JSON ({first.msg} at line {first.lineno} "
                         f"column {first.colno})") from None


def answer_text(value: Any, what: str, max_chars: int) -> str:
    """A text an LLM answered for storing: cleaned like a bullet ("" when missing or not a string);
    ValueError naming ``what`` when it is longer than ``max_chars`` or holds a secret."""
    text = clean_content(value) if isinstance(value, str) else ""
    if len(text) > max_chars:
        raise ValueError(f"{what} has {len(text)} characters, more than {max_chars}")
    kind = find_secret(text)
    if kind:
        raise ValueError(f"{what} contains {a_kind(kind)}")
    return text
