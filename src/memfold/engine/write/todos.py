"""Closing todos from what the user says: "done: call the dentist", "[x] renew passport",
"完成了：给王经理打电话", "报税搞定了" (``extraction.done_statement``).

The open todo of MEMORY.md whose words the statement covers best is closed at once, the way
tidying closes a finished todo: it leaves MEMORY.md, stays searchable as archived
(``include_archived``), and is listed with "(completed)" in the user's ``archive.md``. A statement
that matches no open todo closes nothing; the caller keeps it as it would any other text."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from datetime import date, datetime

from ...models import FILE_MEMORY, MemoryRecord, MemoryType
from ...text import memory_markdown as md
from ...text.terms import terms
from ..storage.changes import Archive, ChangedMeanwhile, Changes, apply_changes
from ..storage.store import UserStore

log = logging.getLogger("memfold")
MAX_OPEN_TODOS = 2000  # the open todos a statement is compared with (MEMORY.md is a file a person reads)
MIN_COVERAGE = 0.6  # share of the statement's words a todo must hold
_DONE = re.compile(r"^\s*(?:\[[xX]\]|✅|✔️?|~~.+~~\s*$|(?:done|completed|finished|cancell?ed)\b\s*[:：]|已完成|已取消|已办)"
                   r"|[(（\[](?:done|completed|已完成|完成)[)）\]]\s*$", re.I)
_DUE = re.compile(r"(?:\bby|\bbefore|\bdue(?: on| by)?|\buntil|\bdeadline[:：]?|截止(?:日期)?[:：]?|到期[:：]?)\s*"
                  r"(\d{4}-\d{2}-\d{2})|(\d{4}-\d{2}-\d{2})\s*(?:之前|以前|前|截止)", re.I)
_FINISHED_STATUS = {"done", "completed", "complete", "cancelled", "canceled", "finished"}


def todo_finished(r: MemoryRecord, today: date) -> str | None:
    """Why a todo is finished ('completed', 'expired YYYY-MM-DD'), or None while it is open."""
    status = str(r.structured_data.get("status", "")).lower()
    if status in _FINISHED_STATUS or _DONE.search(r.content):
        return "completed"
    dues = [r.structured_data.get(k) for k in ("due", "deadline") if isinstance(r.structured_data.get(k), str)]
    dues += [a or b for a, b in _DUE.findall(r.content)]
    days = []
    for d in dues:
        try:
            days.append(date.fromisoformat(str(d)[:10]))
        except ValueError:
            continue
    if days and max(days) < today:
        return f"expired {max(days).isoformat()}"
    return None


def archive_line(r: MemoryRecord, why: str, lang: str = "en") -> str:
    """The line of archive.md that lists a closed todo and why it was closed, in ``lang``."""
    return md.archive_line(r.created_at.date().isoformat(), r.content, r.id, why, lang)


def _words(text: str) -> set[str]:
    return set(terms(text, query=True))


def match(store: UserStore, user_id: str, what: str, *, exclude: Collection[str] = ()) -> MemoryRecord | None:
    """The open todo ``what`` names: the one holding the largest share (at least ``MIN_COVERAGE``) of
    its words; on a tie, the one with fewer other words, then the newest."""
    want = _words(what)
    if not want:
        return None
    store.sync()
    today = datetime.now().date()
    best: tuple[float, float, datetime, MemoryRecord] | None = None
    for r in store.index.list_records(user_id, file=FILE_MEMORY, memory_type=MemoryType.TODO.value,
                                      limit=MAX_OPEN_TODOS):
        if r.id in exclude or not r.is_active or todo_finished(r, today):
            continue
        have = _words(r.content)
        shared = len(want & have)
        coverage = shared / len(want)
        if coverage < MIN_COVERAGE:
            continue
        key = (coverage, shared / max(len(have), 1), r.created_at, r)
        if best is None or key[:3] > best[:3]:
            best = key
    return best[3] if best else None


def close(store: UserStore, todo: MemoryRecord, said: str) -> MemoryRecord | None:
    """Close ``todo`` as completed: out of MEMORY.md, archived in the index, listed in archive.md.
    None when it was edited or removed meanwhile (then nothing is changed)."""
    reason = "completed"
    try:
        apply_changes(store, Changes(archive=[Archive(todo, reason=f"todo {reason}")],
                                     archive_lines=[archive_line(todo, reason, store.space.language)]), "done")
    except ChangedMeanwhile:
        return None
    log.info("todo %s of %s closed by %r", todo.id, store.user_id, said[:80])
    return store.index.get(store.user_id, [todo.id])[0]
