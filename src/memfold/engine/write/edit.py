"""Edit use cases: ``update``, ``delete`` and ``forget`` of stored memories.

The arguments arrive checked by ``guard`` (the ``Memory`` facade does that); this module holds
what the edits do: rewrite or remove the line (after a backup), record history, remove every
other copy of deleted words (``purge``) and take them out of the agents' pin lists.

``forget`` with words picks its targets with ``forget_targets`` (also what a "forget that …"
request in a conversation deletes, through ``Editor.finder``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import InvalidInputError, NotFoundError
from ...limits import MAX_CONTENT_CHARS, check_length
from ...models import EPISODIC, FILE_MEMORY, HistoryEntry, MemoryRecord, MemoryType, SearchHit, utcnow
from ...providers.embedder import Embedder
from ...text import extraction
from ...text.memory_markdown import clean_content
from ...text.terms import terms
from ..read.read import Retriever
from ..storage.guard import screen_text
from ..storage.pin import PinStore
from ..storage.purge import QUERY_MIN, purge, remove
from ..storage.store import UserStore

FORGET_MIN_SIMILARITY = 0.6  # cosine: close in meaning whatever the search ranks
FORGET_TOP_RELEVANCE = 0.75  # fused keyword + meaning relevance of the search (needs shared words)
FORGET_TOP_SIMILARITY = 0.4  # cosine a top-ranked hit needs as well


def forget_targets(query: str, hits: Sequence[SearchHit], vecs: np.ndarray | None) -> list[MemoryRecord]:
    """The hits a forget query means: every query term appears in the memory; or its cosine with
    the query is at least ``FORGET_MIN_SIMILARITY``; or the search ranks it at the top — fused
    relevance at least ``FORGET_TOP_RELEVANCE`` (only reached when words are shared) — with a
    cosine of at least ``FORGET_TOP_SIMILARITY``. ``vecs``: the query's vector, then the hits'."""
    qt = set(terms(query, query=True))
    out = []
    for i, h in enumerate(hits, 1):
        cos = float(vecs[i] @ vecs[0]) if vecs is not None else 0.0
        if ((qt and qt <= set(terms(h.record.content))) or cos >= FORGET_MIN_SIMILARITY
                or (h.similarity >= FORGET_TOP_RELEVANCE and cos >= FORGET_TOP_SIMILARITY)):
            out.append(h.record)
    return out


class Editor:
    """``update`` / ``delete`` / ``forget`` over the user stores, the read path and the pin lists."""

    def __init__(self, store: Callable[[str], UserStore], retriever: Retriever, embedder: Embedder,
                 pins: Callable[[], PinStore]):
        self._store = store
        self._retriever = retriever
        self._embedder = embedder
        self._pins = pins

    def _get(self, memory_id: str, user_id: str) -> MemoryRecord:
        st = self._store(user_id)
        found = st.index.get(user_id, [memory_id])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r} for user {user_id!r}", field="memory_id")
        return found[0]

    def update(self, memory_id: str, user_id: str, *, content: str | None, importance: float | None,
               memory_type: MemoryType | None, structured_data: dict[str, Any] | None) -> MemoryRecord:
        """Change a memory; a call that changes nothing writes nothing and returns it as it was."""
        st = self._store(user_id)
        st.sync()  # a write waits for other writers' changes
        old = self._get(memory_id, user_id)
        new = old
        if content is not None:
            text = clean_content(content)
            if not text:
                raise InvalidInputError("new content is empty; use delete() to remove a memory")
            check_length("the new content", text, MAX_CONTENT_CHARS, field="content")
            text = screen_text(text, "the new content").text
            if text != old.content:
                new = new.with_(content=text)
                if structured_data is None and old.structured_data == extraction.classify(old.content)[1]:
                    # the old structure was read from the old words by the rules: read it from the new ones
                    new = new.with_(structured_data=extraction.classify(text)[1])
        if importance is not None:
            new = new.with_(importance=importance)
        if structured_data is not None:
            new = new.with_(structured_data=dict(structured_data))
        if memory_type is not None:
            t = MemoryType.parse(memory_type)
            if old.file in (FILE_MEMORY, "learnings.md") and (t is MemoryType.SKILL) != (old.memory_type is MemoryType.SKILL):
                raise InvalidInputError("a skill lives in learnings.md: delete and add it again to change its file")
            new = new.with_(memory_type=t)
        if new == old:
            return old  # nothing changed: no backup, no history entry
        detail: dict[str, Any] = {}
        if new.importance != old.importance:
            detail["importance"] = [old.importance, new.importance]
        if new.memory_type != old.memory_type:
            detail["type"] = new.memory_type.value
        new = new.with_(updated_at=utcnow())
        if old.file != EPISODIC and new.memory_type != old.memory_type:
            st.rewrite(old, None, "update", {"moved": True})
            st.append([new], None, [HistoryEntry(new.id, user_id, "update", utcnow(), old.content, new.content,
                                                 detail)])
            return self._get(memory_id, user_id)
        st.rewrite(old, new, "update", detail)
        return self._get(memory_id, user_id)

    def delete(self, memory_id: str, user_id: str, *, action: str = "delete") -> MemoryRecord:
        st = self._store(user_id)
        st.sync()  # a write waits for other writers' changes
        old = self._get(memory_id, user_id)
        remove(st, old, action, {})
        older = purge(st, [old])  # deleted means deleted: history words, older versions, backups, snapshot
        self._pins().discard(user_id, [r.content for r in [old, *older]])
        return old

    def delete_many(self, records: Sequence[MemoryRecord], user_id: str, by: str) -> list[MemoryRecord]:
        """Delete the given memories (active or archived) and every other copy of their words; those
        another writer deleted meanwhile are skipped. Returns the deleted ones."""
        st = self._store(user_id)
        st.sync()
        done = []
        for r in records:
            try:
                remove(st, r, "delete", {"by": by})
            except NotFoundError:
                continue
            done.append(r)
        older = purge(st, done)
        self._pins().discard(user_id, [r.content for r in [*done, *older]])
        return done

    def find(self, query_or_id: str, user_id: str) -> tuple[list[MemoryRecord], bool]:
        """What ``forget`` would delete, and whether it was found by id."""
        st = self._store(user_id)
        found = st.index.get(user_id, [query_or_id.strip()])
        if found:
            return found, True
        # every copy of the words is a target: a turn and what was extracted from it both go
        hits = self._retriever.search(query_or_id, user_id, limit=50, record_access=False, collapse_copies=False,
                                      expand=False)
        # one batch for the query and all hits
        vecs = self._embedder.embed([query_or_id] + [h.record.content for h in hits]) if hits else None
        return forget_targets(query_or_id, hits, vecs), False

    def finder(self, query: str, user_id: str) -> list[MemoryRecord]:
        """The memories a "forget that …" request in a conversation matches (the write path's finder)."""
        query = clean_content(query)
        if not query:
            return []
        self._store(user_id).sync()
        return self.find(query, user_id)[0]

    def forget(self, query_or_id: str, user_id: str, *, dry_run: bool = False) -> list[MemoryRecord]:
        st = self._store(user_id)
        st.sync()
        targets, by_id = self.find(query_or_id, user_id)
        if dry_run:
            return targets
        done = []
        for r in targets:
            try:
                remove(st, r, "forget", {"by": "id" if by_id else "query"})
            except NotFoundError:  # deleted meanwhile by another thread or process: gone already
                continue
            done.append(r)
        # deleted means deleted: history words, older versions, backups, snapshot, and a quoted reply
        # that repeats the words asked for
        older = purge(st, done, () if by_id else (query_or_id,))
        if not done and not by_id and len(query_or_id.strip()) >= QUERY_MIN:
            # nothing stored matched: the searches that asked for the words go all the same
            st.index.forget_usage(user_id, [], [query_or_id])
        self._pins().discard(user_id, [r.content for r in [*done, *older]])
        return done
