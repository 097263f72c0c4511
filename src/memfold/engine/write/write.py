"""The write path (SPEC §4): input → guard → extraction → dedupe → persist.

Without an LLM, extraction is rule-based and a changed near-duplicate replaces the old record;
with one (``llm_write``), one extraction call per add and LLM merge decisions (``merge.LlmDecider``).
Near-duplicates: ``dedupe.plan`` returns typed actions, which ``_execute`` carries out."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInputError
from ...limits import MAX_CONTENT_CHARS, check_length
from ...models import EPISODIC, AddResult, HistoryEntry, MemoryRecord, MemoryType, Message, utcnow
from ...policy import Policy
from ...text import extraction
from ...text.forget import find_request
from ...text.memory_markdown import clean_content
from ...text.secrets import a_kind, screen
from ..llm.llm_calls import LLMCalls
from ..llm.llm_extract import SourceTurns
from ..llm.llm_write import LLMWriteSteps, note_records
from ..storage import guard
from ..storage import records as rec
from ..storage.guard import check_fields, redacted_note, screen_text
from ..storage.store import UserStore, file_for
from . import dedupe, forget_requests, merge, todos
from .conversations import split_long
from .dedupe import Candidate, Origin

if TYPE_CHECKING:
    from ...config import LLMSettings
    from ...providers.chat import ChatModel

log = logging.getLogger("memfold")
USER_ROLES = {"user", "human"}
ROLES = USER_ROLES | {"assistant", "ai", "bot", "model", "system", "developer", "tool", "function"}  # others: skipped
# how much of an assistant's reply the next user turn's context quotes (a reply can be pages long,
# and the context is embedded first: whole, it pushed the user's own words out of the vector)
QUOTED_REPLY_CHARS = 300


def quoted_reply(text: str, limit: int) -> str:
    """The start of an assistant's reply, at most ``limit`` characters, cut at a space when there is one."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit + 1)
    return text[: cut if cut > 0 else limit]


DEFAULT_IMPORTANCE = {MemoryType.PREFERENCE: 0.7, MemoryType.TODO: 0.7, MemoryType.FACT: 0.6, MemoryType.SKILL: 0.7}


def parse_messages(data: Sequence[Any]) -> tuple[list[Message], dict[int, str]]:
    """The messages, and what is wrong with the malformed ones by index (each stands as an empty
    message, so that indices stay those of ``data``); when every message is malformed, the
    first one's error is raised."""
    out: list[Message] = []
    bad: dict[int, str] = {}
    first: InvalidInputError | None = None
    for i, m in enumerate(data):
        try:
            out.append(_parse_message(i, m))
        except InvalidInputError as exc:
            first = first or exc
            bad[i] = str(exc).removeprefix(f"message {i} ").removeprefix(f"message {i}: ")
            out.append(Message(role="", content=""))
    if first is not None and len(bad) == len(out):
        raise first
    return out, bad


def _parse_message(i: int, m: Any) -> Message:
    if isinstance(m, Message):
        return m
    if not isinstance(m, dict):
        raise InvalidInputError(f"message {i} must be an object with 'role' and 'content', got {type(m).__name__}")
    role, content = m.get("role"), m.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise InvalidInputError(f"message {i} needs string fields 'role' and 'content'")
    role, content = guard.text(role, f"message {i} role"), guard.text(content, f"message {i} content")
    ts = m.get("timestamp") or m.get("created_at")
    when = None
    if isinstance(ts, datetime):
        when = ts
    elif ts:
        try:
            when = datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(f"message {i}: timestamp {ts!r} is not ISO 8601") from None
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    tid = m.get("turn_id") or m.get("id") or m.get("dia_id")
    name = m.get("name") or m.get("speaker")
    return Message(role=role.strip().lower(), content=content, timestamp=when,
                   turn_id=guard.text(str(tid), f"message {i} turn_id").strip() or None
                   if tid is not None else None,
                   name=guard.text(name, f"message {i} name").strip() or None if name is not None else None)


def strength(score: float) -> float:
    """A relation's strength from the cosine of the pair it relates (0 to 1)."""
    return round(min(1.0, max(0.0, float(score))), 4)


