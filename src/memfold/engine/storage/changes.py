"""Archiving and replacing memories in one write (the maintenance jobs that merge or archive
memories, a todo closed by what the user says): under the user lock, after a sync, every touched
file is changed once (archived lines out, new lines in, a dated backup of MEMORY.md first, hand
edits merged by ``UserStore``), then the index in one transaction (new rows, archived rows kept
inactive with ``superseded_by``, history, relations), through ``UserStore.commit``. When the
index refuses, the files are put back: nothing half-done stays."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ...index.base import IndexItem
from ...models import EPISODIC, HistoryEntry, MemoryRecord, utcnow
from ...text import memory_markdown as md
from ...workspace.files import atomic_write
from ...workspace.userspace import ARCHIVE_FILE
from . import records as rec
from .store import Namespace

log = logging.getLogger("memfold")


class ChangedMeanwhile(Exception):
    """A memory to archive was changed or removed while its change was planned: nothing was changed."""


@dataclass(frozen=True)
class Archive:
    """A record to take out of its file; ``superseded_by`` names what replaced it, with ``relation``."""

    record: MemoryRecord
    superseded_by: str | None = None
    relation: str = ""
    reason: str = ""


@dataclass
class Changes:
    add: list[MemoryRecord] = field(default_factory=list)
    archive: list[Archive] = field(default_factory=list)
    archive_lines: list[str] = field(default_factory=list)  # for archive.md

    def __bool__(self) -> bool:
        return bool(self.add or self.archive)


def apply_changes(store: Namespace, changes: Changes, job: str) -> None:
    """Carry out ``changes``; ChangedMeanwhile (nothing changed) when a memory to archive changed meanwhile."""
    if not changes:
        return
    vectors = store.embedder.embed([rec.embed_text(r) for r in changes.add]) if changes.add else None  # outside the lock
    with store.space.lock:
        store.sync()
        _check_unchanged(store, changes.archive)
        by_file: dict[str, tuple[set[str], list[MemoryRecord]]] = {}
        for a in changes.archive:
            if a.record.file != EPISODIC:
                by_file.setdefault(a.record.file, (set(), []))[0].add(a.record.id)
        for r in changes.add:
            by_file.setdefault(r.file, (set(), []))[1].append(r)
        store.commit({rel: _changer(gone, new, store.space.language, rel) for rel, (gone, new) in by_file.items()},
                     lambda: _write_index(store, changes, vectors, job))
        if changes.archive_lines:
            _append_archive(store, changes.archive_lines)


def _check_unchanged(store: Namespace, archive: Sequence[Archive]) -> None:
    now = {r.id: r for r in store.index.get(store.user_id, [a.record.id for a in archive])}
    for a in archive:
        cur = now.get(a.record.id)
        if cur is None or not cur.is_active or rec.content_hash(cur) != rec.content_hash(a.record):
            raise ChangedMeanwhile(f"memory {a.record.id} was changed or removed while the job ran; nothing was "
                                   "changed and the job runs again next time")


def _changer(gone: set[str], new: list[MemoryRecord], lang: str, rel: str):  # type: ignore[no-untyped-def]
    def change(text: str) -> str:
        entries = [e for e in md.parse(text) if e.id in gone]
        missing = gone - {e.id for e in entries}
        if missing:
            raise ChangedMeanwhile(f"{len(missing)} memories left {rel} while the job ran (e.g. "
                                   f"{sorted(missing)[0]}); nothing was changed and the job runs again next time")
        text = remove_entries(text, entries)
        if rel.startswith("memory/"):
            return text.rstrip("\n") + "\n" + "\n".join(ln for r in new for ln in rec.render_record(r, lang)) + "\n"
        sections: dict[str, list[str]] = {}
        for r in new:
            sections.setdefault(md.SECTION_OF_TYPE[r.memory_type], []).extend(rec.render_record(r, lang))
        for section, lines in sections.items():
            text = md.insert_lines(text, section, lines, lang)
        return text

    return change


def remove_entries(text: str, entries: Sequence[md.Entry]) -> str:
    """``text`` without the lines of ``entries`` (one pass, however many)."""
    if not entries:
        return text
    drop = bytearray(text.count("\n") + 1)
    for e in entries:
        drop[e.start: e.end] = b"\x01" * (e.end - e.start)
    return "\n".join(line for i, line in enumerate(text.split("\n")) if not drop[i])


def _write_index(store: Namespace, changes: Changes, vectors, job: str) -> None:  # type: ignore[no-untyped-def]
    user, now = store.user_id, utcnow()
    if changes.add:
        store.index.upsert([rec.item(r, vectors[i]) for i, r in enumerate(changes.add)])
        store.wrote_rows()
    replaced: dict[str, list[str]] = {}
    for a in changes.archive:
        if a.superseded_by:
            replaced.setdefault(a.superseded_by, []).append(a.record.id)
    history = [HistoryEntry(r.id, user, "add", now, None, r.content,
                            {"file": r.file, "by": job, **({"supersedes": replaced[r.id]} if r.id in replaced else {})})
               for r in changes.add]
    archived = [a.record.with_(is_active=False, superseded_by=a.superseded_by, updated_at=now) for a in changes.archive]
    if archived:
        store.index.upsert([IndexItem(record=r) for r in archived])
    for a in changes.archive:
        detail = {"by": job, "superseded_by": a.superseded_by, "file": a.record.file}
        if a.reason:
            detail["reason"] = a.reason
        history.append(HistoryEntry(a.record.id, user, "archive", now, a.record.content, None, detail))
    store.index.append_history(history)
    for a in changes.archive:
        if a.superseded_by and a.relation:
            store.index.add_relation(user, a.superseded_by, a.record.id, a.relation, 1.0)


def _append_archive(store: Namespace, lines: list[str]) -> None:
    """Add lines under today's heading of the user's archive.md (a plain file for people to read)."""
    path = store.space.dir / ARCHIVE_FILE
    lang = store.space.language
    old = md.archive_in(path.read_text(encoding="utf-8"), lang) if path.exists() \
        else md.ARCHIVE_TITLE.get(lang, md.ARCHIVE_TITLE["en"])
    day = datetime.now(timezone.utc).date().isoformat()
    block = f"\n## {day}\n\n" + "\n".join(md.archive_line_in(ln, lang) for ln in lines) + "\n"
    try:
        atomic_write(path, old.rstrip("\n") + "\n" + block)
    except OSError as exc:  # the memories are archived in the index either way
        log.warning("could not write %s of %s: %s", ARCHIVE_FILE, store.user_id, exc)

