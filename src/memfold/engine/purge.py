"""Deleted means deleted: after ``delete`` / ``forget`` (and a forget request in a conversation)
the words of the removed memories leave every copy memfold keeps of them.

- their older versions (archived rows superseded by them, and theirs in turn) are deleted too;
- their history keeps every event, without words; other history entries lose the fields that
  quote them (a merge's old text, an LLM reason, …) (``Index.forget_text``);
- an episodic turn whose context quotes a removed turn is re-indexed without it, and so is one
  whose context quotes a reply that repeats the words a forget asked for (an assistant's echo);
- the backups of MEMORY.md are rewritten without their bullets (``UserSpace.purge_backups``);
- the SQLite index drops the namespace's search snapshot and empties its write-ahead log
  (freed pages are zeroed by ``secure_delete``).

What stays is listed in the README ("Deleted means deleted")."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from ..models import HistoryEntry, MemoryRecord, utcnow
from . import records as rec
from .store import UserStore

log = logging.getLogger("memfold")


def remove(store: UserStore, record: MemoryRecord, action: str, detail: dict) -> None:
    """Delete a record: an active one from its file and the index (``UserStore.rewrite``), an
    archived one (no longer in any file) from the index."""
    if record.is_active:
        store.rewrite(record, None, action, detail)
        return
    with store.space.lock:
        store.index.delete(store.user_id, [record.id])
        store.index.append_history([HistoryEntry(record.id, store.user_id, action, utcnow(), None, None,
                                                 dict(detail, archived=True))])


def purge(store: UserStore, removed: Sequence[MemoryRecord], words: Sequence[str] = ()) -> list[MemoryRecord]:
    """Remove every other copy of the words of ``removed`` (already deleted from file and index);
    ``words``: what a forget asked for (a quoted turn that repeats them goes too). Returns the older
    versions that were deleted along with them."""
    if not removed:
        return []
    user, index = store.user_id, store.index
    with store.space.lock:
        gone = {r.id: r for r in removed}
        older: list[MemoryRecord] = []
        frontier = list(gone)
        while frontier:
            found = [r for r in index.superseded(user, frontier) if r.id not in gone]
            gone.update((r.id, r) for r in found)
            older += found
            frontier = [r.id for r in found]
        if older:
            index.delete(user, [r.id for r in older])
            index.append_history([HistoryEntry(r.id, user, "delete", utcnow(), None, None,
                                               {"by": "purge", "superseded_by": r.superseded_by}) for r in older])
        texts = sorted({r.content for r in gone.values() if r.content.strip()}, key=len, reverse=True)
        asked = sorted({w.strip() for w in words if len(w.strip()) >= QUERY_MIN}, key=len, reverse=True)
        forms = list(dict.fromkeys(f for w in asked for f in (w, w.lower(), w.capitalize())))
        unquoted = _unquote_contexts(store, [r for r in index.quoting(user, texts + forms) if r.id not in gone],
                                     texts, asked)
        entries = index.forget_text(user, list(gone), texts)
        rewritten, dropped = store.space.purge_backups(set(gone), texts)
    log.info("purged %d memories of %s (%d older versions): %d history entries, %d contexts, "
             "%d backups rewritten, %d deleted", len(removed), user, len(older), entries, unquoted, rewritten, dropped)
    return older


QUERY_MIN = 3  # a forget's words shorter than this are not looked for in quoted turns
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}(?: [^\W\d_]+ \d{4})?")


def _unquote_contexts(store: UserStore, rows: Sequence[MemoryRecord], texts: Sequence[str],
                      asked: Sequence[str] = ()) -> int:
    """Re-index rows whose context (an episodic turn's previous turn) quotes a removed text, or a
    turn that repeats the words a forget asked for (``asked``), without that quote."""
    # a turn's context is "<day> [<name>: ]<previous turn>\n<speaker>": the text must be the whole previous turn
    quoted = [re.compile(r"(^|\s|: )" + re.escape(t) + r"(?=\n|$)") for t in texts]
    folded = [a.casefold() for a in asked]
    changed = []
    for r in rows:
        ctx = r.context
        for q in quoted:
            ctx = q.sub(lambda m: m.group(1), ctx)
        head, _, speaker = ctx.partition("\n")
        if folded and any(a in head.casefold() for a in folded):  # the previous turn repeats the words: it goes
            day = _DAY.match(head)
            ctx = f"{day.group() if day else ''} {speaker}"
        ctx = "\n".join(re.sub(r"[ \t]{2,}", " ", line).strip() for line in ctx.split("\n")).strip()
        if ctx != r.context:
            changed.append(r.with_(context=ctx))
    if changed:
        vectors = store.embedder.embed([rec.embed_text(r) for r in changed])
        store.index.upsert([rec.item(r, vectors[i]) for i, r in enumerate(changed)])
    return len(changed)
