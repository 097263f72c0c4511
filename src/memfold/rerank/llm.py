"""The quality stage's LLM steps over any OpenAI-compatible chat endpoint (``OpenAIChatModel``):
a listwise re-ranking of the candidates in one call, and the split of a multi-part or time
question into sub-queries. Both ask for a JSON object and check it strictly (``answers.py``)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..errors import ProviderError, ProviderTimeout
from ..providers.chat import ChatModel
from .answers import MAX_SUBQUERIES, BadAnswer, llm_order, subqueries

CANDIDATE_CHARS = 400  # each candidate's text is cut to this for the prompt

RERANK_SYSTEM = (
    "You order memories by how much each helps to answer a question. The memories are numbered. "
    'Reply with a JSON object {"ranking": [numbers]} listing the numbers of the helpful memories, '
    "the most helpful first, each number at most once. Memories left out keep their order after the "
    "listed ones. Reply with the JSON object only.")
RERANK_SCHEMA: dict[str, Any] = {"title": "ranking", "type": "object", "required": ["ranking"],
                                 "properties": {"ranking": {"type": "array", "items": {"type": "integer"}}}}
REWRITE_SYSTEM = (
    "You prepare searches of a person's memories. When a question asks about several things, or about a "
    "period of time, write short search queries that together find what it needs: one per thing asked, "
    "with relative times (last week, 上个月) written as dates, counting from today's date given below. "
    f"At most {MAX_SUBQUERIES} queries, in the question's language. When the question asks one simple "
    'thing, reply with an empty list. Reply with a JSON object {"queries": [strings]} only.')
REWRITE_SCHEMA: dict[str, Any] = {"title": "queries", "type": "object", "required": ["queries"],
                                  "properties": {"queries": {"type": "array", "items": {"type": "string"}}}}

# the questions worth a rewrite call: several parts, or a time to resolve (English and Chinese)
_MULTI_OR_TIME = re.compile(
    r"\b(and|both|as well as|also|before|after|when|ago|last|since|between|first|latest|recent(ly)?|"
    r"yesterday|week|month|year|days?)\b|[和及与跟还]|以及|并且|之前|之后|以前|以后|上周|上个|去年|最近|什么时候|"
    r"哪天|几月|昨天|前天|多久|第一次|[?？].*[?？]", re.I)


def worth_rewriting(query: str) -> bool:
    """A question with several parts or a time to resolve (the others are searched as they are)."""
    return bool(_MULTI_OR_TIME.search(query))


def _call(chat: ChatModel, messages: list[dict[str, Any]], schema: dict[str, Any]) -> tuple[str, dict[str, int]]:
    try:
        result = chat.complete(messages, json_schema=schema, temperature=0.0)
    except ProviderTimeout as exc:
        raise BadAnswer("timeout", str(exc)) from None
    except ProviderError as exc:
        text = str(exc)
        raise BadAnswer("http_error" if "answered HTTP" in text else
                        "unreachable" if "unreachable" in text else "malformed", text) from None
    return result.text, dict(result.usage)


class LLMReranker:
    backend = "llm"

    def __init__(self, chat: ChatModel):
        self.chat = chat

    def close(self) -> None:
        close = getattr(self.chat, "close", None)
        if callable(close):
            close()

    def order(self, query: str, documents: list[str]) -> tuple[list[int], dict[str, int]]:
        listed = "\n".join(f"[{i + 1}] {' '.join(d.split())[:CANDIDATE_CHARS]}" for i, d in enumerate(documents))
        text, usage = _call(self.chat, [{"role": "system", "content": RERANK_SYSTEM},
                                        {"role": "user", "content": f"Question: {query}\n\nMemories:\n{listed}"}],
                            RERANK_SCHEMA)
        return llm_order(text, len(documents)), usage

    def rewrite(self, query: str, now: datetime) -> tuple[list[str], dict[str, int]]:
        text, usage = _call(self.chat, [{"role": "system", "content": REWRITE_SYSTEM},
                                        {"role": "user", "content": f"Today: {now.date().isoformat()} "
                                                                    f"({now:%A})\nQuestion: {query}"}],
                            REWRITE_SCHEMA)
        return subqueries(text, query), usage
