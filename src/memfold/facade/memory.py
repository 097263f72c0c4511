"""The ``Memory`` facade: wires workspace, index and providers from the settings."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import filters as filters_mod
from ..cache import cached, cached_queries
from ..config import Settings, load_settings
from ..engine.conversation.ports import SessionPorts
from ..engine.conversation.session import DEFAULT_AGENT, Session, check_language, session_policy, stateless_context
from ..engine.conversation.session import STATE_KIND as SESSION_KIND
from ..engine.conversation.session_end import SessionEnds
from ..engine.read import usage
from ..engine.read.rank_second import SecondModel
from ..engine.read.read import Retriever, collapse_turn_copies
from ..engine.read.turns import one_fact_once
from ..engine.storage import guard
from ..engine.storage import records as rec
from ..engine.storage.guard import check_fields, screen_text
from ..engine.storage.pin import STATE_KIND as PIN_KIND
from ..engine.storage.pin import PinList, PinStore
from ..engine.storage.store import Namespace, UserStore, daily_file
from ..engine.storage.user_language import user_language
from ..engine.write import text_edit
from ..engine.write.edit import Editor
from ..engine.write.vector_worker import CLOSE_DRAIN_S, start_for, start_second
from ..engine.write.write import WritePath
from ..errors import ArgumentError, ConfigError, InvalidInputError, NotFoundError, ReadOnlyWorkspaceError
from ..index.base import HotSet, Index, capability, open_index
from ..limits import MAX_CONTENT_CHARS, MAX_QUERY_CHARS, check_length
from ..maintenance.evolution import PolicyEvolution
from ..maintenance.policy_files import PolicyFiles
from ..maintenance.runner import run_due
from ..metrics import measured
from ..models import EPISODIC, FILE_MEMORY, AddResult, HistoryEntry, MemoryRecord, MemoryType, Retrieval, SearchHit, utcnow
from ..policy import Policy
from ..providers.chat import ChatModel
from ..providers.embedder import Embedder, make_embedder
from ..rerank import make_stage
from ..text.memory_markdown import clean_content
from ..workspace.editsafe import split_marker
from ..workspace.userspace import UserSpace, Workspace, check_user_id
from . import admin, switch
from . import relations as relations_mod
from . import skills as skills_mod

log = logging.getLogger("memfold")

DEFAULT_USER = "default"
FILTERED_POOL = 1000  # ranked hits a filtered search looks through at most


def quality_embedder(settings: Settings, embedder: Embedder | None = None) -> Embedder | None:
    """The second embedding model of ``[search] profile = "quality"`` (``embedder``, or the bundled
    multilingual-e5-small); None for the default profile. A clear error when its optional package is
    not installed."""
    if settings.search.profile != "quality":
        return None
    if embedder is None:
        from ..providers.embedder import E5_INSTALL, E5Embedder, e5_available

        if not e5_available():
            raise ConfigError("[search] profile = 'quality' needs the optional model multilingual-e5-small: "
                              f"{E5_INSTALL}")
        embedder = E5Embedder(batch_size=settings.embedder.batch_size, max_chars=settings.embedder.max_chars)
    return embedder


def _one_of(call: str, name: str, value: Any, alias: str, other: Any) -> Any:
    """The value of an argument that has two names (``content`` / ``data``): one of them, not both."""
    if other is None:
        return value
    if value is not None and value != other:
        raise ArgumentError(f"{call}(): give {name} or {alias} (the same thing), not both")
    return other


class Memory:
    """Long-term memory for agents: Markdown files as the source of truth, a derived index.

    ``Memory(root=...)``; every call takes ``user_id`` (default ``"default"``). A ``Memory`` kept
    open runs the due maintenance jobs in a background thread (``[maintenance]``: the first look
    after ``first_run_seconds``, then every ``interval_minutes``); ``background=False`` starts
    no thread, ``close()`` stops it."""

    def __init__(self, root: str | Path | None = None, *, settings: Settings | None = None,
                 embedder: Embedder | None = None, index: Index | None = None,
                 policy: dict[str, Any] | None = None, language: str | None = None, background: bool = True,
                 second_embedder: Embedder | None = None):
        self.settings = settings or load_settings(root, **({"language": language} if language else {}))
        self.workspace = Workspace(self.settings.root, self.settings.language)
        stage = make_stage(self.settings)  # the opt-in [rerank] stage of searches (None: off)
        second_emb = quality_embedder(self.settings, second_embedder)  # [search] profile = "quality"; None: off
        self.embedder = embedder or make_embedder(self.settings.embedder)
        self.index = cached(index or open_index(self.settings, self.embedder.dim, self.embedder.name),
                            self.settings.cache)  # the hot cache in front of the index ([cache])
        self.embedder = cached_queries(self.embedder, self.index)  # query vectors from the same cache
        second = SecondModel(cached_queries(second_emb, self.index)) if second_emb is not None else None
        self._policy_args = policy or {}
        self._base_policy = self.settings.base_policy()
        self._policies: dict[str, tuple[tuple[int, int, int] | None, Policy, PolicyFiles]] = {}
        self._stores: dict[str, UserStore] = {}
        self._lock = threading.RLock()
        self.retriever = Retriever(self._store, self.policy, stage, second)
        self.editor = Editor(self._store, self.retriever, self.embedder, lambda: self.pin_store)
        ix = self.settings.index
        self.vector_worker = start_for(self.index, self.embedder, ix.write_ahead, ix.write_ahead_delay_ms)
        # the quality profile's second vectors: written after each add, the rows left without one caught up now
        self.second_worker = start_second(self.index, second.embedder, ix.write_ahead_delay_ms) if second else None
        self.writer = WritePath(self._store, self.policy, llm=self.settings.llm, forget=self.editor.finder,
                                vectors_later=self.vector_worker.notify if ix.write_ahead and self.vector_worker
                                else None)
        self._ends = SessionEnds(lambda u: self.workspace.user(u).dir, lambda: self._session_ports)  # locks, TTL
        self._session_ports = SessionPorts(self, self, self, self.embedder, self.index, self._ends.locks, self.memory_enabled,
                                           after_message=self.evolution, file_chars=self._memory_file_chars)
        self._file_sizes: dict[str, tuple[tuple[int, int], int | None]] = {}  # user -> (file stat, characters)
        self.policy("default")  # validate argument overrides at construction
        self._scheduler: Any = None
        self._closed = False
        if background:
            self.start_maintenance()

    def _memory_file_chars(self, user_id: str) -> int | None:
        """MEMORY.md's characters as the model reads it (as a query-less context injects it: no id or
        template comments, no blank runs), measured again only when the file changed."""
        from ..engine.conversation.context import clean_memory_file

        store = self._store(user_id)
        try:
            st = (store.space.dir / FILE_MEMORY).stat()
        except FileNotFoundError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        with self._lock:
            got = self._file_sizes.get(user_id)
        if got is not None and got[0] == stamp:
            return got[1]
        try:
            chars: int | None = len(clean_memory_file(split_marker(store.space.read(FILE_MEMORY))[0]))
        except NotFoundError:
            chars = None
        with self._lock:
            self._file_sizes[user_id] = (stamp, chars)  # one entry per namespace this Memory has opened
        return chars

    def start_maintenance(self) -> bool:
        """Start the background maintenance of a long-lived process (``[maintenance]``), once; False
        when it is switched off (``background = false`` or ``interval_minutes = 0``)."""
        from ..maintenance.schedule import background_scheduler

        with self._lock:
            if self._scheduler is None:
                self._scheduler = background_scheduler(self)
                if self._scheduler is not None:
                    self._scheduler.start()
            return self._scheduler is not None

    # ---- wiring ----------------------------------------------------------------------
    def _store(self, user_id: str) -> UserStore:
        with self._lock:
            st = self._stores.get(user_id)
            if st is None and (uid := check_user_id(user_id)) != user_id:
                return self._store(uid)  # the id as given is not in normal form C: the stored namespace's
            if st is not None:  # the backup keys of a changed policy file apply at once
                pol = self.policy(user_id)
                st.backup_keep, st.space.backup_max_age_days = pol.backup_keep, pol.backup_max_age_days
                return st
            space = self.workspace.user(user_id)
            space.language = user_language(space.dir, self.settings.language)  # the user's own template's
            st = self._stores[user_id] = UserStore(space, self.index, self.embedder, self.policy(user_id).backup_keep)
            if self.second_worker is not None:
                st.after_write = self.second_worker.wrote
            pol = self.policy(user_id)
            space.backup_max_age_days = pol.backup_max_age_days
        _tidy(space, pol)  # tries the user lock: outside our own lock (a writer holding it may need ours)
        return st

    def _owner(self, memory_id: str, user_id: str | None, call: str, text_name: str | None = None) -> str:
        """The namespace of a call about one memory: ``user_id`` when given; else ``default`` when it
        holds the memory, else the one namespace that does (``NotFoundError`` saying where it looked)."""
        if user_id is not None:
            return guard.user_arg(user_id, call, text_name)
        owners = self.index.owners(memory_id)
        if not owners:  # perhaps a line written by hand into default's files since the last sync
            self._store(DEFAULT_USER).sync(wait=False)
            owners = self.index.owners(memory_id)
        if not owners:
            raise NotFoundError(f"no memory {memory_id!r}: no user_id was given, and neither user 'default' nor any "
                                "other namespace holds it", field="memory_id")
        if DEFAULT_USER in owners:
            return DEFAULT_USER
        if len(owners) == 1:
            return owners[0]
        raise ArgumentError(f"{call}(): memory {memory_id!r} is known in several namespaces ({', '.join(owners)}); "
                            "pass user_id=...")

    def close(self) -> None:
        """Close the index and the LLM client (the chat model made from the settings), after a
        background compression in progress has finished (a background maintenance run stops at its
        next step)."""
        self._closed = True  # a background run started by anyone ends at its next step
        if self._scheduler is not None:
            self._scheduler.stop()
        if "_auto" in self.__dict__:
            self._auto.join()
        if "_evolution" in self.__dict__:  # a reflection in progress writes its outcome first
            self._evolution.join()
        chat_close = getattr(self.chat_model, "close", None)
        if callable(chat_close):
            chat_close()
        if self.vector_worker is not None:  # write-ahead mode: the rows still waiting get their vectors
            self.vector_worker.close()
        if self.second_worker is not None:  # the quality profile: what this process wrote is embedded for a
            # while, the rest (and rows left by others: a short command does not wait for them) at the next open
            w = self.second_worker
            w.close(drain=w.written, drain_seconds=CLOSE_DRAIN_S)
        if self.retriever.stage is not None:
            self.retriever.stage.close()
        self.index.close()

    def flush_vectors(self, timeout: float = 600.0) -> bool:
        """Wait until every row written so far has the vectors computed after its add: its vector in
        write-ahead mode, its second vector with ``[search] profile = "quality"``. True when they
        all have them (also when nothing computes any), False after ``timeout`` seconds."""
        done = True
        for worker in (self.vector_worker, self.second_worker):
            if worker is not None:
                done = worker.flush(timeout=timeout) and done
        return done

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._closed

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- workspace -----------------------------------------------------------------------
    def init(self, user_id: str = "default", language: str | None = None) -> Path:
        """Create the namespace's MEMORY.md and learnings.md from the templates (idempotent)."""
        if language not in (None, "en", "zh"):
            raise InvalidInputError(f"language must be 'en' or 'zh', got {language!r}", field="language")
        st = self._store(guard.user(user_id))
        st.space.init(language)
        st.space.language = user_language(st.space.dir, language or st.space.language)  # an existing file's wins
        st.sync()
        return st.space.dir

    def language(self, user_id: str = "default") -> str:
        """The language of the user's MEMORY.md (``en`` | ``zh``): the prompts injected for the user use it."""
        return self._store(guard.user(user_id)).space.language

    def show(self, user_id: str = "default") -> str:
        """The text of MEMORY.md without memfold's revision marker line (NotFoundError when the
        namespace has none)."""
        return split_marker(self._store(guard.user(user_id)).space.read(FILE_MEMORY))[0]

    # ---- write ---------------------------------------------------------------------------
    @measured("add")
    def add(self, data: str | Sequence[Any], user_id: str = "default", *, memory_type: str | MemoryType | None = None,
            importance: float | None = None, agent_id: str | None = None, session_id: str | None = None,
            structured_data: dict[str, Any] | None = None, infer: bool = True,
            source_ids: Sequence[str] = (), metadata: dict[str, Any] | None = None,
            run_id: str | None = None, dedupe: bool = True) -> AddResult:
        """Store a text (one memory) or a list of chat messages (episodic turns + extracted memories).
        ``metadata``: keys added to the ``structured_data`` of every memory stored (filter on them
        with ``filters=``); ``run_id``: another name of ``session_id``; ``dedupe=False`` stores each
        memory as it is, even next to a near-duplicate (an application that keeps items apart by
        their own keys: a near-duplicate would otherwise be folded into the stored one)."""
        user_id = guard.user_arg(user_id, "add")
        metadata = guard.structured_data(metadata, "metadata")
        check_fields(metadata=metadata)
        if run_id is not None:
            if session_id is not None and session_id != run_id:
                raise ArgumentError("add(): give session_id or run_id (the same thing), not two different ones")
            session_id = run_id
        data = guard.memory_text(data, "data") if isinstance(data, str) else guard.message_list(data, "data")
        mtype = guard.memory_type(memory_type)
        importance = guard.optional_number(importance, "importance")
        agent_id = guard.optional_ident(agent_id, "agent_id")
        session_id = guard.optional_ident(session_id, "session_id")
        structured_data = guard.structured_data(structured_data)
        infer = guard.flag(infer, "infer")
        source_ids = guard.id_list(source_ids, "source_ids")
        result = self.writer.add(data, user_id, memory_type=mtype, importance=importance, agent_id=agent_id,
                                 session_id=session_id, structured_data=structured_data, infer=infer,
                                 source_ids=source_ids, metadata=metadata, dedupe=guard.flag(dedupe, "dedupe"))
        if agent_id and result.added:  # SPEC §4.6: pin what the agent saved (raw turns are not pinned)
            self.pin_store.append(user_id, agent_id, [(r.content, r.id) for r in result.added if r.file != EPISODIC])
        if result.forgotten:  # a forget request in the conversation
            self.pin_store.discard(user_id, [r.content for r in result.forgotten])
        if result.added:  # seed 001 §1.6: over long_term_compress_char_threshold, compression starts in the background
            self._auto_compression.after_add(self, user_id)
        return result

    def add_note(self, text: str, user_id: str = "default", *, when: datetime | None = None) -> MemoryRecord:
        """Append a bullet to today's daily note ``memory/YYYYMM/YYYYMMDD.md``."""
        user_id = guard.user(user_id)
        content = clean_content(guard.memory_text(text, "text"))
        check_length("the note", content, MAX_CONTENT_CHARS, field="text")
        if when is not None and not isinstance(when, datetime):
            raise InvalidInputError(f"when must be a datetime, got {type(when).__name__}", field="when")
        content = screen_text(content).text  # secrets redacted; mostly a secret: refused
        now = when or utcnow()
        r = MemoryRecord(id=rec.new_id(), user_id=user_id, memory_type=MemoryType.NOTE, content=content,
                         created_at=now, updated_at=now, file=daily_file(now))
        st = self._store(user_id)
        vec = self.embedder.embed([content])
        st.append([r], vec, [HistoryEntry(r.id, user_id, "add", utcnow(), None, content, {"file": r.file})])
        return r

    def update(self, memory_id: str, user_id: str | None = None, *, content: str | None = None,
               importance: float | None = None, memory_type: str | MemoryType | None = None,
               structured_data: dict[str, Any] | None = None, data: str | None = None,
               metadata: dict[str, Any] | None = None) -> MemoryRecord:
        """Change a memory's words, importance, type or structure (after a backup); a call that
        changes nothing writes nothing and returns the memory unchanged. ``data`` is another name of
        ``content``, ``metadata`` of ``structured_data``. Without ``user_id`` the memory is looked
        for in ``default``, then in whichever namespace holds it."""
        content = _one_of("update", "content", content, "data", data)
        structured_data = _one_of("update", "structured_data", structured_data, "metadata", metadata)
        importance = guard.optional_number(importance, "importance")
        mtype = guard.memory_type(memory_type)
        structured_data = guard.structured_data(structured_data)
        check_fields(structured_data=structured_data)
        content = guard.optional_text(content, "content")
        memory_id = guard.ident(memory_id, "memory_id")
        user_id = self._owner(memory_id, user_id, "update", "content")
        return self.editor.update(memory_id, user_id, content=content, importance=importance,
                                  memory_type=mtype, structured_data=structured_data)

    def delete(self, memory_id: str, user_id: str | None = None, *, action: str = "delete") -> MemoryRecord:
        """Delete a memory (active or archived) with every other copy of its words. Without
        ``user_id`` the memory is looked for in ``default``, then in whichever namespace holds it."""
        if action not in ("delete", "forget"):
            raise InvalidInputError(f"action must be 'delete' or 'forget', got {action!r}", field="action")
        memory_id = guard.ident(memory_id, "memory_id")
        user_id = self._owner(memory_id, user_id, "delete")
        return self.editor.delete(memory_id, user_id, action=action)

    def delete_all(self, user_id: str | None = None, *, filters: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """Delete every memory of the namespace ``user_id`` (archived ones and turns too), or those
        that match ``filters``, with every other copy of their words. Returns what was deleted.
        ``user_id`` must be given: no namespace is emptied by default."""
        if user_id is None:
            raise ArgumentError("delete_all() needs user_id=...: it deletes every memory of that namespace")
        user_id = guard.user_arg(user_id, "delete_all")
        where = filters_mod.parse(filters)
        self._store(user_id).sync()
        rows = self.index.list_records(user_id, active_only=False, where_filter=where)
        return self.editor.delete_many(rows, user_id, "delete_all")

    def reset(self, *, confirm: bool = False) -> int:
        """Delete every memory of every namespace of this workspace (``delete_all`` of each); refused
        unless ``confirm=True``, since nothing brings them back. Returns how many were deleted."""
        if confirm is not True:
            raise ArgumentError(f"reset() deletes every memory of every namespace in {self.settings.root}; "
                                "call reset(confirm=True) if that is what you want")
        return sum(len(self.delete_all(u)) for u in self.users())

    def forget(self, query_or_id: str, user_id: str = "default", *, dry_run: bool = False) -> list[MemoryRecord]:
        """Delete a memory by id, or every memory a query matches (``edit.forget_targets``: all the
        query's terms appear in it, or its meaning is close). Returns what was (or would be) deleted."""
        user_id = guard.user(user_id)
        query_or_id = clean_content(guard.text(query_or_id, "query_or_id"))
        dry_run = guard.flag(dry_run, "dry_run")
        if not query_or_id:
            raise InvalidInputError("forget needs a memory id or some words", field="query")
        return self.editor.forget(query_or_id, user_id, dry_run=dry_run)

    # ---- read ----------------------------------------------------------------------------
    @measured("search")
    def search(self, query: str, user_id: str = "default", *, limit: int | None = None,
               memory_type: str | None = None, record_access: bool = True,
               include_episodic: bool = True, include_archived: bool = False,
               now: datetime | str | None = None, filters: dict[str, Any] | None = None,
               related: bool = False) -> list[SearchHit]:
        """Hybrid search (keywords + vectors, rescored by similarity, recency and importance);
        updates access statistics and the usage record unless ``record_access=False``;
        ``related=True`` gives each hit its related memories (``SearchHit.related``); ``include_archived`` searches
        archived memories too (merged, compressed or tidied away); ``now`` (default: the clock) is
        the moment recency and the query's time expressions ("last week", "上个月") are measured from;
        ``filters`` keeps the hits that match (``memfold.filters``: structured data, type, dates, importance)."""
        user_id = guard.user_arg(user_id, "search")
        where = filters_mod.parse(filters)
        query = guard.text(query, "query")
        if not query.strip():
            raise InvalidInputError("search needs a non-empty query; use retrieve(None) for the whole memory", field="query")
        check_length("the query", query, MAX_QUERY_CHARS, "search with the words that matter", "query")
        limit = guard.results_limit(limit)
        mtype = guard.memory_type(memory_type)
        memory_type = mtype.value if mtype is not None else None
        record_access = guard.flag(record_access, "record_access")
        include_episodic = guard.flag(include_episodic, "include_episodic")
        include_archived = guard.flag(include_archived, "include_archived")
        at = guard.timestamp(now, "now")
        related = guard.flag(related, "related")
        if where is None:
            hits = self.retriever.search(query, user_id, limit=limit, memory_type=memory_type,
                                         record_access=record_access, include_episodic=include_episodic,
                                         include_archived=include_archived, now=at)
        else:
            hits = self._filtered_search(query, user_id, where, limit, memory_type, include_episodic,
                                         include_archived, at, record_access)
        if record_access:
            usage.record(self.index, self.policy(user_id), user_id, query, [h.record.id for h in hits],
                         at or utcnow())
        return relations_mod.with_related(self.index, user_id, hits) if related else hits

    def _filtered_search(self, query: str, user_id: str, where: Any, limit: int | None, memory_type: str | None,
                         include_episodic: bool, include_archived: bool, at: datetime | None,
                         record_access: bool) -> list[SearchHit]:
        want = limit or self.policy(user_id).retrieve_limit
        ask = min(max(4 * want, 20), FILTERED_POOL)
        while True:  # the ranked hits, widened until enough of them match (the index tests each batch)
            # copies collapse among the hits that match: a record outside the filter must not stand for one inside
            hits = self.retriever.search(query, user_id, limit=ask, memory_type=memory_type, record_access=False,
                                         include_episodic=include_episodic, include_archived=include_archived, now=at,
                                         collapse_copies=False)
            ok = self.index.matching_ids(user_id, [h.record.id for h in hits], where) if hits else set()
            kept = collapse_turn_copies([h for h in hits if h.record.id in ok])[:want]
            if len(kept) >= want or len(hits) < ask or ask >= FILTERED_POOL:
                break
            ask = min(4 * ask, FILTERED_POOL)
        if record_access and kept:
            self.index.record_access(user_id, [h.record.id for h in kept], at or utcnow())
        return kept

    def retrieve(self, query: str | None, user_id: str = "default", *, limit: int | None = None) -> Retrieval:
        """Ranked memories plus the last ``recent_days`` of daily notes; with no query, the whole MEMORY.md."""
        user_id = guard.user(user_id)
        query = guard.optional_text(query, "query")
        limit = guard.results_limit(limit)
        return self.retriever.retrieve(query, user_id, limit=limit)

    def get(self, memory_id: str, user_id: str | None = None, *, include_archived: bool = True) -> MemoryRecord:
        """One memory by id (archived ones too unless ``include_archived=False``); ``NotFoundError`` when there is none.
        Without ``user_id`` the memory is looked for in ``default``, then in whichever namespace holds it."""
        memory_id = guard.ident(memory_id, "memory_id")
        include_archived = guard.flag(include_archived, "include_archived")
        user_id = self._owner(memory_id, user_id, "get")
        st = self._store(user_id)
        st.sync(wait=False)
        found = self.index.get(user_id, [memory_id])
        if not found or (not include_archived and not found[0].is_active):
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}", field="memory_id")
        return found[0]

    def get_all(self, user_id: str = "default", *, memory_type: str | None = None, include_archived: bool = False,
                include_episodic: bool = True, limit: int | None = None, offset: int = 0,
                filters: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """The namespace's memories, optionally of one type, with archived ones, paged by ``limit``/``offset``;
        ``filters``: those that match (``memfold.filters``), tested by the index."""
        user_id = guard.user_arg(user_id, "get_all")
        where = filters_mod.parse(filters)
        mtype = guard.memory_type(memory_type)
        memory_type = mtype.value if mtype is not None else None
        include_archived = guard.flag(include_archived, "include_archived")
        include_episodic = guard.flag(include_episodic, "include_episodic")
        limit = guard.results_limit(limit)
        offset = guard.count(offset, "offset", 0)
        st = self._store(user_id)
        st.sync(wait=False)
        if not include_episodic or memory_type not in (None, MemoryType.EVENT.value):
            rows = self.index.list_records(user_id, active_only=not include_archived, memory_type=memory_type,
                                           limit=limit, offset=offset, where_filter=where)
            return [r for r in rows if include_episodic or r.file != EPISODIC]
        return one_fact_once(self.index, user_id, active_only=not include_archived, memory_type=memory_type,
                             limit=limit, offset=offset, where_filter=where)

    def history(self, memory_id: str, user_id: str | None = None) -> list[HistoryEntry]:
        """Every change of a memory, oldest first (add, update, edit by hand, merge, archive, delete, forget).
        Without ``user_id`` the memory is looked for in ``default``, then in whichever namespace holds it."""
        memory_id = guard.ident(memory_id, "memory_id")
        user_id = self._owner(memory_id, user_id, "history")
        self._store(user_id).sync(wait=False)
        entries = self.index.history(user_id, memory_id)
        if not entries:
            raise NotFoundError(f"no history for memory {memory_id!r} of user {user_id!r}")
        return entries

    def hot_memories(self, user_id: str = "default") -> list[MemoryRecord]:
        """The hot set: the namespace's most accessed memories (``[cache] hot_size``), served by the
        cache until a write or ``[cache] ttl`` (their access counts are those of that moment)."""
        user_id = guard.user(user_id)
        hot = capability(self.index, HotSet)
        return hot.hot(user_id) if hot is not None else self.index.most_accessed(user_id, self.settings.cache.hot_size)

    def relations(self, memory_id: str, user_id: str = "default") -> list[dict[str, Any]]:
        """The relations of a memory to others (``supports``, ``contradicts``, ``refines``,
        ``duplicates``, ``summarizes``), each with its strength."""
        return self.index.relations(guard.user(user_id), guard.ident(memory_id, "memory_id"))

    def relate(self, source_id: str, target_id: str, relation: str, user_id: str = "default", *,
               strength: float = 1.0) -> dict[str, Any]:
        """Record that memory ``source_id`` ``relation``s memory ``target_id`` (``supports``,
        ``contradicts``, ``refines``, ``duplicates``, ``summarizes``) with ``strength`` 0 to 1;
        the same pair and kind again replaces its strength. Both must be memories of the namespace."""
        return relations_mod.relate(self, guard.user(user_id), guard.ident(source_id, "source_id"),
                                    guard.ident(target_id, "target_id"), relation, strength)

    def unrelate(self, source_id: str, target_id: str, relation: str | None = None,
                 user_id: str = "default") -> int:
        """Delete the relations from ``source_id`` to ``target_id`` (of one kind, or all); how many went."""
        return relations_mod.unrelate(self, guard.user(user_id), guard.ident(source_id, "source_id"),
                                      guard.ident(target_id, "target_id"), relation)

    def usage(self, user_id: str = "default") -> dict[str, Any]:
        """The usage record read back: how many searches it holds, the memories they returned most
        often and the queries that found nothing."""
        user_id = guard.user(user_id)
        return usage.report(self.index, self.policy(user_id), user_id)

    # ---- skills (learnings.md) ---------------------------------------------------------------
    def add_skill(self, name: str, user_id: str = "default", *, when_to_use: str | None = None,
                  steps: Sequence[str] | None = None, tools: Sequence[str] | None = None,
                  outcome: str | None = None, importance: float | None = None,
                  agent_id: str | None = None) -> AddResult:
        """Save a skill (what to do, when, with which tools, to what end) in the skills section of
        ``learnings.md``, as labelled lines a person can edit; a near-duplicate skill is updated."""
        return skills_mod.add_skill(self, guard.user_arg(user_id, "add_skill"), name, when_to_use=when_to_use,
                                    steps=steps, tools=tools, outcome=outcome, importance=importance,
                                    agent_id=agent_id)

    def skill_succeeded(self, memory_id: str, user_id: str | None = None, *,
                        when: datetime | None = None) -> MemoryRecord:
        """Count one more success of a skill: its success count goes up and its last success is
        ``when`` (default: today). Returns the skill as it is now."""
        if when is not None and not isinstance(when, datetime):
            raise InvalidInputError(f"when must be a datetime, got {type(when).__name__}", field="when")
        return skills_mod.skill_succeeded(self, guard.ident(memory_id, "memory_id"), user_id, when)

    def skills(self, user_id: str = "default") -> list[dict[str, Any]]:
        """The namespace's skills with their fields (name, when to use, steps, tools, outcome,
        successes, last success), most successful first."""
        return skills_mod.skills(self, guard.user(user_id))

    def users(self) -> list[str]:
        """Every namespace that has files or index rows."""
        return sorted(set(self.workspace.user_ids()) | set(self.index.user_ids()))

    def stats(self, user_id: str = "default") -> dict[str, Any]:
        """Counts by type, archived and episodic rows, average importance, file sizes, LLM usage."""
        user_id = guard.user(user_id)
        st = self._store(user_id)
        st.sync(wait=False)
        out = self.index.stats(user_id)
        mem = st.space.dir / FILE_MEMORY
        out.update(user_id=user_id, memory_md_chars=len(mem.read_text(encoding="utf-8")) if mem.exists() else 0,
                   files=st.space.memory_files(), backups=len(st.space.backups()),
                   embedder=self.embedder.name, index=self.settings.index.backend)
        out["llm_usage"] = self.writer.llm_usage(user_id)  # calls and tokens per operation (SPEC §4.6)
        out["usage"] = usage.report(self.index, self.policy(user_id), user_id)  # most used, found nothing
        return out

    @property
    def _auto_compression(self) -> Any:
        with self._lock:
            if "_auto" not in self.__dict__:
                from ..maintenance.schedule import AutoCompression

                self._auto = AutoCompression()
            return self._auto

    # ---- conversation: sessions, pin lists, context (SPEC §6-7) ---------------------------------
    @property
    def pin_store(self) -> "PinStore":
        """The agents' pin lists of every namespace (the last memories each agent saved), persisted in the index."""
        with self._lock:
            if "_pin_store" not in self.__dict__:
                self._pin_store = PinStore(self.index, lambda u: self.policy(u).max_recent_memories)
            return self._pin_store

    @property
    def chat_model(self) -> ChatModel | None:
        """The configured LLM ([llm] provider), or None: summaries are then extractive. One client
        for the write path's LLM steps and the sessions' summaries, closed by ``close()``."""
        return self.writer.llm.chat

    def session(self, session_id: str, user_id: str = "default", agent_id: str | None = None, *,
                preset: str | None = None, policy: dict[str, Any] | None = None, memory_enabled: bool = True,
                chat_model: ChatModel | None = None, language: str | None = None,
                on_notice: Callable[[str], None] | None = None) -> Session:
        """A conversation session, created or resumed (buffer, summary and pin list persist).
        A new session belongs to ``agent_id`` (default ``"default"``); a resumed one keeps its agent."""
        session_id = guard.ident(session_id, "session_id")
        agent_id = guard.optional_ident(agent_id, "agent_id")
        user_id = guard.user(user_id)
        pol = session_policy(self.policy(user_id), preset, policy)
        memory_enabled = guard.flag(memory_enabled, "memory_enabled") and self.memory_enabled(user_id)
        self._ends.sweep(user_id, pol.session_ttl_minutes if memory_enabled else 0, skip=session_id)  # abandoned ones
        chat = chat_model if chat_model is not None else self.chat_model
        return Session(self._session_ports, session_id, user_id, agent_id, pol, chat=chat,
                       language=check_language(language or self.language(user_id)),
                       memory_enabled=memory_enabled, on_notice=on_notice)

    def sessions(self, user_id: str = "default") -> list[str]:
        """The ids of the namespace's sessions."""
        return self.index.list_state(guard.user(user_id), SESSION_KIND)

    def pins(self, agent_id: str, user_id: str = "default") -> PinList:
        """The pin list of one agent: the last ``max_recent_memories`` memories it saved, as they are
        now (a memory edited in MEMORY.md shows its new text; a deleted one is left out)."""
        user_id, agent_id = guard.user(user_id), guard.ident(agent_id, "agent_id")
        self._store(user_id).sync(wait=False)  # a hand edit since the last read is seen
        return self.pin_store.current(user_id, agent_id)

    def agents(self, user_id: str = "default") -> list[str]:
        """The agents of the namespace that have a pin list."""
        return self.index.list_state(guard.user(user_id), PIN_KIND)

    def recent_memories(self, agent_id: str, user_id: str = "default") -> list[str]:
        """The agent's pin list: the last ``max_recent_memories`` memories it saved, oldest first."""
        return self.pins(agent_id, user_id).recent_memories

    @measured("build_context")
    def build_context(self, user_message: str, user_id: str = "default", *, session_id: str | None = None,
                      agent_id: str | None = None, base_prompt: str | None = None,
                      memory_enabled: bool = True, language: str | None = None,
                      tools: Mapping[str, str] | None = None) -> list[dict[str, str]]:
        """The messages to send to the model: a system prompt with the relevant memories, then the
        message; with ``session_id`` the session's summary and recent messages are included, else
        only memory, pins and the message. ``tools`` (name ->
        what it does; ``MemoryTools.summaries()``): the tools offered, named in the instructions."""
        user_message = guard.text(user_message, "user_message")
        base_prompt = guard.optional_text(base_prompt, "base_prompt")
        session_id = guard.optional_ident(session_id, "session_id")
        agent_id = guard.optional_ident(agent_id, "agent_id")
        user_id = guard.user(user_id)
        memory_enabled = guard.flag(memory_enabled, "memory_enabled") and self.memory_enabled(user_id)
        if session_id is not None:
            return self.session(session_id, user_id, agent_id, memory_enabled=memory_enabled,
                                language=language).build_context(user_message, base_prompt=base_prompt, tools=tools)
        pins = self.recent_memories(agent_id or DEFAULT_AGENT, user_id) if memory_enabled else []
        return stateless_context(self._session_ports, pins, self.policy(user_id), user_message, user_id,
                                 language=language or self.language(user_id), base_prompt=base_prompt,
                                 memory_enabled=memory_enabled, tools=tools)

    # ---- policy: the effective policy of a namespace, its policy files and policy evolution ----------

    def use_policy_arguments(self, policy: dict[str, Any]) -> None:
        """Replace the policy arguments given when this ``Memory`` was made (``Memory(policy=...)``):
        every later call of every namespace uses them, over its policy files. Checked at once: a
        bad key or value raises ``ConfigError`` naming it and the arguments before stay. For a
        program that asks the same memories under several policies, e.g. a tuning loop."""
        if not isinstance(policy, dict):
            raise InvalidInputError(f"policy must be a dict of policy keys, got {type(policy).__name__}",
                                    field="policy")
        with self._lock:
            before = self._policy_args
            self._policy_args = dict(policy)
            self._policies.clear()
            try:
                self.policy("default")
            except ConfigError:
                self._policy_args = before
                self._policies.clear()
                raise

    def policy(self, user_id: str = "default") -> Policy:
        """The effective policy of a namespace: defaults → config → policy_overrides.json → arguments.
        Read again when the overrides file changed (a session keeps the policy it started with);
        a file made unreadable meanwhile keeps the last good policy (with a warning)."""
        with self._lock:
            cached = self._policies.get(user_id)
            if cached is None:  # asked first: the id checked, in the form every other call uses
                user_id = check_user_id(user_id)
                cached = self._policies.get(user_id)
            # a namespace asked before: its files object is kept (the id was checked then); one stat per call
            files = cached[2] if cached is not None else self.policy_files(user_id)
            stamp = files.stamp()
            if cached is not None and cached[0] == stamp:
                return cached[1]
            try:
                pol = files.effective(self._base_policy).merged(self._policy_args, "arguments")
            except ConfigError as exc:
                if cached is None:
                    raise
                log.warning("keeping the policy of %s loaded before: %s", user_id, exc)
                pol = cached[1]
            self._policies[user_id] = (stamp, pol, files)
            return pol

    def policy_files(self, user_id: str = "default") -> PolicyFiles:
        """The namespace's ``policy_overrides.json`` and ``policy_snapshots/``: ``set``, ``reset``,
        ``snapshots``, ``rollback`` (each change snapshotted first)."""
        return PolicyFiles(self.workspace.user(check_user_id(user_id)).dir)

    @property
    def evolution(self) -> PolicyEvolution:
        """Policy evolution (``evolution_enabled``): told of every session message."""
        with self._lock:
            if "_evolution" not in self.__dict__:
                self._evolution = PolicyEvolution(policy=self.policy, files=self.policy_files, state=self.index,
                                                  chat=lambda: self.chat_model, language=self.language,
                                                  user_lock=lambda u: self.workspace.user(u).lock)
            return self._evolution

    # ---- what agents call through tools/: memory on/off, exact text edits, file views ------------------

    def memory_enabled(self, user_id: str = "default") -> bool:
        """Whether memory is on for the namespace (``[memory] enabled``, ``memfold memory on|off``), read fresh;
        an overrides file broken by hand: the last good policy's switch (a warning), else the config's."""
        try:
            return switch.is_enabled(self.workspace.user(check_user_id(user_id)), self._base_policy, self._policy_args)
        except ConfigError as exc:
            log.warning("memory on/off of %s: %s", user_id, exc)
            try:
                return self.policy(user_id).enabled
            except ConfigError:
                return self._base_policy.merged(self._policy_args, "arguments").enabled

    def set_memory_enabled(self, enabled: bool, user_id: str = "default") -> Path:
        """Switch memory on or off for a namespace (the ``enabled`` key of its policy_overrides.json)."""
        user_id = check_user_id(user_id)
        files = self.policy_files(user_id)
        files.set({"enabled": guard.flag(enabled, "enabled")}, "memory on/off")  # snapshotted first
        with self._lock:
            self._policies.pop(user_id, None)
        return files.path

    def edit_text(self, path: str, old_text: str, new_text: str, user_id: str = "default", *,
                  author: str = "memory_edit") -> text_edit.TextEditResult:
        """Replace the one occurrence of ``old_text`` in the user's MEMORY.md, learnings.md or a daily note,
        as a hand edit (backup, re-index, history ``edit`` by ``author``); PathRefusedError, TextMatchError."""
        return text_edit.edit_text(self._store(guard.user(user_id)), path, guard.text(old_text, "old_text"),
                                   guard.text(new_text, "new_text"), guard.ident(author, "author"))

    def read_file(self, path: str | None = None, user_id: str = "default", *,
                  section: str | None = None) -> text_edit.FileView:
        """A memory file (MEMORY.md by default) or one section of it as an agent sees it: no id comments,
        at most ``memory_char_limit`` characters."""
        user_id = guard.user(user_id)
        section = guard.optional_text(section, "section")
        return text_edit.read_view(self._store(user_id), path, section, self.policy(user_id).memory_char_limit)

    # ---- upkeep: reindex, maintenance runs, export and import -------------------------------------------

    @measured("reindex", job=True)
    def reindex(self, user_id: str | None = None) -> dict[str, int]:
        """Rebuild the file-backed index rows from the files (all namespaces when ``user_id`` is None)."""
        return admin.reindex(self, user_id)

    def maintain(self, user_id: str | None = None, *, dry_run: bool = False, jobs: Sequence[str] | None = None,
                 force: bool = False, progress: Callable[[Any], None] | None = None) -> Any:
        """Run the due maintenance jobs (tidy, old-memory and long-term compression) of one namespace
        or of all; a ``MaintenanceRun`` of what was (``dry_run``: would be) done (``maintenance.run_due``)."""
        return run_due(self, None if user_id is None else guard.user(user_id), dry_run=guard.flag(dry_run, "dry_run"),
                       jobs=jobs, force=guard.flag(force, "force"), progress=progress)

    def export(self, user_id: str | None = None) -> Iterator[dict[str, Any]]:
        """Every record (archived ones too) as a dict, one namespace or all."""
        return admin.export(self, user_id)

    def import_records(self, rows: Iterable[dict[str, Any]]) -> int:
        """Import exported records, keeping their ids; existing ids of the same namespace are replaced,
        an id another namespace holds gets a new one. Every row is checked (fields, ranges, user ids,
        secrets) before anything is written. Returns the count."""
        return admin.import_records(self, rows)

    # ---- the port maintenance uses (maintenance.base.Host) --------------------------------------------
    def namespace_store(self, user_id: str) -> Namespace:
        """The store port of a namespace for maintenance jobs: its files, index, ``sync`` and the
        crash-safe ``commit`` (the id checked as for every call)."""
        return self._store(check_user_id(user_id))

    @property
    def llm_calls_per_operation(self) -> int:
        """The LLM calls one operation may make (``[llm] max_calls_per_operation``)."""
        return self.writer.llm.max_calls


def _tidy(space: UserSpace, policy: Policy) -> None:
    """At the first use of a namespace: temp files of writes that crashed go, and backups past
    ``backup_keep`` or older than ``backup_max_age_days`` (also when nothing is written for weeks)."""
    if not space.dir.is_dir():
        return
    try:
        if not space.lock.acquire_nowait():
            return  # a writer is at work (it prunes backups itself); a later process removes leftovers
    except ReadOnlyWorkspaceError:
        return  # a read-only workspace: nothing can be removed, and reads must not fail for it
    try:
        n = space.remove_leftovers()
        space.prune_backups(policy.backup_keep)
    finally:
        space.lock.__exit__(None, None, None)
    if n:
        log.info("removed %d unfinished temp file(s) of %s", n, space.user_id)
