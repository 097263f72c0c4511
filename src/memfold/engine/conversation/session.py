"""Conversation memory of one session (SPEC §7, seeds 001 §1.5 and 004).

A session keeps the verbatim ``messages`` buffer and a rolling ``summary``. When the buffer
holds more than ``session_summary_message_threshold`` messages, or summary + buffer take more
than ``session_summary_token_percent``% of ``context_window`` tokens, everything but the last
``session_summary_keep_count`` messages is folded into the summary; if the rest still does
not fit the window, the oldest half is dropped (force compression). Folded and dropped
messages go to long-term extraction. State lives in the index (kind ``"session"``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, InvalidInputError, MemfoldError
from ...limits import MAX_MESSAGE_CHARS, check_length
from ...models import utcnow
from ...policy import Policy
from ...providers.chat import ChatModel
from ...text.secrets import redact
from ...text.tokens import count_many, count_tokens
from ..storage import guard
from ..storage.guard import check_fields
from ..storage.pin import PinList
from . import session_end as ends
from .context import MESSAGE_OVERHEAD, BuiltContext, ContextBuilder, reserve_tokens
from .ports import SessionPorts
from .summarizer import SessionSummarizer, summary_budget

if TYPE_CHECKING:
    from .scratchpad import TaskScratchpad

log = logging.getLogger("memfold")
STATE_KIND = "session"
NOTICE = "Memory threshold reached. Optimizing conversation history..."
DEFAULT_AGENT = "default"
ROLES = ("user", "assistant", "system", "tool")
# seed 001 (picoclaw) values are the defaults; seed 004 (ChatAgent) values are a named preset
SESSION_PRESETS: dict[str, dict[str, int]] = {
    "default": {"session_summary_message_threshold": 20, "session_summary_token_percent": 75,
                "session_summary_keep_count": 4},
    "chatagent": {"session_summary_message_threshold": 50, "session_summary_token_percent": 80,
                  "session_summary_keep_count": 4},
}


@dataclass(frozen=True)
class SessionUpdate:
    """What ``add_message`` / ``summarize`` did. ``notice`` is the text to show the user."""

    summarized: bool = False
    reason: str = ""  # "messages" | "tokens" | "manual" | ""
    folded: int = 0  # messages folded into the summary
    dropped: int = 0  # messages dropped by force compression
    method: str = ""  # "llm" | "extractive"
    notice: str | None = None
    errors: tuple[str, ...] = ()

    @property
    def forced(self) -> bool:
        return self.dropped > 0


@dataclass
class _State:
    session_id: str
    agent_id: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    folds: int = 0
    folded_messages: int = 0
    dropped_messages: int = 0
    total_messages: int = 0
    created_at: str = ""
    updated_at: str = ""
    closed_at: str = ""  # set when the session ended (engine/conversation/session_end.py)
    closed_reason: str = ""  # "close" | "ttl"
    tidy_hint_shown: bool = False  # the "tidy your memory" instruction was shown (once per session)

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, **self.__dict__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "_State":
        known = set(cls.__dataclass_fields__)
        state = cls(**{k: v for k, v in d.items() if k in known})
        # a state saved before messages were redacted is cleaned as it is read (and saved so next time)
        for m in state.messages:
            clean = redact(m.get("content", ""))
            if clean != m.get("content", ""):
                m["content"] = clean
                m.pop("tokens", None)
        state.summary = redact(state.summary)
        return state


class Session:
    """Use ``Memory.session(session_id, user_id=..., agent_id=...)``."""

    def __init__(self, ports: SessionPorts, session_id: str, user_id: str, agent_id: str | None, policy: Policy,
                 *, chat: ChatModel | None = None, language: str = "en", memory_enabled: bool = True,
                 on_notice: Callable[[str], None] | None = None):
        if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
            raise InvalidInputError(f"invalid session id {session_id!r}: use 1-200 characters")
        check_fields(session_id=session_id, agent_id=agent_id)
        self._ports = ports
        self.session_id = session_id
        self.user_id = user_id
        self.policy = policy
        self.language = language
        self.memory_enabled = memory_enabled
        self.on_notice = on_notice
        self.pin_content = ""  # backward compatible (seed 000); has no effect
        self._index = ports.state
        self._lock = threading.RLock()
        self.summarizer = SessionSummarizer(chat, language=language, encoding=policy.token_encoding,
                                            budget_tokens=summary_budget(policy.context_window),
                                            chunk_tokens=max(256, policy.context_window // 2))
        self._builder = ContextBuilder(ports.retriever, ports.embedder, user_id, policy, language)
        stored = self._index.get_state(user_id, STATE_KIND, session_id)
        if stored is None:  # a new session belongs to the given agent, else to "default"
            now = utcnow().isoformat()
            self._state = _State(session_id, agent_id or DEFAULT_AGENT, created_at=now, updated_at=now)
        else:  # a resumed one keeps its agent
            self._state = _State.from_dict(stored)
            if agent_id is not None and self._state.agent_id not in (None, agent_id):
                raise InvalidInputError(f"session {session_id!r} belongs to agent {self._state.agent_id!r}, "
                                        f"not {agent_id!r}")
            self._state.agent_id = self._state.agent_id or agent_id or DEFAULT_AGENT
            self._expire()  # an abandoned session is ended by whoever finds it expired

    # ---- reading -----------------------------------------------------------------------
    @property
    def agent_id(self) -> str:
        """The agent the session belongs to."""
        return self._state.agent_id or DEFAULT_AGENT

    @property
    def messages(self) -> list[dict[str, str]]:
        """The verbatim buffer (messages not folded into the summary yet), oldest first."""
        with self._lock:
            return [{"role": m["role"], "content": m["content"]} for m in self._state.messages]

    @property
    def summary(self) -> str:
        """The rolling summary of the folded messages."""
        return self._state.summary

    @property
    def info(self) -> dict[str, Any]:
        """Sizes and counters of the session (messages, folds, tokens, dates)."""
        with self._lock:
            s = self._state
            return {"session_id": s.session_id, "user_id": self.user_id, "agent_id": s.agent_id,
                    "messages": len(s.messages), "summary_chars": len(s.summary), "folds": s.folds,
                    "folded_messages": s.folded_messages, "dropped_messages": s.dropped_messages,
                    "total_messages": s.total_messages, "tokens": self.token_count(),
                    "context_window": self.policy.context_window, "created_at": s.created_at,
                    "updated_at": s.updated_at, "closed_at": s.closed_at or None}

    @property
    def closed(self) -> bool:
        """True once the session has ended (``close()``, its ``with`` block, or its time to live)."""
        return bool(self._state.closed_at)

    @property
    def pins(self) -> PinList:
        """The pin list of the session's agent."""
        return self._ports.pins.pins(self.agent_id, self.user_id)

    @property
    def recent_memories(self) -> list[str]:
        """The last memories the session's agent saved, oldest first."""
        return self.pins.recent_memories

    def token_count(self) -> int:
        """Estimated tokens of summary + buffer as they would be sent (exact counts, with overhead)."""
        with self._lock:
            self._count(self._state.messages)
            n = sum(m["tokens"] + MESSAGE_OVERHEAD for m in self._state.messages)
            return n + (count_tokens(self._state.summary, self.policy.token_encoding) if self._state.summary else 0)

    # ---- writing -----------------------------------------------------------------------
    def add_message(self, role: str, content: str, *, extracted: bool = False) -> SessionUpdate:
        """Append a message; folds the history when a threshold is crossed (see ``SessionUpdate``).
        ``extracted=True``: what it holds is stored already (a memory tool call): never extracted."""
        role = guard.text(role, "role").strip().lower()
        if role not in ROLES:
            raise InvalidInputError(f"role must be one of {', '.join(ROLES)}, got {role!r}", field="role")
        content = guard.text(content, "content")
        check_length("the message", content, MAX_MESSAGE_CHARS, "send long documents in parts", "content")
        content = redact(content)  # kept in the session state and sent to the summary LLM: never a secret
        if role == "user" and not extracted and ends.may_extract(self._ports, self.user_id, self.memory_enabled):
            self._remember_now(content)
        with self._guard():
            self._reload()
            if self._state.closed_at:
                raise ends.closed_error(self.session_id, self.user_id, self._state.closed_at, self._state.closed_reason)
            msg: dict[str, Any] = {"role": role, "content": content, "at": utcnow().isoformat()}
            if extracted or not ends.may_extract(self._ports, self.user_id, self.memory_enabled):  # stored, or off
                msg[ends.DONE] = True
            self._state.messages.append(msg)
            self._state.total_messages += 1
            update = self._maybe_fold(reason=self._trigger())
            self._save()
        if self._ports.after_message is not None:  # policy evolution (outside the session's lock)
            self._ports.after_message.message_added(self.user_id, lambda: (self.summary, self.messages))
        return update

    def _remember_now(self, content: str) -> None:
        """An explicit request ("remember that …", "记住…") is stored at once, not when the session ends,
        so another session sees it meanwhile. The message is still extracted at the end like the others
        (its turn is stored then; the memory is found stored already). A failure is logged."""
        from ...text.extraction import sentences, strip_command

        asked = [p for p in sentences(content) if strip_command(p)[1]]
        if not asked:
            return
        with self._guard():  # a closed session stores nothing (add_message raises below)
            self._reload()
            if self._state.closed_at:
                return
        try:
            for p in asked:
                self._ports.ingest.add(p, self.user_id, agent_id=self.agent_id, session_id=self.session_id)
        except MemfoldError as exc:
            log.warning("session %s: storing %r at once failed (%s); it is extracted when the session ends",
                        self.session_id, asked[0][:80], exc)

    def summarize(self) -> SessionUpdate:
        """Fold everything but the last ``session_summary_keep_count`` messages now."""
        with self._guard():
            self._reload()
            update = self._maybe_fold(reason="manual")
            self._save()
            return update

    def clear(self) -> None:
        """Forget this session's buffer and summary (long-term memories stay)."""
        with self._lock:
            self._index.delete_state(self.user_id, STATE_KIND, self.session_id)
            now = utcnow().isoformat()
            self._state = _State(self.session_id, self._state.agent_id, created_at=now, updated_at=now)

    # ---- end -----------------------------------------------------------------------------
    def close(self) -> ends.SessionEnd:
        """End the session: the unfolded messages go to long-term extraction (LLM or rules, as
        ``add``); later ``add_message`` calls raise SessionClosedError. Ending twice does nothing."""
        with self._guard():
            res = ends.end_session(self._ports, self.user_id, self.session_id, reason="close",
                                   memory_enabled=self.memory_enabled, agent_id=self.agent_id)
            self._load()
            return res or ends.SessionEnd(self.session_id, "close")

    def reopen(self) -> bool:
        """Open an ended session again (what was extracted is not extracted twice). True when it was closed."""
        with self._guard():
            was = ends.reopen(self._ports, self.user_id, self.session_id)
            self._load()
            return was

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.close()
        except MemfoldError as err:
            if exc_type is None:
                raise
            log.warning("session %s: ending it failed while leaving on an error: %s", self.session_id, err)

    # ---- context -----------------------------------------------------------------------
    def build_context(self, user_message: str, *, base_prompt: str | None = None,
                      after: Sequence[dict[str, str]] = (), tools: Mapping[str, str] | None = None) -> list[dict[str, str]]:
        """OpenAI-format messages: system (memory, pins, summary, instructions naming the offered
        ``tools``: name -> what it does), recent history, the message."""
        return self.context(user_message, base_prompt=base_prompt, after=after, tools=tools).messages

    def context(self, user_message: str, *, base_prompt: str | None = None,
                after: Sequence[dict[str, str]] = (), tools: Mapping[str, str] | None = None) -> BuiltContext:
        """Like ``build_context`` with the token and capacity figures."""
        with self._guard():
            self._reload()
            pins = self.recent_memories if self.memory_enabled else []
            sized = self._ports.file_chars
            built = self._builder.build(user_message, summary=self._state.summary, history=self.messages, pins=pins,
                                        memory_enabled=self.memory_enabled, base_prompt=base_prompt, after=after,
                                        tools=tools, file_chars=sized(self.user_id) if sized and self.memory_enabled
                                        else None, tidy_hint=not self._state.tidy_hint_shown)
            if built.tidy_hint:  # shown once: the model has it in this session's context now
                self._state.tidy_hint_shown = True
                self._save()
            return built

    def task(self, question: str) -> "TaskScratchpad":
        """A scratchpad for one task's ReAct steps; only question and final answer enter the session."""
        from .scratchpad import TaskScratchpad

        return TaskScratchpad(self, question)

    # ---- internals ---------------------------------------------------------------------
    def _reload(self) -> None:
        """Pick up changes another process saved since we loaded (the index is shared)."""
        stored = self._index.get_state(self.user_id, STATE_KIND, self.session_id)
        if stored is not None and stored.get("updated_at") != self._state.updated_at:
            self._state = _State.from_dict(stored)
        self._expire()

    def _load(self) -> None:
        stored = self._index.get_state(self.user_id, STATE_KIND, self.session_id)
        if stored is not None:
            self._state = _State.from_dict(stored)

    def _guard(self) -> Any:
        """The namespace's session lock (other processes too), then this object's."""
        return ends.guarded(self._ports, self.user_id, self._lock)

    def _expire(self) -> None:
        st, ttl = self._state, self.policy.session_ttl_minutes
        if ends.expired({"updated_at": st.updated_at, "closed_at": st.closed_at}, ttl):
            ends.end_expired(self._ports, self.user_id, self.session_id, ttl, self.memory_enabled)
            self._load()

    def _save(self) -> None:
        self._state.updated_at = utcnow().isoformat(timespec="microseconds")
        self._index.put_state(self.user_id, STATE_KIND, self.session_id, self._state.to_dict())

    def _count(self, messages: list[dict[str, Any]]) -> None:
        enc = self.policy.token_encoding
        todo = [m for m in messages if m.get("enc") != enc or "tokens" not in m]
        for m, n in zip(todo, count_many([m["content"] for m in todo], enc)):
            m["tokens"], m["enc"] = n, enc

    def _trigger(self) -> str:
        pol = self.policy
        if len(self._state.messages) > pol.session_summary_message_threshold:
            return "messages"
        if self.token_count() > pol.context_window * pol.session_summary_token_percent / 100:
            return "tokens"
        return ""

    def _maybe_fold(self, reason: str) -> SessionUpdate:
        if not reason:
            return SessionUpdate()
        st, pol = self._state, self.policy
        cut = max(0, len(st.messages) - pol.session_summary_keep_count)
        if cut == 0 and reason == "tokens":
            cut = len(st.messages) - 1  # the kept messages alone are too many tokens: keep only the newest
        limit = pol.context_window - reserve_tokens(pol.context_window)
        if cut <= 0 and not (len(st.messages) > 1 and self.token_count() > limit):
            return SessionUpdate(reason=reason)  # nothing to fold, nothing to drop
        if self.on_notice is not None:
            self.on_notice(NOTICE)
        folded = st.messages[:cut]
        errors: list[str] = []
        method = ""
        if folded:
            res = self.summarizer.summarize(st.summary, folded)
            st.summary, method = res.text, res.method
            if res.error:
                errors.append(f"summary LLM failed, extractive summary used: {res.error}")
            st.messages = st.messages[cut:]
            st.folds += 1
            st.folded_messages += len(folded)
        dropped = self._force_compress()
        errors += self._extract(ends.pending(folded + dropped))
        return SessionUpdate(summarized=bool(folded), reason=reason, folded=len(folded), dropped=len(dropped),
                             method=method, notice=NOTICE, errors=tuple(errors))

    def _force_compress(self) -> list[dict[str, Any]]:
        """Emergency (seed 001 forceCompression): while summary + buffer do not fit the window
        minus the answer reserve, drop the oldest half of the buffer."""
        st, pol = self._state, self.policy
        limit = pol.context_window - reserve_tokens(pol.context_window)
        dropped: list[dict[str, Any]] = []
        while len(st.messages) > 1 and self.token_count() > limit:
            half = len(st.messages) // 2
            dropped += st.messages[:half]
            st.messages = st.messages[half:]
        if dropped:
            st.dropped_messages += len(dropped)
            log.warning("session %s: force compression dropped the %d oldest messages", st.session_id, len(dropped))
        return dropped

    def _extract(self, messages: list[dict[str, Any]]) -> list[str]:
        """Send folded messages to long-term extraction (seed 003 §5.1: on summary created)."""
        if not messages or not ends.may_extract(self._ports, self.user_id, self.memory_enabled):
            return []
        try:
            self._ports.ingest.add([{"role": m["role"], "content": m["content"], "timestamp": m.get("at")}
                                    for m in messages if m["content"].strip()],
                                   self.user_id, agent_id=self.agent_id, session_id=self.session_id)
        except MemfoldError as exc:
            log.warning("session %s: extraction of folded messages failed: %s", self.session_id, exc)
            return [f"extraction failed: {exc}"]
        return []


