"""Persistence of one namespace: file first (atomic, locked), then the index; and
reconciliation of the index with hand edits of the files."""

from __future__ import annotations

import errno
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from ...errors import MemoryIndexError, NotFoundError, ReadOnlyWorkspaceError
from ...index.base import AllFileStates, Index, IndexItem, ReadOnlyMode, Transactions, capability
from ...models import EPISODIC, FILE_LEARNINGS, FILE_MEMORY, HistoryEntry, MemoryRecord, MemoryType, utcnow
from ...providers.embedder import Embedder
from ...text import memory_markdown as md
from ...text.terms import TermsMemo
from ...workspace.bullet_merge import grown_unmarked
from ...workspace.editsafe import GuardedFile, split_marker
from ...workspace.userspace import UserSpace, daily_date, daily_rel
from . import records as rec
from .guard import redact_record

log = logging.getLogger("memfold")


def file_for(r: MemoryRecord) -> str:
    return FILE_LEARNINGS if r.memory_type is MemoryType.SKILL else FILE_MEMORY


class Namespace(Protocol):
    """The port of one namespace's store for code outside the engine (maintenance jobs): its files
    and index, ``sync`` with hand edits, a whole-file change (``write_file``, ``reconcile_file``)
    and the crash-safe ``commit`` of files then index. ``UserStore`` is the one implementation."""

    user_id: str
    space: UserSpace
    index: Index
    embedder: Embedder

    def sync(self, force: bool = False, *, wait: bool = True) -> int: ...

    def write_file(self, rel: str, change: Callable[[str], str | None], *, backup: bool = True
                   ) -> tuple[int, int] | None: ...

    def reconcile_file(self, rel: str) -> int: ...

    def commit(self, changes: Mapping[str, Callable[[str], str | None]], write_index: Callable[[], None], *,
               prepare: Callable[[], None] | None = None) -> None: ...

    def wrote_rows(self) -> None: ...


