"""Context building (SPEC §6): the messages to send to the model for one user message.

system = base prompt + memory section (retrieved memories grouped by type, recent daily
notes, the agent's pin list) capped at ``memory_char_limit`` + conversation summary +
memory instructions; then the recent messages that fit the token budget; then the user
message. With memory off nothing is read from or injected about long-term memory."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import prompts
from ...errors import InvalidInputError
from ...models import EPISODIC, MemoryType, Retrieval, SearchHit
from ...policy import Policy
from ...providers.embedder import Embedder, embed_query
from ...text.capacity import cap_text
from ...text.terms import terms
from ...text.tokens import count_many, count_tokens, truncate_tokens
from .ports import Retrieves

MESSAGE_OVERHEAD = 4  # tokens a chat message costs beyond its content (role, separators)
REPLY_PRIMING = 3  # tokens that prime the assistant's reply
RELEVANCE_THRESHOLD = 0.35

TYPE_ORDER = (MemoryType.PREFERENCE, MemoryType.FACT, MemoryType.PATTERN, MemoryType.SKILL, MemoryType.EVENT,
              MemoryType.TODO, MemoryType.NOTE)
LABELS: dict[str, dict[str, str]] = {
    "en": {"base": "You are an AI assistant with long-term memory.", "base_off": "You are a helpful AI assistant.",
           "memory": "# USER MEMORY", "pins": "## User's original requirements", "notes": "## Recent notes",
           "full": "## Memory file", "turns": "## Related past conversation", "summary": "## Conversation summary",
           "preference": "## User Preferences", "fact": "## Known Facts", "pattern": "## User Patterns",
           "skill": "## Proven Skills", "event": "## Important Events", "todo": "## Todos and Commitments",
           "note": "## Notes"},
    "zh": {"base": "你是一个拥有长期记忆的 AI 助手。", "base_off": "你是一个乐于助人的 AI 助手。",
           "memory": "# 记忆", "pins": "## 用户的原始需求和要求", "notes": "## 最近笔记", "full": "## 记忆文件",
           "turns": "## 相关的历史对话", "summary": "## 对话历史总结",
           "preference": "## 用户偏好", "fact": "## 已知事实", "pattern": "## 用户习惯", "skill": "## 已验证的技能",
           "event": "## 重要事件", "todo": "## 待办与承诺", "note": "## 笔记"},
}
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def reserve_tokens(context_window: int) -> int:
    """Tokens left free for the model's answer."""
    return min(4096, context_window // 4)


def messages_tokens(messages: Sequence[dict[str, Any]], encoding: str) -> int:
    if not messages:
        return 0
    sizes = count_many([m["content"] for m in messages], encoding)
    return sum(sizes) + MESSAGE_OVERHEAD * len(messages) + REPLY_PRIMING


@dataclass(frozen=True)
class BuiltContext:
    messages: list[dict[str, str]]
    tokens: int  # exact count of ``messages`` (content + per-message overhead)
    budget: int  # context_window minus the reserve for the answer
    memory_chars: int = 0  # characters of injected long-term text
    truncated: bool = False  # the memory section hit memory_char_limit
    history_used: int = 0
    history_available: int = 0
    memory_ids: tuple[str, ...] = field(default_factory=tuple)
    tidy_hint: bool = False  # the "tidy your memory" instruction is in the system prompt


# ---- memory section --------------------------------------------------------------------
def _line(h: SearchHit) -> str:
    r = h.record
    text = " ".join(r.content.split()) if r.file == EPISODIC else r.content.strip()
    if r.file == EPISODIC or r.memory_type is MemoryType.EVENT:
        return f"- [{r.created_at.date().isoformat()}] {text}"
    return "- " + "\n  ".join(text.split("\n"))  # a skill's fields stay under their name


def clean_memory_file(text: str) -> str:
    """MEMORY.md for a prompt: no id or template comments, no blank runs."""
    text = _COMMENT.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def memory_section(retrieval: Retrieval | None, pins: Sequence[str], language: str) -> str:
    lab = LABELS.get(language, LABELS["en"])
    parts: list[str] = []
    pinned = set(pins)
    if retrieval is not None:
        grouped: dict[str, list[str]] = {}
        noted = {n.path for n in retrieval.recent_notes}  # shown whole in the notes section
        for h in retrieval.hits:
            if h.record.content.strip() in pinned or h.record.file in noted:
                continue
            key = "turns" if h.record.file == EPISODIC else h.record.memory_type.value
            grouped.setdefault(key, []).append(_line(h))
        for key in [t.value for t in TYPE_ORDER] + ["turns"]:
            if grouped.get(key):
                parts.append(lab[key] + "\n" + "\n".join(grouped[key]))
        if retrieval.full_text:
            body = clean_memory_file(retrieval.full_text)
            if body:
                parts.append(lab["full"] + "\n" + body)
        if retrieval.recent_notes:
            parts.append(lab["notes"] + "\n" + "\n".join(f"### {n.date}\n{n.text.strip()}"
                                                         for n in retrieval.recent_notes))
    if pins:  # seed 000: "\n".join(recent_memories), no section when empty
        parts.append(lab["pins"] + "\n" + "\n".join(pins))
    return lab["memory"] + "\n\n" + "\n\n".join(parts) if parts else ""


# ---- relevant-history mode -------------------------------------------------------------
def _turns(history: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Indexes of history grouped into turns: a user message and what follows it."""
    out: list[list[int]] = []
    for i, m in enumerate(history):
        if m["role"] == "user" or not out:
            out.append([i])
        else:
            out[-1].append(i)
    return out


def select_relevant(history: Sequence[dict[str, Any]], query: str, limit: int, fallback_keep: int,
                    embedder: Embedder, cache: dict[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
    """The at most ``limit`` turns relevant to ``query`` (in order); none relevant → the last
    ``fallback_keep`` messages (0 = no history at all)."""
    turns = _turns(history)
    fallback = list(history[-fallback_keep:]) if fallback_keep > 0 else []
    if not turns or not query.strip():
        return fallback
    texts = ["\n".join(history[i]["content"] for i in t) for t in turns]
    cache = cache if cache is not None else {}
    live = set(texts)
    for gone in [t for t in cache if t not in live]:  # bounded by the history: folded turns leave
        del cache[gone]
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    if missing:
        for t, v in zip(missing, embedder.embed(missing)):
            cache[t] = v
    qv = embed_query(embedder, [query])[0]
    qterms = set(terms(query, query=True))
    scored = []
    for n, text in enumerate(texts):
        cos = float(cache[text] @ qv)
        overlap = len(qterms & set(terms(text))) / len(qterms) if qterms else 0.0
        score = 0.6 * cos + 0.4 * overlap
        if score >= RELEVANCE_THRESHOLD:
            scored.append((score, n))
    if not scored:
        return fallback
    best = sorted(n for _, n in sorted(scored, reverse=True)[:limit])
    return [history[i] for n in best for i in turns[n]]


# ---- the builder -----------------------------------------------------------------------
class ContextBuilder:
    """The messages for one user message; reads memories through ``retriever`` (``Retrieves``)
    and embeds history turns with ``embedder`` (relevant-history mode)."""

    def __init__(self, retriever: Retrieves, embedder: Embedder, user_id: str, policy: Policy, language: str):
        self.retriever = retriever
        self.embedder = embedder
        self.user_id = user_id
        self.policy = policy
        self.language = language if language in LABELS else "en"
        self.vector_cache: dict[str, np.ndarray] = {}

    def build(self, user_message: str, *, summary: str = "", history: Sequence[dict[str, Any]] = (),
              pins: Sequence[str] = (), memory_enabled: bool = True, base_prompt: str | None = None,
              after: Sequence[dict[str, str]] = (), tools: Mapping[str, str] | None = None,
              file_chars: int | None = None, tidy_hint: bool = True) -> BuiltContext:
        """``tools`` (name -> what it does, in the user's language): the tools the model is offered,
        named in the memory instructions; None or empty: instructions that name no tool.
        ``file_chars``: the characters of the user's MEMORY.md as the model reads it; the "tidy your
        memory" instruction measures it (or, when None, the injected memory) against
        ``memory_char_limit``. ``tidy_hint=False``: that instruction is left out (a session shows it once)."""
        if not isinstance(user_message, str):
            raise InvalidInputError("build_context needs the user message as a string", field="user_message")
        pol, lab, enc = self.policy, LABELS[self.language], self.policy.token_encoding
        budget = pol.context_window - reserve_tokens(pol.context_window)
        parts = [base_prompt.strip() if base_prompt is not None else lab["base" if memory_enabled else "base_off"]]
        memory_chars, truncated, ids, hint = 0, False, tuple[str, ...](), ""
        if memory_enabled:
            retrieval = self.retriever.retrieve(user_message if user_message.strip() else None, self.user_id)
            ids = tuple(h.record.id for h in retrieval.hits)
            block = memory_section(retrieval, list(pins), self.language)
            if block:
                capped = cap_text(block, pol.memory_char_limit, self.language)
                memory_chars, truncated = len(capped.text), capped.truncated
                parts.append(capped.text)
        if summary.strip():
            parts.append(lab["summary"] + "\n" + summary.strip())
        if memory_enabled:
            if tools:
                listed = "\n".join(f"- {name}: {what}" for name, what in tools.items())
                parts.append(prompts.render("memory_tools", self.language, tools=listed).strip())
            else:
                parts.append(prompts.load("memory_instructions", self.language).strip())
            hint = self._tidy(memory_chars, truncated, file_chars)
            if hint and tidy_hint:
                parts.append(hint)
        system = "\n\n".join(p for p in parts if p)

        tail = [{"role": "user", "content": user_message}, *[dict(m) for m in after]]
        tail_tokens = messages_tokens(tail, enc)
        sys_tokens = count_tokens(system, enc) + MESSAGE_OVERHEAD
        if tail_tokens + MESSAGE_OVERHEAD + 16 > budget:
            raise InvalidInputError(f"the message ({tail_tokens} tokens) does not fit the context window of "
                                    f"{pol.context_window} tokens (policy key 'context_window')")
        if sys_tokens + tail_tokens > budget:  # last resort: cut the system prompt
            system = truncate_tokens(system, budget - tail_tokens - MESSAGE_OVERHEAD, enc)
            sys_tokens = count_tokens(system, enc) + MESSAGE_OVERHEAD

        hist = [m for m in history if m.get("content", "").strip()]
        if hist and hist[-1]["role"] == "user" and hist[-1]["content"] == user_message:
            hist = hist[:-1]  # the caller already added the message to the session
        available = len(hist)
        if pol.session_relevant_history_limit > 0:
            hist = select_relevant(hist, user_message, pol.session_relevant_history_limit,
                                   pol.session_relevant_fallback_keep, self.embedder, self.vector_cache)
        room = budget - sys_tokens - tail_tokens
        sizes = count_many([m["content"] for m in hist], enc)
        start = len(hist)
        while start > 0 and sizes[start - 1] + MESSAGE_OVERHEAD <= room:
            start -= 1
            room -= sizes[start] + MESSAGE_OVERHEAD
        used = [{"role": m["role"], "content": m["content"]} for m in hist[start:]]
        messages = [{"role": "system", "content": system}, *used, *tail]
        return BuiltContext(messages=messages, tokens=messages_tokens(messages, enc), budget=budget,
                            memory_chars=memory_chars, truncated=truncated, history_used=len(used),
                            history_available=available, memory_ids=ids,
                            tidy_hint=bool(memory_enabled and tidy_hint and hint))

    def _tidy(self, memory_chars: int, truncated: bool, file_chars: int | None) -> str:
        """The "tidy your memory" instruction that applies ('' when none does): the injected memory was
        cut, MEMORY.md is over its capacity, or one of them reaches ``memory_tidy_percent`` of it."""
        pol = self.policy
        limit = pol.memory_char_limit
        if truncated:
            return prompts.render("memory_tidy", self.language, limit=limit).strip()
        if file_chars is not None and file_chars > limit:
            return prompts.render("memory_tidy_over", self.language, limit=limit, chars=file_chars).strip()
        fill = max(memory_chars, file_chars or 0)
        if fill * 100 >= limit * pol.memory_tidy_percent:  # approaching the limit
            return prompts.render("memory_tidy_near", self.language, limit=limit, percent=fill * 100 // limit).strip()
        return ""
