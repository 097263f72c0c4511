"""Tidying (seed 002: "tidy regularly"): deterministic, no LLM.

- completed and expired todos leave the active sections: archived in the index (searchable with
  ``include_archived``) and listed in the user's ``archive.md``;
- near-duplicates already in a file (cosine ≥ ``dedupe_threshold`` or the same words, same file
  and type) are merged: the older one is archived, superseded by the newer (relation ``duplicates``);
- a week of daily notes older than ``recent_days`` is distilled into one event of MEMORY.md's
  events section (the daily files stay as they are; a week is distilled once).

The same plan is the long-term compression's fallback when no LLM is configured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

import numpy as np

from ..engine.storage import records as rec
from ..engine.storage.changes import Archive, Changes, apply_changes
from ..engine.write.todos import archive_line, todo_finished
from ..models import FILE_LEARNINGS, FILE_MEMORY, MemoryRecord, MemoryType
from ..workspace.userspace import daily_date
from .base import DONE, NOTHING, PLANNED, STATE_KIND, JobContext, JobResult, planned_change

WEEKS_KEY = "tidy_weeks"  # state document (kind maintenance): the weeks already distilled
MAX_WEEKS_KEPT = 1000
WEEK_CHARS = 600  # a distilled week's event is cut at this many characters
WEEK_SOURCES = 50


@dataclass
class TidyPlan:
    changes: Changes = field(default_factory=Changes)
    todos: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (archived id, kept id)
    weeks: list[str] = field(default_factory=list)
    shown: list[dict[str, Any]] = field(default_factory=list)  # planned_change() of each change


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def duplicates(ctx: JobContext, records: list[MemoryRecord], vectors: dict[str, np.ndarray]) -> list[tuple[str, str]]:
    """(older id, newer id) pairs of near-duplicates in the same file and of the same type."""
    by_id = {r.id: r for r in records}
    pairs: list[tuple[str, str]] = []
    gone: set[str] = set()
    order = sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)  # newest first: it is kept
    seen: dict[tuple[str, str, str], str] = {}
    for r in order:  # the same words
        key = (r.file, r.memory_type.value, _norm(r.content))
        if key in seen:
            pairs.append((r.id, seen[key]))
            gone.add(r.id)
        else:
            seen[key] = r.id
    have = [r for r in order if r.id in vectors and r.id not in gone]
    threshold = ctx.policy.dedupe_threshold
    for start in range(0, len(have), 256):
        chunk = have[start: start + 256]
        found = ctx.store.index.vector_search_many(ctx.user_id, np.stack([vectors[r.id] for r in chunk]), 4,
                                                   min_score=threshold)
        for r, near in zip(chunk, found):
            if r.id in gone:
                continue
            for nid, _score in near:
                o = by_id.get(nid)
                if o is None or o.id == r.id or o.id in gone or o.file != r.file or o.memory_type is not r.memory_type:
                    continue
                if (o.created_at, o.id) < (r.created_at, r.id):  # only older ones go
                    pairs.append((o.id, r.id))
                    gone.add(o.id)
    return pairs


def _week_label(year: int, week: int) -> str:
    return f"{year}-W{week:02d}"


def distill_weeks(ctx: JobContext, done: Iterable[str]) -> list[tuple[str, MemoryRecord]]:
    """One event per ISO week of daily notes whose days are all older than ``recent_days``."""
    today = ctx.now.date()
    cutoff = today - timedelta(days=ctx.policy.recent_days)
    done = set(done)
    weeks: dict[tuple[int, int], list[str]] = {}
    for rel in ctx.store.space.memory_files():
        d = daily_date(rel)
        if d is None:
            continue
        y, w, _ = d.isocalendar()
        sunday = d + timedelta(days=7 - d.isoweekday())
        if sunday < cutoff and _week_label(y, w) not in done:
            weeks.setdefault((y, w), []).append(rel)
    out = []
    for (y, w), files in sorted(weeks.items()):
        notes = [r for rel in sorted(files) for r in ctx.store.index.list_records(ctx.user_id, file=rel)]
        if not notes:
            continue
        monday = date.fromisocalendar(y, w, 1)
        sunday = monday + timedelta(days=6)
        out.append((_week_label(y, w), week_event(ctx, notes, y, w, monday, sunday)))
    return out


def week_event(ctx: JobContext, notes: list[MemoryRecord], y: int, w: int, monday: date, sunday: date) -> MemoryRecord:
    zh = ctx.language == "zh"
    head = f"{y}年第{w}周（{monday.isoformat()}–{sunday.isoformat()}）笔记：" if zh else \
        f"Week {_week_label(y, w)} ({monday.isoformat()} to {sunday.isoformat()}) notes: "
    sep = "；" if zh else "; "
    parts: list[str] = []
    for n in notes:
        one = " ".join(n.content.split())
        if one and one not in parts:
            parts.append(one)
    text = head
    for i, p in enumerate(parts):
        more = (f"（另有 {len(parts) - i} 条）" if zh else f" (+{len(parts) - i} more)")
        piece = (sep if i else "") + p
        if len(text) + len(piece) > WEEK_CHARS:
            text += more
            break
        text += piece
    at = datetime.combine(sunday, time(12, 0), tzinfo=timezone.utc)
    return MemoryRecord(id=rec.new_id(), user_id=ctx.user_id, memory_type=MemoryType.EVENT, content=text,
                        created_at=at, updated_at=ctx.now, importance=0.4,
                        structured_data={"week": _week_label(y, w)},
                        source_ids=tuple(n.id for n in notes[:WEEK_SOURCES]), file=FILE_MEMORY)


def plan(ctx: JobContext) -> TidyPlan:
    """What tidying would change now (a dry run computes it once for the tidy and the long-term jobs)."""
    if ctx.dry_run and "tidy" in ctx.shared:
        return ctx.shared["tidy"]  # type: ignore[no-any-return]
    out = _plan(ctx)
    if ctx.dry_run:
        ctx.shared["tidy"] = out
    return out


def _plan(ctx: JobContext) -> TidyPlan:
    out = TidyPlan()
    today = ctx.now.date()
    file_rows = [r for r in ctx.store.index.list_records(ctx.user_id) if r.file in (FILE_MEMORY, FILE_LEARNINGS)]
    for r in file_rows:
        if r.memory_type is MemoryType.TODO:
            why = todo_finished(r, today)
            if why:
                out.todos.append((r.id, why))
                out.changes.archive.append(Archive(r, reason=f"todo {why}"))
                out.changes.archive_lines.append(archive_line(r, why, ctx.language))
                out.shown.append(planned_change("archive", f"todo {why}", [r]))
    leaving = {a.record.id for a in out.changes.archive}
    rest = [r for r in file_rows if r.id not in leaving]
    vectors = {item.record.id: item.vector for item in ctx.store.index.iter_rows(ctx.user_id)
               if item.record.is_active and item.vector is not None and item.record.file in (FILE_MEMORY, FILE_LEARNINGS)}
    by_id = {r.id: r for r in rest}
    for old, new in duplicates(ctx, rest, vectors):
        out.duplicates.append((old, new))
        out.changes.archive.append(Archive(by_id[old], superseded_by=new, relation="duplicates",
                                           reason="near-duplicate"))
        out.shown.append(planned_change("merge", "near-duplicate: the newer one stays", [by_id[old]],
                                        by_id[new].content, saved=len(by_id[old].content)))
    done = (ctx.store.index.get_state(ctx.user_id, STATE_KIND, WEEKS_KEY) or {}).get("weeks") or []
    for label, event in distill_weeks(ctx, done):
        out.weeks.append(label)
        out.changes.add.append(event)
        notes = ctx.store.index.get(ctx.user_id, list(event.source_ids))  # the daily files stay as they are
        out.shown.append(planned_change("distill", f"daily notes of week {label}", notes, event.content,
                                        saved=-len(event.content)))
    return out


def chars(records: Iterable[MemoryRecord]) -> int:
    return sum(len(r.content) for r in records)


class Tidy:
    name = "tidy"

    def run(self, ctx: JobContext) -> JobResult:
        p = plan(ctx)
        if not p.changes:
            return ctx.result(self.name, NOTHING, "no finished todos, duplicates or old weeks of notes")
        details = {"todos": [{"id": i, "why": w} for i, w in p.todos],
                   "duplicates": [{"archived": a, "kept": k} for a, k in p.duplicates], "weeks": p.weeks}
        before = chars(a.record for a in p.changes.archive)
        res = ctx.result(self.name, PLANNED if ctx.dry_run else DONE, archived=[a.record.id for a in p.changes.archive],
                         created=[] if ctx.dry_run else [r.id for r in p.changes.add], chars_before=before,
                         chars_after=chars(p.changes.add), details=details, changes=p.shown)
        if ctx.dry_run:
            return res
        apply_plan(ctx, p, self.name)
        return res


def apply_plan(ctx: JobContext, p: TidyPlan, job: str) -> None:
    """Write a tidy plan and remember the weeks it distilled."""
    apply_changes(ctx.store, p.changes, job)
    if p.weeks:
        doc = ctx.store.index.get_state(ctx.user_id, STATE_KIND, WEEKS_KEY) or {}
        weeks = ([w for w in doc.get("weeks") or [] if w not in p.weeks] + p.weeks)[-MAX_WEEKS_KEPT:]
        ctx.store.index.put_state(ctx.user_id, STATE_KIND, WEEKS_KEY, {"weeks": weeks})