def session_policy(base: Policy, preset: str | None, overrides: dict[str, Any] | None) -> Policy:
    """The policy of a session: the namespace's, then a named preset, then explicit values."""
    pol = base
    if preset is not None:
        if preset not in SESSION_PRESETS:
            raise ConfigError(f"unknown session preset {preset!r}; known: {', '.join(SESSION_PRESETS)}")
        pol = pol.merged(SESSION_PRESETS[preset], f"session preset {preset!r}")
    return pol.merged(overrides, "session arguments")


def check_language(language: str) -> str:
    """A session's language (by default the one the user's MEMORY.md was initialised with)."""
    if language not in ("en", "zh"):
        raise InvalidInputError(f"language must be 'en' or 'zh', got {language!r}", field="language")
    return language


def stateless_context(ports: SessionPorts, pins: Sequence[str], policy: Policy, user_message: str, user_id: str, *,
                      language: str, base_prompt: str | None = None,
                      memory_enabled: bool = True, tools: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """``build_context`` without a session: memory, the agent's pins and the message."""
    builder = ContextBuilder(ports.retriever, ports.embedder, user_id, policy, check_language(language))
    sized = ports.file_chars
    return builder.build(user_message, pins=pins if memory_enabled else [], memory_enabled=memory_enabled,
                         base_prompt=base_prompt, tools=tools,
                         file_chars=sized(user_id) if sized and memory_enabled else None).messages
