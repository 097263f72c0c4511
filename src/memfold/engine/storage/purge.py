"""Deleted means deleted: after ``delete`` / ``forget`` (and a forget request in a conversation)
the words of the removed memories leave every copy memfold keeps of them.

- their older versions (archived rows superseded by them, and theirs in turn) are deleted too;
- their history keeps every event, without words; other history entries lose the fields that
  quote them (a merge's old text, an LLM reason, …) (``Index.forget_text``);
- an episodic turn whose context quotes a removed turn is re-indexed without it, and so is one
  whose context quotes a reply that repeats the words a forget asked for (an assistant's echo);
- the usage record loses the searches that returned them, and those whose query holds the words
  a forget asked for;
- the backups of MEMORY.md are rewritten without their bullets (``UserSpace.purge_backups``);
- the SQLite index drops the namespace's search snapshot and empties its write-ahead log
  (freed pages are zeroed by ``secure_delete``).

What stays is listed in the README ("Deleted means deleted")."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ...models import HistoryEntry, MemoryRecord, utcnow
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
        unquoted = store.unquote_contexts(texts, rows=[r for r in index.quoting(user, texts + forms) if r.id not in gone],
                                          asked=asked)
        entries = index.forget_text(user, list(gone), texts)
        searches = index.forget_usage(user, list(gone), asked)  # the usage record: searches that returned them
        rewritten, dropped = store.space.purge_backups(set(gone), texts)
        store.forget_older_versions()
    log.info("purged %d memories of %s (%d older versions): %d history entries, %d contexts, %d usage entries, "
             "%d backups rewritten, %d deleted", len(removed), user, len(older), entries, unquoted, searches,
             rewritten, dropped)
    return older


QUERY_MIN = 3  # a forget's words shorter than this are not looked for in quoted turns
