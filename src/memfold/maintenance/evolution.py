"""Policy evolution (seed 001 §1.7): every ``EVOLVE_EVERY`` messages of a user's sessions, the LLM
reads the recent conversation and the current policy and proposes overrides as JSON. The
reflection runs in a background thread (one per namespace at a time), so the message that made
it due is not held up by the LLM; ``join()`` waits for the reflections in progress
(``Memory.close`` does).

Only when ``evolution_enabled`` is true and an LLM is configured (never without one). Proposed
keys that are unknown, not tunable by the LLM (``EVOLVABLE``) or outside their bounds are
dropped with a log line; the rest are written through ``PolicyFiles`` (snapshot first, then an
atomic write). The LLM is asked outside any lock (the user's, the policy files'). A failed call, a timeout or an answer
that is not the expected JSON changes nothing; the next try is after the next
``EVOLVE_EVERY`` messages. Sessions already open keep their policy; new ones load the new one.

The message counter and the outcome of the last run live in the index's state store (kind
``evolution``)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import prompts
from ..engine.llm.llm_calls import LLMCalls, parse_json_answer, record_usage
from ..errors import ConfigError, MemfoldError, ProviderError
from ..index.base import Index
from ..models import utcnow
from ..policy import BOUNDS, Policy
from ..providers.chat import ChatModel
from ..text.secrets import redact
from .policy_files import PolicyFiles, validate

log = logging.getLogger("memfold")
EVOLVE_EVERY = 20  # messages of a user's sessions between two reflections
STATE_KIND, STATE_KEY = "evolution", "policy"
MAX_MESSAGE_CHARS = 1000  # each message is cut to this for the prompt
MAX_SUMMARY_CHARS = 3000
# what the LLM may tune, with the meaning it is shown; the rest (retention of backups, the model's
# window and tokenizer, compression, evolution itself) is left to people
EVOLVABLE: dict[str, tuple[str, str]] = {
    "retrieve_limit": ("memories returned by a query", "按 query 检索时最多返回的记忆条数"),
    "recent_days": ("days of daily notes added to a retrieval", "检索时拼接最近几天的每日笔记"),
    "session_summary_message_threshold": ("messages in a session that trigger a summary", "会话消息数超过此值触发摘要"),
    "session_summary_token_percent": ("% of the context window that triggers a summary",
                                      "会话 token 占上下文比例超过此值触发摘要"),
    "session_summary_keep_count": ("messages kept verbatim after a summary", "摘要后保留的最近消息条数"),
    "session_relevant_history_limit": ("relevant past turns injected per query (0 = off)",
                                       "按 query 注入的相关历史轮数（0=关闭）"),
    "session_relevant_fallback_keep": ("recent messages kept when no turn is relevant", "无相关轮时保留的最近消息条数"),
    "memory_char_limit": ("cap on injected long-term memory characters", "注入的长期记忆字符上限"),
    "max_recent_memories": ("length of an agent's list of recently saved memories", "智能体最近保存记忆列表的长度"),
    "dedupe_threshold": ("similarity at which a new memory counts as a near-duplicate", "新记忆被视为近似重复的相似度"),
    "score_weight_similarity": ("weight of similarity in the ranking", "排序中相似度的权重"),
    "score_weight_time": ("weight of recency in the ranking", "排序中时间新近度的权重"),
    "score_weight_importance": ("weight of importance in the ranking", "排序中重要性的权重"),
    "decay_tau_days": ("days over which recency fades", "新近度衰减的时间常数（天）"),
}


class EvolutionState(Protocol):
    def get_state(self, user_id: str, kind: str, key: str) -> dict[str, Any] | None: ...
    def put_state(self, user_id: str, kind: str, key: str, value: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class EvolutionResult:
    """One reflection: ``status`` is ``applied`` | ``unchanged`` | ``failed``."""

    status: str
    applied: dict[str, Any] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)  # key -> why
    snapshot: str | None = None
    reason: str = ""  # the LLM's reason, or why the run failed

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "applied": dict(self.applied), "dropped": dict(self.dropped),
                "snapshot": self.snapshot, "reason": self.reason}


class PolicyEvolution:
    """Counts a user's session messages and reflects every ``EVOLVE_EVERY`` of them."""

    def __init__(self, *, policy: Callable[[str], Policy], files: Callable[[str], PolicyFiles],
                 state: Index, chat: Callable[[], ChatModel | None], language: Callable[[str], str],
                 user_lock: Callable[[str], Any]):
        self._policy, self._files, self._state = policy, files, state
        self._chat, self._language, self._user_lock = chat, language, user_lock
        self._threads: dict[str, threading.Thread] = {}  # namespace -> its reflection in progress
        self._lock = threading.Lock()

    def message_added(self, user_id: str, conversation: Callable[[], tuple[str, Sequence[dict[str, Any]]]]
                      ) -> bool:
        """Count one message; every ``EVOLVE_EVERY``-th starts a reflection on ``conversation()``
        (summary, messages, read now) in a background thread. True when one was started; False when
        evolution is off, there is no LLM, it is not time yet, or the namespace's last one still runs."""
        try:  # evolution never fails the message that was just saved
            if not self._policy(user_id).evolution_enabled or self._chat() is None:
                return False
            with self._files(user_id).lock:
                doc = self._state.get_state(user_id, STATE_KIND, STATE_KEY) or {}
                count = int(doc.get("messages", 0)) + 1
                due = count >= EVOLVE_EVERY
                doc["messages"] = 0 if due else count
                self._state.put_state(user_id, STATE_KIND, STATE_KEY, doc)
            if not due:
                return False
            summary, messages = conversation()
        except MemfoldError as exc:  # e.g. a read-only workspace
            log.warning("policy evolution for %s skipped: %s", user_id, exc)
            return False
        with self._lock:
            running = self._threads.get(user_id)
            if running is not None and running.is_alive():
                log.info("policy evolution for %s: the last reflection still runs; this one is skipped", user_id)
                return False
            t = threading.Thread(target=self._reflect_quietly, args=(user_id, summary, list(messages)),
                                 name=f"memfold-evolve-{user_id}", daemon=True)
            self._threads = {u: th for u, th in self._threads.items() if th.is_alive()}  # bounded: running ones
            self._threads[user_id] = t
            t.start()
        return True

    def join(self, timeout: float | None = None) -> None:
        """Wait for the reflections in progress."""
        with self._lock:
            threads = list(self._threads.values())
        for t in threads:
            t.join(timeout)

    def _reflect_quietly(self, user_id: str, summary: str, messages: Sequence[dict[str, Any]]) -> None:
        try:
            self.reflect(user_id, summary, messages)
        except MemfoldError as exc:  # e.g. an overrides file broken by hand
            log.warning("policy evolution for %s changed nothing: %s", user_id, exc)
            try:
                self._record(user_id, EvolutionResult("failed", reason=str(exc)))
            except MemfoldError:
                pass
        except Exception:  # noqa: BLE001 - a background failure is logged, never raised into a conversation
            log.exception("policy evolution for %s failed", user_id)

    def reflect(self, user_id: str, summary: str, messages: Sequence[dict[str, Any]]) -> EvolutionResult:
        """Ask the LLM once and apply what it validly proposes."""
        chat = self._chat()
        if chat is None:
            return self._record(user_id, EvolutionResult("failed", reason="no LLM is configured"))
        current = self._policy(user_id)
        calls = LLMCalls(chat, max_calls=1)
        try:
            answer = calls.complete(self._messages(user_id, current, summary, messages), purpose="evolve",
                                    json_schema=SCHEMA, temperature=0.2)
            proposed, why = parse_proposal(answer.text)
        except ProviderError as exc:
            result = EvolutionResult("failed", reason=f"LLM call failed: {exc}")
        except ValueError as exc:
            calls.failed()
            result = EvolutionResult("failed", reason=f"LLM answer unusable: {redact(str(exc))}")
        else:
            result = self._apply(user_id, current, proposed, why)
        record_usage(self._state, user_id, "evolve", calls, self._user_lock(user_id))  # the usage doc's lock
        if result.status == "failed":
            log.warning("policy evolution for %s changed nothing: %s", user_id, result.reason)
        return self._record(user_id, result)

    def last(self, user_id: str) -> dict[str, Any]:
        """The counter and the outcome of the last reflection."""
        return self._state.get_state(user_id, STATE_KIND, STATE_KEY) or {}

    # ---- internals ---------------------------------------------------------------------
    def _messages(self, user_id: str, current: Policy, summary: str,
                  messages: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
        lang = self._language(user_id)
        lang = lang if lang in prompts.LANGUAGES else "en"
        lines = []
        for key, meaning in EVOLVABLE.items():
            lo, hi = BOUNDS[key]
            lines.append(f"- {key} = {getattr(current, key)} ({lo:g}..{hi:g}; {meaning[1] if lang == 'zh' else meaning[0]})")
        talk = [f"{m.get('role', 'user')}: {str(m.get('content', ''))[:MAX_MESSAGE_CHARS]}"
                for m in list(messages)[-EVOLVE_EVERY:]]
        if summary:
            talk.insert(0, f"(summary) {summary[-MAX_SUMMARY_CHARS:]}")
        conversation = redact("\n".join(talk)) or "(none)"
        return [{"role": "system", "content": prompts.render("system", lang)},
                {"role": "user", "content": prompts.render("evolve", lang, policy="\n".join(lines),
                                                           conversation=conversation)}]

    def _apply(self, user_id: str, current: Policy, proposed: dict[str, Any], why: str) -> EvolutionResult:
        accepted: dict[str, Any] = {}
        dropped: dict[str, str] = {}
        for key, value in proposed.items():
            if key not in EVOLVABLE:
                dropped[key] = "not a policy key the LLM may change"
            else:
                try:
                    accepted.update(validate({key: value}, "the LLM's proposal"))
                except ConfigError as exc:
                    dropped[key] = str(exc)
                    continue
                if accepted[key] == getattr(current, key):
                    del accepted[key]  # already so
        for key, problem in dropped.items():
            log.warning("policy evolution for %s: dropped %s=%r: %s", user_id, key, proposed[key], problem)
        if not accepted:
            return EvolutionResult("unchanged", dropped=dropped, reason=why)
        change = self._files(user_id).apply(lambda cur: {**cur, **accepted})
        snap = change.snapshot.name if change.snapshot else None
        log.info("policy evolution for %s: %s (%s)", user_id, accepted, why)
        return EvolutionResult("applied" if change.changed else "unchanged", accepted, dropped, snap, why)

    def _record(self, user_id: str, result: EvolutionResult) -> EvolutionResult:
        files = self._files(user_id)
        with files.lock:  # re-read: messages counted meanwhile stay counted
            doc = self._state.get_state(user_id, STATE_KIND, STATE_KEY) or {}
            doc.update(runs=int(doc.get("runs", 0)) + 1, last_run_at=utcnow().isoformat(), last=result.to_dict())
            self._state.put_state(user_id, STATE_KIND, STATE_KEY, doc)
        return result


SCHEMA: dict[str, Any] = {
    "title": "policy_overrides", "type": "object",
    "properties": {"overrides": {"type": "object"}, "reason": {"type": "string"}},
    "required": ["overrides"],
}


def parse_proposal(text: str) -> tuple[dict[str, Any], str]:
    """``{"overrides": {...}, "reason": "..."}`` (a bare object of keys is accepted too);
    ValueError says what is wrong."""
    data = parse_json_answer(text)
    if not isinstance(data, dict):
        raise ValueError(f"the answer is a JSON {type(data).__name__}, not an object")
    if "overrides" in data:
        overrides, reason = data["overrides"], data.get("reason", "")
    else:
        overrides, reason = {k: v for k, v in data.items() if k != "reason"}, data.get("reason", "")
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise ValueError(f"'overrides' is {json.dumps(overrides)[:80]}, not an object")
    return overrides, str(reason)[:500]
