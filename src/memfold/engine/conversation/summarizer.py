"""Incremental conversation summaries (seed 004 §2, SPEC §7).

new summary = LLM(previous summary + the messages being folded) with the seed's progressive
prompt (``prompts/<lang>/summary.txt``); without an LLM, or when the LLM fails, a
deterministic extractive summary that prefers sentences with names, numbers, dates and the
user's stated preferences and commitments. Either way the result fits ``budget_tokens``."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ... import prompts
from ...errors import ProviderError
from ...models import MemoryType
from ...providers.chat import ChatModel
from ...text import extraction
from ...text.secrets import redact
from ...text.tokens import count_many, count_tokens, truncate_tokens

log = logging.getLogger("memfold")

ROLE_LABELS = {
    "en": {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"},
    "zh": {"user": "用户", "assistant": "助手", "system": "系统", "tool": "工具"},
}
_DIGIT = re.compile(r"\d|[一二三四五六七八九十百千万两]+(?:月|日|号|点|岁|年|个|次|天|周|元|块)")
_NAME_EN = re.compile(r"(?<=[a-z,;:]\s)[A-Z][a-zA-Z'-]+|\b[A-Z][a-z]+\s[A-Z][a-z]+\b")
_NAME_ZH = re.compile(r"(?:叫|名叫|名字是|姓|称呼)[\u4e00-\u9fff]{1,4}")
_CONTACT = re.compile(r"@|https?://|\b[A-Z]{2,}\d+\b")
_SMALL_TALK = re.compile(r"^(?:hi|hello|hey|thanks|thank you|ok|okay|sure|great|cool|bye|好的|谢谢|嗯|你好|再见|哈+)[\s!.。！~]*$",
                         re.I)


def summary_budget(context_window: int) -> int:
    """Token budget of a conversation summary: 1/16 of the window, between 128 and 2000."""
    return max(128, min(2000, context_window // 16))


def dialogue(messages: Sequence[dict[str, Any]], language: str) -> str:
    labels = ROLE_LABELS.get(language, ROLE_LABELS["en"])
    colon = "：" if language == "zh" else ": "
    return "\n".join(f"{labels.get(m['role'], m['role'])}{colon}{redact(m['content'].strip())}" for m in messages
                     if m.get("content", "").strip())


@dataclass(frozen=True)
class SummaryResult:
    text: str
    method: str  # "llm" | "extractive"
    tokens: int
    llm_calls: int = 0
    error: str | None = None  # why the LLM path was not used, when it failed


class SessionSummarizer:
    def __init__(self, chat: ChatModel | None, *, language: str = "en", encoding: str = "o200k_base",
                 budget_tokens: int = 2000, chunk_tokens: int = 6000):
        self.chat = chat
        self.language = language
        self.encoding = encoding
        self.budget = max(32, int(budget_tokens))
        self.chunk_tokens = max(256, int(chunk_tokens))  # dialogue sent to the LLM per call

    # ---- public ------------------------------------------------------------------------
    def summarize(self, previous: str, messages: Sequence[dict[str, Any]]) -> SummaryResult:
        """Fold ``messages`` into ``previous``; never longer than the budget."""
        if not any(m.get("content", "").strip() for m in messages):
            text = self.fit(previous)
            return SummaryResult(text, "unchanged", count_tokens(text, self.encoding) if text else 0)
        if self.chat is not None:
            try:
                return self._llm(previous, messages)
            except ProviderError as exc:
                log.warning("summary LLM failed (%s); using the extractive summary", exc)
                res = self._extractive(previous, messages)
                return SummaryResult(res.text, res.method, res.tokens, 0, str(exc))
        return self._extractive(previous, messages)

    def fit(self, text: str) -> str:
        """``text`` when it fits the budget, else its most informative sentences that do."""
        text = (text or "").strip()
        if not text or count_tokens(text, self.encoding) <= self.budget:
            return text
        units = [u for line in text.splitlines() for u in extraction.sentences(line)]
        return self._select([(u, _score(u, None), i) for i, u in enumerate(units)])

    # ---- LLM path ----------------------------------------------------------------------
    def _llm(self, previous: str, messages: Sequence[dict[str, Any]]) -> SummaryResult:
        summary = previous.strip()
        calls = 0
        for chunk in self._chunks(messages):
            prompt = prompts.render("summary", self.language, current_summary=summary,
                                    new_dialogue_content=dialogue(chunk, self.language))
            result = self.chat.complete([{"role": "user", "content": prompt}], temperature=0.2)  # type: ignore[union-attr]
            calls += 1
            text = redact(_clean_llm(result.text))  # the summary is stored: never a secret
            if not text:
                raise ProviderError("the LLM returned an empty summary")
            summary = self.fit(text)
        return SummaryResult(summary, "llm", count_tokens(summary, self.encoding), calls)

    def _chunks(self, messages: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """Consecutive groups of messages whose dialogue fits ``chunk_tokens`` (long ones cut)."""
        kept = [m for m in messages if m.get("content", "").strip()]
        sizes = count_many([m["content"] for m in kept], self.encoding)
        out: list[list[dict[str, Any]]] = [[]]
        used = 0
        for m, n in zip(kept, sizes):
            if n > self.chunk_tokens:
                m = dict(m, content=truncate_tokens(m["content"], self.chunk_tokens, self.encoding) + " …")
                n = self.chunk_tokens
            if out[-1] and used + n > self.chunk_tokens:
                out.append([])
                used = 0
            out[-1].append(m)
            used += n + 4
        return out

    # ---- extractive path ---------------------------------------------------------------
    def _extractive(self, previous: str, messages: Sequence[dict[str, Any]]) -> SummaryResult:
        labels = ROLE_LABELS.get(self.language, ROLE_LABELS["en"])
        colon = "：" if self.language == "zh" else ": "
        units: list[tuple[str, float, int]] = []
        for line in (previous or "").splitlines():
            if line.strip():
                # earlier lines were chosen once already: a small bonus keeps the summary stable
                units.append((line.strip(), _score(line, None) + 0.5, len(units)))
        for m in messages:
            for sent in extraction.sentences(m.get("content", "")):
                units.append((f"- {labels.get(m['role'], m['role'])}{colon}{sent}", _score(sent, m["role"]),
                              len(units)))
        text = self._select(units)
        return SummaryResult(text, "extractive", count_tokens(text, self.encoding) if text else 0)

    def _select(self, units: list[tuple[str, float, int]]) -> str:
        """Greedy by score (newer first on ties) within the budget, output in original order."""
        if not units:
            return ""
        longest = max(16, self.budget // 3)
        texts = [u[0] for u in units]
        sizes = count_many(texts, self.encoding)
        for i, n in enumerate(sizes):  # one very long sentence may not take the whole budget
            if n > longest:
                texts[i] = truncate_tokens(texts[i], longest, self.encoding).rstrip() + " …"
                sizes[i] = longest + 1
        if sum(sizes) + len(sizes) <= self.budget:
            return "\n".join(texts)
        order = sorted(range(len(units)), key=lambda i: (-units[i][1], -units[i][2]))
        chosen: list[int] = []
        used = 0
        for i in order:
            if used + sizes[i] + 1 <= self.budget:
                chosen.append(i)
                used += sizes[i] + 1
        return "\n".join(texts[i] for i in sorted(chosen))


def _clean_llm(text: str) -> str:
    text = (text or "").strip()
    for prefix in ("New summary:", "新摘要：", "新摘要:", "Summary:"):
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
    return text


def _score(sentence: str, role: str | None) -> float:
    """How much a sentence is worth keeping: names, numbers and dates, stated preferences,
    facts and commitments, the user's own words; small talk and bare questions are worth less."""
    s = sentence.strip()
    body = re.sub(r"^-?\s*\S{1,12}?[:：]\s*", "", s) if role is None else s
    score = 0.0
    if _DIGIT.search(body) or extraction._DATE_EN.search(body) or extraction._DATE_ZH.search(body):
        score += 3.0
    if _NAME_EN.search(body) or _NAME_ZH.search(body):
        score += 2.0
    if _CONTACT.search(body):
        score += 1.0
    if extraction.classify(body)[0] is not MemoryType.NOTE:
        score += 2.0
    if extraction._REMEMBER_EN.match(body) or extraction._REMEMBER_ZH.match(body):
        score += 2.0
    if role == "user" or s.startswith(("- User", "- 用户")):
        score += 1.0
    if _SMALL_TALK.match(body):
        score -= 3.0
    elif extraction._QUESTION.search(body):
        score -= 0.5
    return score