class UserStore:
    def __init__(self, space: UserSpace, index: Index, embedder: Embedder, backup_keep: int):
        self.space = space
        self.index = index
        self.embedder = embedder
        self.backup_keep = backup_keep
        self.user_id = space.user_id
        self._guards: dict[str, GuardedFile] = {}
        # during reindex: the file-backed rows as they were before the rebuild, and their content hashes
        self._prior: tuple[dict[str, MemoryRecord], dict[str, str]] | None = None
        # called after rows with new words were written (the second-vector worker of the quality profile)
        self.after_write: Callable[[], None] | None = None

    def wrote_rows(self) -> None:
        """Rows with new words are in the index: wake whoever computes more of them (``after_write``)."""
        if self.after_write is not None:
            self.after_write()

    # ---- reconciliation ----------------------------------------------------------------
    def sync(self, force: bool = False, *, wait: bool = True) -> int:
        """Bring the index in line with the files when they changed since we last saw them.
        Returns how many index rows changed. Cheap (one stat per file) when nothing changed.

        ``wait=False`` (reads): when a writer holds the namespace's lock, answer from the index as
        it is instead of waiting for the writer's whole add; the writer records what it wrote and
        brings hand edits in line itself before writing."""
        files = set(self.space.memory_files())
        known = self._known_states(files | {FILE_MEMORY, FILE_LEARNINGS})
        if not force:
            files |= {f for f in (FILE_MEMORY, FILE_LEARNINGS) if known(f)}
        stale = [f for f in sorted(files) if force or self._stat(f) != known(f)]
        if not stale:
            return 0
        ro = capability(self.index, ReadOnlyMode)
        if ro is not None and ro.read_only:  # nothing may be written: answer from the index as it is
            log.warning("%s of %s changed since it was indexed, but the workspace is read-only: the index is not "
                        "brought up to date", ", ".join(stale), self.user_id)
            return 0
        if not wait:
            try:
                if not self.space.lock.acquire_nowait():
                    return 0
            except ReadOnlyWorkspaceError:
                log.warning("%s of %s changed since it was indexed, but its folder is read-only: the index is not "
                            "brought up to date", ", ".join(stale), self.user_id)
                return 0
            try:
                return self._reconcile_stale(force)
            finally:
                self.space.lock.__exit__(None, None, None)
        with self.space.lock:
            return self._reconcile_stale(force)

    def _known_states(self, files: set[str]) -> Callable[[str], tuple[int, int] | None]:
        """What the index recorded of each file: one query for all of them where the backend can
        (``file_states``; a PostgreSQL round trip per daily-note file grew every search), else one per file."""
        many = capability(self.index, AllFileStates)
        if many is not None and len(files) > 1:
            states = many.file_states(self.user_id)
            return states.get
        return lambda f: self.index.file_state(self.user_id, f)

    def _reconcile_stale(self, force: bool) -> int:
        """Under the lock: reconcile the files that still differ from what the index recorded."""
        changed = 0
        files = set(self.space.memory_files())
        if not force:
            files |= {f for f in (FILE_MEMORY, FILE_LEARNINGS) if self.index.file_state(self.user_id, f)}
        for f in sorted(files):
            if force or self._stat(f) != self.index.file_state(self.user_id, f):
                changed += self._reconcile_file(f)
        return changed

    def _stat(self, rel: str) -> tuple[int, int] | None:
        st = self.space.stat(rel)
        return (st.mtime_ns, st.size) if st else None

    def _reconcile_file(self, rel: str, by: str = "hand") -> int:
        """Index what changed in a file since the index saw it; history entries name ``by`` as the
        author of the changed lines (a person's hand, or an agent's edit tool)."""
        text, state = self._guard(rel).adopt()  # a hand save from an older copy gets memfold's lines back
        known = self.index.content_hashes(self.user_id, rel)
        if text is None:
            gone = list(known)
            removed = self.index.get(self.user_id, gone) if gone else []
            self._delete_rows(gone, "delete", {"reason": f"{rel} was removed"})
            self.retire_turns(removed, "delete", {"reason": f"{rel} was removed"})
            self.index.set_file_state(self.user_id, rel, None)
            return len(gone)
        entries = md.parse(text)
        seen: set[str] = set()
        stamped = False
        new_lines: dict[int, tuple[md.Entry, str, MemoryRecord]] = {}
        redacted: dict[str, list[str]] = {}  # id -> kinds of the secrets redacted in its line
        to_embed: list[MemoryRecord] = []
        history: list[HistoryEntry] = []
        edited: list[MemoryRecord] = []  # memories whose words changed: the turns they came from step back
        fallback = daily_date(rel)
        # an id another namespace holds (a bullet copied by hand from another user's file) gets a new one
        foreign = self.index.foreign_ids(self.user_id, [e.id for e in entries if e.id and e.id not in known])
        for e in entries:
            eid = e.id
            if eid is None or eid in seen or eid in foreign:
                if eid in foreign:
                    log.warning("%s of %s: id %s belongs to another namespace; the line gets a new id",
                                rel, self.user_id, eid)
                eid = rec.new_id()
                stamped = True
            seen.add(eid)
            r, kinds = redact_record(rec.record_from_entry(e, eid, self.user_id, rel, fallback))
            if e.id != eid or kinds:  # a new line gets its id; a line with a secret is rewritten redacted
                new_lines[e.start] = (e, eid, r)
                stamped = True
            if kinds:
                redacted[eid] = list(kinds)
                log.warning("a hand-edited line of %s (user %s) held a secret (%s): rewritten with [redacted]",
                            rel, self.user_id, ", ".join(kinds))
            h = rec.content_hash(r)
            if known.get(eid) == h:
                continue
            before = self._prior[0].get(eid) if self._prior is not None and eid not in known else None
            if before is not None:  # reindex: the row was there before the rebuild; keep its statistics
                same = self._prior[1].get(eid) == h if self._prior is not None else False
                r = r.with_(access_count=before.access_count, last_accessed_at=before.last_accessed_at,
                            created_at=before.created_at, updated_at=before.updated_at if same else utcnow())
                if not same:  # changed in the file while the index did not know it: an edit by hand
                    history.append(HistoryEntry(eid, self.user_id, "edit", utcnow(), before.content, r.content,
                                                _with_redacted({"file": rel, "by": by}, redacted.get(eid))))
            elif eid in known:
                old = self.index.get(self.user_id, [eid])
                if old:
                    r = r.with_(access_count=old[0].access_count, last_accessed_at=old[0].last_accessed_at,
                                created_at=old[0].created_at, updated_at=utcnow())
                    history.append(HistoryEntry(eid, self.user_id, "edit", utcnow(), old[0].content, r.content,
                                                _with_redacted({"file": rel, "by": by}, redacted.get(eid))))
                    if old[0].content != r.content:
                        edited.append(old[0])
                        fresh = _without_stale_data(r, old[0].content)
                        if fresh is not r:  # the line's hidden data still quoted the old words: rewritten
                            r = fresh
                            new_lines[e.start] = (e, eid, r)
                            stamped = True
            else:
                history.append(HistoryEntry(eid, self.user_id, "add", utcnow(), None, r.content,
                                            _with_redacted({"file": rel, "by": "file" if by == "hand" else by},
                                                           redacted.get(eid))))
            to_embed.append(r)
        if stamped:
            lines = text.split("\n")
            for start in sorted(new_lines, reverse=True):
                e, eid, r = new_lines[start]
                day = e.date or (fallback.isoformat() if fallback else r.created_at.date().isoformat())
                meta = rec.meta_of(r, e.section if rel != FILE_LEARNINGS else "skills")
                lines[e.start: e.end] = md.render(eid, day, r.content, meta, self.space.language)
            _, state = self._guard(rel).publish("\n".join(lines), expected=text)
            if redacted:  # the version before this one is the hand edit with its secrets: not kept
                self._guard(rel).versions.drop_older()
        gone = [i for i in known if i not in seen]
        removed = self.index.get(self.user_id, gone) if gone else []
        self._delete_rows(gone, "delete", {"file": rel, "by": by})
        self._index_records(to_embed)
        self.index.append_history(history)
        self.retire_turns(edited, "edit", {"file": rel, "by": by})
        self.retire_turns(removed, "delete", {"file": rel, "by": by})
        self.index.set_file_state(self.user_id, rel, state)
        if to_embed or gone:
            log.info("reconciled %s of %s: %d indexed, %d removed", rel, self.user_id, len(to_embed), len(gone))
        return len(to_embed) + len(gone)

    def _delete_rows(self, ids: Sequence[str], action: str, detail: dict) -> None:
        if not ids:
            return
        olds = self.index.get(self.user_id, list(ids))
        self.index.delete(self.user_id, list(ids))
        self.index.forget_usage(self.user_id, list(ids))  # a line deleted by hand: the searches that returned it
        self.index.append_history([HistoryEntry(o.id, self.user_id, action, utcnow(), o.content, None, detail)
                                   for o in olds])

    def _index_records(self, records: Sequence[MemoryRecord], vectors=None, later: bool = False) -> None:  # type: ignore[no-untyped-def]
        if not records:
            return
        memo = TermsMemo()  # a turn's context quotes the turn before: its terms are made once
        if later:  # write-ahead mode: the vector worker gives the rows their vectors
            self.index.upsert([replace(rec.item(r, None, memo), vector_later=True) for r in records])
        else:
            if vectors is None:
                vectors = self.embedder.embed([rec.embed_text(r) for r in records])
            self.index.upsert([rec.item(r, vectors[i], memo) for i, r in enumerate(records)])
        self.wrote_rows()

    # ---- writes ---------------------------------------------------------------------
    def append(self, records: Sequence[MemoryRecord], vectors, history: Sequence[HistoryEntry],  # type: ignore[no-untyped-def]
               *, vectors_later: bool = False) -> None:
        """Persist new records: their file lines first, then the index (``vectors_later``: without
        their vectors, which the write-ahead vector worker adds)."""
        by_file: dict[str, list[MemoryRecord]] = {}
        for r in records:
            by_file.setdefault(r.file, []).append(r)
        changes: dict[str, Callable[[str], str | None]] = {}
        for rel, group in by_file.items():
            if rel == EPISODIC:
                continue

            def add_lines(text: str, rel: str = rel, group: list[MemoryRecord] = group) -> str:
                if rel.startswith("memory/"):
                    return text.rstrip("\n") + "\n" + "\n".join(
                        line for r in group for line in rec.render_record(r, self.space.language)) + "\n"
                sections: dict[str, list[str]] = {}
                for r in group:
                    sections.setdefault(md.SECTION_OF_TYPE[r.memory_type], []).extend(
                        rec.render_record(r, self.space.language))
                for section, lines in sections.items():
                    grown = md.insert_lines(text, section, lines, self.space.language)
                    made = md.inserted(grown)
                    if made is not None and made[0] is text:  # whole lines put in after a bullet
                        grown_unmarked(text, grown, "\n".join(made[1]))
                    text = grown
                return text

            changes[rel] = add_lines
        computed: list[Any] = [vectors]

        def embed() -> None:
            if records and computed[0] is None and not vectors_later:
                computed[0] = self.embedder.embed([rec.embed_text(r) for r in records])

        def write_index() -> None:
            self._index_records(records, computed[0], later=vectors_later)
            self.index.append_history(history)

        with self.space.lock:
            self.sync()
            try:
                self.commit(changes, write_index, prepare=embed)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise MemoryIndexError("the disk is full; nothing of this change was stored (the Markdown "
                                           "files are unchanged). Free some space and try again") from exc
                raise

    def commit(self, changes: Mapping[str, Callable[[str], str | None]], write_index: Callable[[], None], *,
               prepare: Callable[[], None] | None = None) -> None:
        """The crash-safe write of a namespace, for every change that touches files and index (the
        caller holds ``space.lock`` and has synced): each file of ``changes`` gets its change (text
        without the revision marker -> new text, None for none; MEMORY.md backed up first, hand edits
        merged), then ``prepare`` runs (vectors, say), then ``write_index`` in one index transaction
        where the backend has them. When anything fails — the index refused, the disk filled up — the
        files are put back as they were, so nothing half-stored stays and a retry stores the change
        once. The files' states are recorded last: a crash before that leaves them stale, and the next
        sync repairs the index."""
        written: dict[str, tuple[int, int] | None] = {}
        kept: dict[str, Path | None] = {}
        try:
            for rel, change in changes.items():
                kept[rel] = self.space.keep_old(rel)
                written[rel] = self.write_file(rel, change, backup=True)  # MEMORY.md: a dated backup first
            if prepare is not None:
                prepare()
            with _transaction(self.index):  # all or nothing where the backend can (SQLite)
                write_index()
        except BaseException:
            for rel in kept:
                self._undo_write(rel, kept[rel])
            raise
        finally:
            for old in kept.values():
                if old is not None:
                    old.unlink(missing_ok=True)
        for rel, state in written.items():
            self.index.set_file_state(self.user_id, rel, state)

    def rewrite(self, record: MemoryRecord, new: MemoryRecord | None, action: str, detail: dict) -> None:
        """Replace (``new``) or remove (``new=None``) the line of a file-backed record, with a backup."""
        with self.space.lock:
            self.sync()
            state = None
            if record.file != EPISODIC:
                if not self.space.path(record.file).exists():
                    raise NotFoundError(f"{record.file} does not exist for user {self.user_id!r}")

                def replace(text: str) -> str:
                    entry = md.entry_lines(text, record.id)
                    if entry is None:
                        raise NotFoundError(f"memory {record.id} is not in {record.file}")
                    lines = rec.render_record(new, self.space.language) if new is not None else []
                    return md.replace_entry(text, entry, lines)

                state = self._write_file(record.file, replace, backup=True)
            if new is None:
                self.index.delete(self.user_id, [record.id])
                self.index.append_history([HistoryEntry(record.id, self.user_id, action, utcnow(), record.content,
                                                        None, detail)])
                self.retire_turns([record], action, detail)
            else:
                vec = None if new.content == record.content and new.context == record.context else \
                    self.embedder.embed([rec.embed_text(new)])[0]
                self.index.upsert([rec.item(new, vec)])
                if vec is not None:
                    self.wrote_rows()
                self.index.append_history([HistoryEntry(record.id, self.user_id, action, utcnow(), record.content,
                                                        new.content, detail)])
                if new.content != record.content:
                    self.retire_turns([record], action, detail)
            if record.file != EPISODIC:
                self.index.set_file_state(self.user_id, record.file, state)

    def retire_turns(self, memories: Sequence[MemoryRecord], action: str, detail: dict) -> list[MemoryRecord]:
        """The files are the truth for turns too: the conversation turns ``memories`` were extracted
        from (their keys among the memories' source ids) step back when a memory's words change or
        it is deleted. Each is archived, superseded by its memory (an edited memory stands for it;
        a deleted one takes it along: ``purge`` deletes what a deleted memory superseded), and the
        turns whose context quotes it are indexed again without its words."""
        owner: dict[str, MemoryRecord] = {}
        for m in memories:
            if m.file != EPISODIC:
                for sid in m.source_ids:
                    owner.setdefault(sid, m)
        if not owner:
            return []
        turns = self.index.turns_of(self.user_id, list(owner))
        if not turns:
            return []
        now = utcnow()
        retired = [t.with_(is_active=False, superseded_by=owner[t.source_ids[0]].id, updated_at=now) for t in turns]
        self.index.upsert([IndexItem(record=t) for t in retired])
        self.index.append_history([HistoryEntry(
            t.id, self.user_id, "archive", now, t.content, None,
            dict(detail, superseded_by=t.superseded_by, reason=f"the memory it was extracted from: {action}"))
            for t in retired])
        self.unquote_contexts([t.content for t in retired], skip={t.id for t in retired})
        return retired

    def unquote_contexts(self, texts: Sequence[str], skip: set[str] | frozenset[str] = frozenset(), *,
                         rows: Sequence[MemoryRecord] | None = None, asked: Sequence[str] = ()) -> int:
        """Index again, without the quote, the turns whose context (the previous turn) quotes one of
        ``texts`` (``rows``: those turns, when the caller found them already; ``skip``: ids left alone).
        ``asked``: a forget's words; a previous turn that repeats one of them leaves the context whole
        (the day and the speaker stay)."""
        texts = sorted({t for t in texts if t.strip()}, key=len, reverse=True)
        if rows is None:
            if not texts:
                return 0
            rows = [r for r in self.index.quoting(self.user_id, texts) if r.id not in skip]
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
            vectors = self.embedder.embed([rec.embed_text(r) for r in changed])
            self.index.upsert([rec.item(r, vectors[i]) for i, r in enumerate(changed)])
            self.wrote_rows()
        return len(changed)

    def archive(self, record: MemoryRecord, superseded_by: str | None, detail: dict) -> MemoryRecord:
        """Take a record out of the file and search, keeping it in the index as inactive (SPEC §4.4)."""
        archived = record.with_(is_active=False, superseded_by=superseded_by, updated_at=utcnow())
        with self.space.lock:
            self.sync()
            state = None
            if record.file != EPISODIC:

                def remove(text: str) -> str | None:
                    entry = md.entry_lines(text, record.id)
                    return None if entry is None else md.replace_entry(text, entry, [])

                state = self._write_file(record.file, remove, backup=True)
            self.index.upsert([IndexItem(record=archived)])
            self.index.append_history([HistoryEntry(record.id, self.user_id, "archive", utcnow(), record.content,
                                                    None, dict(detail, superseded_by=superseded_by))])
            if record.file != EPISODIC:
                self.index.set_file_state(self.user_id, record.file, state)
        return archived

    def edit_text(self, rel: str, change: Callable[[str], str], by: str) -> None:
        """Change a memory file's text as a hand edit would (``change``: text without the revision
        marker -> new text; it raises to refuse): MEMORY.md is backed up, the file written, then
        indexed like a hand edit with ``by`` as the author in the history."""
        with self.space.lock:
            self.sync()
            if not self.space.path(rel).exists():
                raise NotFoundError(f"{rel} does not exist for user {self.user_id!r}")
            self._write_file(rel, change, backup=True)
            self._reconcile_file(rel, by=by)

    # ---- guarded file writes (hand edits made meanwhile are merged, not overwritten) ----------------
    def forget_older_versions(self) -> None:
        """Under the lock, after memories were deleted: the copy memfold keeps of each memory file's
        version before its latest (its merge base) is overwritten with the latest."""
        for rel in self.space.memory_files():
            self._guard(rel).versions.drop_older()

    def _guard(self, rel: str) -> GuardedFile:
        g = self._guards.get(rel)
        if g is None:
            g = self._guards[rel] = GuardedFile(self.space, rel)
        return g

    def _undo_write(self, rel: str, kept: Path | None) -> None:
        """Put back the file as it was before a write whose index part failed, and make it the
        version memfold holds (else the next reconcile would merge the undone lines back in)."""
        try:
            self.space.undo(rel, kept)
            g = self._guard(rel)
            text, _ = g.read()
            if text is not None:
                g.versions.hold(text)
            else:
                g.versions.reset()
        except OSError as exc:  # the next sync indexes what stayed in the file
            log.warning("could not undo the write of %s of %s: %s", rel, self.user_id, exc)

    def _write_file(self, rel: str, change: Callable[[str], str | None], backup: bool = False
                    ) -> tuple[int, int] | None:
        """Apply ``change`` (file text without its revision marker -> new text, or None for no
        change) to a memory file. A hand edit found first is merged and indexed before; one saved
        while we write is merged into what we write (see workspace/editsafe.py). Returns the
        (mtime_ns, size) to record for the file, None when the index still lacks a hand edit."""
        g = self._guard(rel)
        text, st = g.read()
        if text is not None and not g.is_own(text):
            self._reconcile_file(rel)  # changed since the last sync: merge and index that first
            text, st = g.read()
            held = g.versions.last()
            if text is not None and not g.is_own(text) and held is not None:
                # saved again meanwhile: change the version memfold holds; the next sync merges it in
                new = change(split_marker(held)[0])
                if new is not None:
                    g.versions.hold(new)
                return None
        base = text if text is not None else self.space.read_or_template(rel)
        new = change(split_marker(base)[0])
        if new is None:
            return (st.st_mtime_ns, st.st_size) if st is not None else None
        _, state = g.publish(new, expected=text,
                             backup_keep=self.backup_keep if backup and rel == FILE_MEMORY else None)
        return state

    def write_file(self, rel: str, change: Callable[[str], str | None], *, backup: bool = True
                   ) -> tuple[int, int] | None:
        """A whole-file change for maintenance jobs (the caller holds ``space.lock`` and has synced):
        hand edits are merged as for every write; returns the state to record with ``set_file_state``."""
        return self._write_file(rel, change, backup)

    def reconcile_file(self, rel: str) -> int:
        """Index a file as it is now (the caller holds ``space.lock``); returns the rows changed."""
        return self._reconcile_file(rel)

    def reindex(self) -> int:
        """Rebuild every file-backed row of the namespace from the files. A row that is still in its
        file keeps its access statistics and gets no history entry; a line changed or added in a
        file meanwhile is recorded as an edit or an add, as at any sync."""
        with self.space.lock:
            rows = [r for r in self.index.list_records(self.user_id, active_only=True) if r.file != EPISODIC]
            hashes: dict[str, str] = {}
            for rel in {r.file for r in rows}:
                hashes.update(self.index.content_hashes(self.user_id, rel))
            self._prior = ({r.id: r for r in rows}, hashes)
            file_ids = {r.id for r in rows}
            links = [x for x in self.index.iter_relations(self.user_id)
                     if x.source_id in file_ids or x.target_id in file_ids]  # rows cleared below drop theirs
            try:
                self.index.clear_files(self.user_id)
                n = self.sync(force=True)
            finally:
                self._prior = None
            here = {r.id for r in self.index.get(self.user_id, sorted({i for x in links
                                                                      for i in (x.source_id, x.target_id)}))}
            for x in links:  # the relations of memories still in their files come back
                if x.source_id in here and x.target_id in here:
                    self.index.add_relation(self.user_id, x.source_id, x.target_id, x.relation, x.strength)
            return n


def _transaction(index: Index) -> AbstractContextManager[Any]:
    """One index transaction around several writes when the backend offers it."""
    tx = capability(index, Transactions)
    return tx.transaction() if tx is not None else nullcontext()


_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}(?: [^\W\d_]+ \d{4})?")  # the day that opens a turn's context


def _without_stale_data(r: MemoryRecord, old_content: str) -> MemoryRecord:
    """``r`` without the ``structured_data`` values that quoted words of ``old_content`` which the
    edited text no longer holds (an extracted object, a date): data that contradicts the words a
    person wrote would be injected and filtered on as if still true. Values a caller set that never
    quoted the text are kept."""
    data = r.structured_data or {}
    stale = [k for k, v in data.items()
             if isinstance(v, str) and len(v.strip()) >= 2 and v in old_content and v not in r.content]
    if not stale:
        return r
    return r.with_(structured_data={k: v for k, v in data.items() if k not in stale})


def _with_redacted(detail: dict, kinds: list[str] | None) -> dict:
    return dict(detail, redacted=kinds) if kinds else detail


def daily_file(day: datetime | None = None) -> str:
    return daily_rel((day or datetime.now(timezone.utc)).date())