class WritePath:
    def __init__(self, store: Callable[[str], UserStore], policy: Callable[[str], Policy], *,
                 llm: "LLMSettings | ChatModel | None" = None, forget: forget_requests.FinderFn | None = None,
                 vectors_later: Callable[[], None] | None = None):
        self._store = store
        self._policy = policy
        # write-ahead mode: new memories are stored without their vectors and this wakes the worker
        self.vectors_later = vectors_later
        self.llm = LLMWriteSteps(llm)  # llm.chat is None: the deterministic path
        self._find_forget = forget  # (query, user_id) -> the memories a forget request matches

    def llm_usage(self, user_id: str) -> dict[str, Any]:
        """LLM calls and tokens spent on this namespace (``memfold stats``)."""
        return self.llm.usage(self._store(user_id).index, user_id)

    def add(self, data: str | Sequence[Any], user_id: str, *, memory_type: str | MemoryType | None = None,
            importance: float | None = None, agent_id: str | None = None, session_id: str | None = None,
            structured_data: dict[str, Any] | None = None, infer: bool = True,
            source_ids: Sequence[str] = (), metadata: dict[str, Any] | None = None, dedupe: bool = True) -> AddResult:
        """``metadata``: keys added to the ``structured_data`` of every memory this call stores
        (turns and what is extracted from them alike); without ``dedupe`` every memory is stored as
        it is, even next to a near-duplicate."""
        if importance is not None and not (0.0 <= float(importance) <= 1.0):
            raise InvalidInputError(f"importance must be between 0 and 1, got {importance}", field="importance")
        mtype = MemoryType.parse(memory_type) if memory_type is not None else None
        check_fields(structured_data=structured_data, source_ids=source_ids or None, agent_id=agent_id,
                     session_id=session_id)
        now = utcnow()
        skipped: list[str] = []
        refused: list[str] = []
        redacted: list[str] = []
        cands: list[Candidate] = []
        warnings: list[str] = []
        forgets: list[tuple[int, str | None]] = []  # forget requests: (message index, query | None = last add)
        dones: list[tuple[int, str]] = []  # "done: X": (message index, what is done)
        completed: list[MemoryRecord] = []
        turn_of: dict[str, int] = {}  # candidate id -> index of the message it came from
        source = SourceTurns()  # what the LLM extracts from
        calls = self.llm.begin()
        if isinstance(data, str):
            text = clean_content(data)
            if not text:
                return AddResult(skipped=("empty content",))
            self._check_size(text)
            screened = screen_text(text)  # mostly a secret: refused; else the secrets are redacted
            if screened.redacted:
                text = screened.text
                redacted.append(redacted_note("the text", screened))
            req = find_request(text)
            if req is not None:  # "forget that …" / "别记…": nothing of this text is stored
                skipped.append("the text asks not to remember something; nothing stored")
                if req.query or req.points_back:
                    forgets.append((0, req.query))
            else:
                body, explicit = extraction.strip_command(text)  # "remember that …": the words after the command
                done = extraction.done_statement(body) if mtype in (None, MemoryType.TODO) else None
                todo = todos.match(self._store(user_id), user_id, done) if done else None
                if todo is not None:  # "done: X" closes the open todo X instead of being stored
                    dones.append((0, done or ""))
                else:
                    if done:
                        warnings.append(f"no open todo matches {done!r}; the text was stored as it is")
                    t, data_rules = extraction.classify(body) if mtype is None else (mtype, {})
                    default = extraction.EXPLICIT_IMPORTANCE if explicit else DEFAULT_IMPORTANCE.get(t, 0.5)
                    cands.append(Candidate(self._record(
                        user_id, t, body, now, importance if importance is not None else default,
                        structured_data or data_rules, tuple(source_ids), agent_id, session_id), Origin.TEXT))
        else:
            messages, bad = parse_messages(data)
            fplan = forget_requests.plan(messages, USER_ROLES)
            forgets.extend(fplan.requests)
            all_src: list[str] = []
            prev = ""
            for i, m in enumerate(messages):
                if i in bad:  # malformed: reported by its index, the others are stored
                    skipped.append(f"message {i}: {bad[i]}; skipped")
                    prev = ""
                    continue
                if m.role not in ROLES:
                    skipped.append(f"message {i}{f' ({m.turn_id})' if m.turn_id else ''}: unknown role {m.role!r} "
                                   f"(expected one of {', '.join(sorted(ROLES))}); skipped")
                    prev = ""
                    continue
                text = clean_content(m.content)
                label = m.turn_id or f"message {i}"
                if not text:
                    skipped.append(f"{label}: empty")
                    continue
                if i in fplan.dropped:
                    skipped.append(f"{label}: {fplan.dropped[i]}")
                    prev = ""
                    continue
                screened = screen(text)
                if screened.mostly_secret:
                    refused.append(f"{label}: contains {a_kind(screened.kinds[0])}; not stored")
                    prev = ""
                    continue
                if screened.redacted:
                    redacted.append(redacted_note(label, screened))
                text = screened.text
                pieces = split_long(text, MAX_CONTENT_CHARS)  # a long turn: several records, one turn id
                when = m.timestamp or now
                src = (m.turn_id,) if m.turn_id else tuple(source_ids)
                n_before = len(cands)
                if m.role in USER_ROLES:
                    speaker = f"{m.name}: " if m.name else ""
                    day = f"{when:%Y-%m-%d %B %Y}"  # the date in words too: "in May 2023" matches
                    context = f"{day} {prev}\n{speaker}".strip() if prev else f"{day} {speaker}".strip()
                    turn = [self._record(
                        user_id, MemoryType.EVENT, piece, when, importance if importance is not None else 0.3,
                        {"role": m.role, **({"speaker": m.name} if m.name else {})}, src, agent_id, session_id,
                        file=EPISODIC, context=context) for piece in pieces]
                    if not m.turn_id:  # the turn's key is the id of its first record: what it yields lists it
                        src = (turn[0].id, *(s for s in src if s != turn[0].id))
                        turn = [t.with_(source_ids=src) for t in turn]
                    cands.extend(Candidate(t, Origin.TURN) for t in turn)
                    done = extraction.done_statement(text) if infer else None
                    if done:  # "done: X": closes the open todo X once the messages are stored
                        dones.append((i, done))
                    elif infer and calls is None:  # rules; with an LLM, one extraction call below
                        for ex in extraction.extract(screened.kept):  # the clauses without secrets
                            t = mtype or ex.memory_type
                            cands.append(Candidate(self._record(
                                user_id, t, ex.content, when, importance if importance is not None else ex.importance,
                                {**ex.structured_data, **({"speaker": m.name} if m.name else {})}, src, agent_id,
                                session_id), Origin.EXTRACTED))
                prev = (f"{m.name}: " if m.name else "") + (
                    pieces[-1] if m.role in USER_ROLES else quoted_reply(pieces[0], QUOTED_REPLY_CHARS))
                turn_of.update((c.record.id, i) for c in cands[n_before:])
                source.add(m.name or m.role.capitalize(), text, when.date().isoformat(), m.role in USER_ROLES)
                all_src.extend(s for s in src if m.role in USER_ROLES and s not in all_src)
            if infer and calls is not None and source.user_text:
                last = next((m.timestamp for m in reversed(messages) if m.timestamp), None) or now
                cands.extend(self._llm_candidates(user_id, calls, source, last, mtype, importance, tuple(all_src),
                                                  agent_id, session_id, warnings, refused))
        if metadata:
            cands = [Candidate(c.record.with_(structured_data={**c.record.structured_data, **metadata}), c.origin)
                     for c in cands]
        store = self._store(user_id)
        try:
            added, merged = (([], []) if not cands else self._dedupe_and_persist(user_id, cands, calls, warnings)
                             if dedupe else self._store_all(user_id, cands))
            forgotten = forget_requests.apply(store, user_id, forgets, self._find_forget, turn_of) if forgets else []
            completed = self._close_todos(store, user_id, dones, added, turn_of, warnings, single=isinstance(data, str))
            if added:
                last_turn = max((turn_of[r.id] for r in added if r.id in turn_of), default=None)
                single = len(source.user_text) <= 1
                forget_requests.remember_last_add(store.index, user_id, [
                    r.id for r in added if turn_of.get(r.id, -1) == last_turn or (r.id not in turn_of and single)])
        finally:
            self.llm.finish(store, user_id, calls)
        return AddResult(added=tuple(added), merged=tuple(merged), skipped=tuple(skipped), refused=tuple(refused),
                         warnings=tuple(warnings), forgotten=tuple(forgotten), redacted=tuple(redacted),
                         completed=tuple(completed))

    @staticmethod
    def _close_todos(store: UserStore, user_id: str, dones: list[tuple[int, str]], added: list[MemoryRecord],
                     turn_of: dict[str, int], warnings: list[str], *, single: bool) -> list[MemoryRecord]:
        """Close the open todo each "done: X" names; todos stored in this call from later messages
        are spared (they were said after it was done)."""
        closed: list[MemoryRecord] = []
        for i, what in dones:
            later = {r.id for r in added if turn_of.get(r.id, -1) > i} | {r.id for r in closed}
            todo = todos.match(store, user_id, what, exclude=later)
            if todo is None:
                warnings.append(f"{'' if single else f'message {i}: '}no open todo matches {what!r}")
                continue
            done = todos.close(store, todo, what)
            if done is None:
                warnings.append(f"the todo {todo.id} changed while it was being closed; it is still open")
            else:
                closed.append(done)
        return closed

    def _llm_candidates(self, user_id: str, calls: LLMCalls, source: SourceTurns, when: datetime,
                        mtype: MemoryType | None, importance: float | None, src: tuple[str, ...],
                        agent_id: str | None, session_id: str | None, warnings: list[str],
                        refused: list[str]) -> list[Candidate]:
        """One LLM extraction over the accepted turns; when it fails, what the user said is kept
        as a note in the day's note file and the failure is reported (never dropped)."""
        store = self._store(user_id)
        ext = self.llm.extract(calls, source, default_language=store.space.language,
                               today=when.strftime("%Y-%m-%d (%A)"))
        refused.extend(ext.refused)
        if ext.error is None:
            return [Candidate(self._record(user_id, mtype or ex.memory_type, ex.content, when,
                                           importance if importance is not None else ex.importance,
                                           ex.structured_data, src, agent_id, session_id), Origin.EXTRACTED)
                    for ex in ext.memories]
        notes = note_records(source, when, MAX_CONTENT_CHARS)
        warnings.append(f"{ext.error}; what the user said was kept as a note in {notes[0][2]}")
        log.warning("%s; kept %d note(s) for %s instead", ext.error, len(notes), user_id)
        return [Candidate(self._record(user_id, t, content, when, 0.5, {"kept": "LLM extraction failed"}, src,
                                       agent_id, session_id, file=rel), Origin.KEPT) for t, content, rel in notes]

    @staticmethod
    def _check_size(text: str) -> None:
        check_length("the text", text, MAX_CONTENT_CHARS, field="text")

    @staticmethod
    def _record(user_id: str, t: MemoryType, content: str, when: datetime, importance: float,
                data: dict[str, Any], src: tuple[str, ...], agent_id: str | None, session_id: str | None,
                file: str | None = None, context: str = "") -> MemoryRecord:
        r = MemoryRecord(id=rec.new_id(), user_id=user_id, memory_type=t, content=content, created_at=when,
                         updated_at=when, importance=float(importance), structured_data=dict(data), source_ids=src,
                         agent_id=agent_id, source_session_id=session_id, file=file or "", context=context)
        return r if file is not None else r.with_(file=file_for(r))

    def _dedupe_and_persist(self, user_id: str, cands: list[Candidate], calls: LLMCalls | None = None,
                            warnings: list[str] | None = None) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        store = self._store(user_id)
        if self.vectors_later is not None and calls is None:
            return self._write_ahead(user_id, store, cands)
        threshold = self._policy(user_id).dedupe_threshold
        vecs = store.embedder.embed([rec.embed_text(c.record) for c in cands])
        decider: dedupe.Decider = dedupe.RuleDecider()  # without an LLM: the deterministic rule
        if calls is not None:  # the LLM's answers, asked outside the lock
            store.sync()
            llm = merge.LlmDecider(calls, store.embedder, store.space.language)
            problems = llm.prepare(cands, dedupe.neighbours(store.index, user_id, vecs, threshold))
            if warnings is not None:
                warnings.extend(problems)
            decider = llm
        with store.space.lock:  # the duplicate check and the write must see the same state
            store.sync()
            plan = dedupe.plan(cands, vecs, dedupe.neighbours(store.index, user_id, vecs, threshold), decider)
            return self._execute(user_id, store, plan)

    def _store_all(self, user_id: str, cands: list[Candidate]) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        """Every candidate stored as it is, with its vector (no near-duplicate check)."""
        store = self._store(user_id)
        if self.vectors_later is not None:
            return self._write_ahead(user_id, store, cands)
        vecs = store.embedder.embed([rec.embed_text(c.record) for c in cands])
        history = [HistoryEntry(c.record.id, user_id, "add", utcnow(), None, c.record.content,
                                {"type": c.record.memory_type.value, "file": c.record.file or "index",
                                 "origin": c.origin.value}) for c in cands]
        store.append([c.record for c in cands], vecs, history)
        return [c.record for c in cands], []

    def _write_ahead(self, user_id: str, store: UserStore, cands: list[Candidate]
                     ) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        """Write-ahead mode: every candidate is stored as it is (the near-duplicate check needs the
        vectors, which come later) and the vector worker is woken."""
        records = [c.record for c in cands]
        history = [HistoryEntry(c.record.id, user_id, "add", utcnow(), None, c.record.content,
                                {"type": c.record.memory_type.value, "file": c.record.file or "index",
                                 "origin": c.origin.value, "vector": "later"}) for c in cands]
        store.append(records, None, history, vectors_later=True)
        if self.vectors_later is not None:
            self.vectors_later()
        return records, []

    @staticmethod
    def _execute(user_id: str, store: UserStore, plan: dedupe.Plan) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        """Carry out a dedupe plan: store the new records, then the absorbs and the supersedes."""
        new_records = [c.record for c in plan.store]
        history = {c.record.id: HistoryEntry(c.record.id, user_id, "add", utcnow(), None, c.record.content,
                                             {"type": c.record.memory_type.value, "file": c.record.file or "index",
                                              "origin": c.origin.value})
                   for c in plan.store}
        superseding = [a for a in plan.actions if isinstance(a, (dedupe.Replace, dedupe.Merge))]
        for a in superseding:  # the new record's history names the one it supersedes
            if a.decision.by_llm:
                detail = dict(history[a.new.id].detail, supersedes=a.old.id, reason=a.decision.reason, rule="llm")
                if isinstance(a, dedupe.Merge):
                    detail["incoming"] = a.incoming
                history[a.new.id] = HistoryEntry(a.new.id, user_id, a.decision.verdict.value, utcnow(),
                                                 a.old.content, a.new.content, detail)
        store.append(new_records, plan.vectors, list(history.values()))
        merged: list[MemoryRecord] = []
        for absorb in plan.actions:
            if not isinstance(absorb, dedupe.Absorb):
                continue
            old, new = absorb.old, absorb.updated
            detail = {"source_ids": list(new.source_ids), "rule": "duplicate"}
            if new.file == EPISODIC:
                store.index.upsert([rec.item(new, None)])
                store.index.append_history([HistoryEntry(old.id, user_id, "merge", utcnow(), old.content,
                                                         new.content, detail)])
            else:
                store.rewrite(old, new, "merge", detail)
            merged.append(new)
        for a in superseding:
            detail = {"rule": a.decision.rule, "similar_to": a.new.id}
            if a.decision.by_llm:
                detail.update(action=a.decision.verdict.value, reason=a.decision.reason, new_content=a.new.content)
            store.archive(a.old, a.new.id, detail)
            store.index.add_relation(user_id, a.new.id, a.old.id, a.decision.relation, strength(a.score))
        for both in plan.actions:  # distinct memories whose evidence agrees
            if isinstance(both, dedupe.KeepBoth) and both.agrees:
                store.index.add_relation(user_id, both.new.id, both.old.id, "supports", strength(both.score))
        return new_records, merged
