"""Old-memory compression in two stages: memories of MEMORY.md and learnings.md accessed fewer
than ``old_memory_access_below`` times and not accessed for ``old_memory_merge_days`` days (the
merge stage) or for ``old_memory_days`` days (the hard stage) are grouped by type and by topic
(greedy clustering of their stored vectors).

- Merge stage: each group of at least 3 becomes 1–3 memories, the sentences that carry the
  group's distinct facts kept and the repeats dropped (``text/condense.py``).
- Hard stage: a group of at least 3 — or one memory the merge stage wrote, alone — becomes one
  shorter memory: only sentences bringing a new fact or mostly new words, at most ``HARD_CHARS``;
  the originals' full words are listed in the user's ``archive.md``.

With an LLM, each group is rewritten by the LLM with the compression prompt (1–3 memories) at
either stage. A memory written by compression is dated by the newest of its sources, so its age
goes on counting toward the next stage. The originals are archived, never deleted: inactive rows
with ``superseded_by`` and a ``summarizes`` relation from what replaced them, searchable again
with ``include_archived``. Frequently or recently used memories stay as they are; todos are left
to the tidy job. A group whose LLM answer is unusable keeps its memories (the next run tries
again); the other groups are still compressed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .. import prompts
from ..engine.llm.llm_calls import CallCapReached, LLMCalls, answer_text, parse_json_answer, record_usage
from ..engine.storage import records as rec
from ..engine.storage.changes import Archive, Changes, apply_changes
from ..engine.storage.store import file_for
from ..engine.write.todos import archive_line
from ..errors import ProviderError
from ..models import FILE_LEARNINGS, FILE_MEMORY, MemoryRecord, MemoryType
from ..text import condense
from ..text.condense import Condenser
from .base import DONE, FAILED, NOT_DUE, NOTHING, PLANNED, JobContext, JobResult, planned_change

log = logging.getLogger("memfold")
MIN_GROUP = 3  # seed 003: fewer are not compressed
MAX_GROUP = 20  # memories sent in one prompt (a larger topic is compressed in parts)
MAX_GROUPS = 200  # groups one run compresses (the rest wait for the next run)
TOPIC_SIMILARITY = 0.5  # cosine to a group's centroid that puts a memory in the group
HARD_SIMILARITY = 0.4  # the hard stage groups more widely (its originals are listed in archive.md)
MAX_CHARS = 1000  # a compressed memory's length (LLM answers are refused beyond it; extractive parts stop at it)
HARD_CHARS = 400  # the hard stage's extractive memory stops at this length (the rest is in archive.md)
MERGE_NOVELTY, HARD_NOVELTY = 0.34, 0.5  # share of new terms that keeps a sentence without a new fact
MERGE_NEW_TERMS, HARD_NEW_TERMS = 3, 4  # ... or this many new terms
MERGE, HARD = "merge", "hard"  # the stages
MARK = "compressed"  # structured_data key of a memory written by compression: its stage
RELATION = "summarizes"
OUT_OF_TIME = "stopped at the time budget of a background run"
HARD_WHY = {"en": "compressed", "zh": "已压缩"}  # why an original is listed in archive.md
SCHEMA: dict[str, Any] = {"title": "compressed_memories", "type": "array", "items": {
    "type": "object", "required": ["content"],
    "properties": {"content": {"type": "string"}, "importance_score": {"type": "number"},
                   "source_memory_ids": {"type": "array", "items": {"type": "string"}}}}}


@dataclass
class Group:
    memory_type: MemoryType
    members: list[MemoryRecord]
    stage: str = HARD

    @property
    def chars(self) -> int:
        return sum(len(r.content) for r in self.members)


def reference(r: MemoryRecord) -> datetime:
    """The moment a memory's age is counted from: its last access, else its date."""
    return r.last_accessed_at or r.created_at


def stages(ctx: JobContext) -> tuple[int, int]:
    """(merge days, hard days): 0 = that stage is off; a merge stage at or past the hard stage is off."""
    hard = ctx.policy.old_memory_days
    merge = ctx.policy.old_memory_merge_days
    return (merge if 0 < merge < hard or (hard == 0 and merge > 0) else 0), hard


def candidates(ctx: JobContext) -> list[MemoryRecord]:
    merge, hard = stages(ctx)
    first = min(d for d in (merge, hard) if d > 0)
    cutoff = ctx.now - timedelta(days=first)
    return [r for r in ctx.store.index.list_records(ctx.user_id)
            if r.file in (FILE_MEMORY, FILE_LEARNINGS) and r.memory_type is not MemoryType.TODO
            and r.access_count < ctx.policy.old_memory_access_below and reference(r) < cutoff]


def stage_of(ctx: JobContext, r: MemoryRecord) -> str:
    hard = ctx.policy.old_memory_days
    return HARD if hard > 0 and reference(r) < ctx.now - timedelta(days=hard) else MERGE


def groups(ctx: JobContext, records: list[MemoryRecord]) -> list[Group]:
    """By stage and type, then by topic: each memory joins the group whose centroid is nearest
    (cosine ≥ ``TOPIC_SIMILARITY``), else starts one. Groups of ``MIN_GROUP`` or more, cut at
    ``MAX_GROUP``; at the hard stage a memory the merge stage wrote may stand alone."""
    want = {r.id for r in records}
    vectors = {it.record.id: it.vector for it in ctx.store.index.iter_rows(ctx.user_id)
               if it.record.id in want and it.vector is not None}
    out: list[Group] = []
    by_type: dict[tuple[str, MemoryType], list[MemoryRecord]] = {}
    for r in sorted(records, key=lambda r: (r.created_at, r.id)):
        by_type.setdefault((stage_of(ctx, r), r.memory_type), []).append(r)
    for (stage, mtype), rows in by_type.items():
        have = [(r, vectors[r.id].astype(np.float32)) for r in rows if r.id in vectors]
        if not have:
            continue
        dim = have[0][1].shape[0]
        sums = np.zeros((len(have), dim), dtype=np.float32)  # running sums of the groups' vectors
        cents = np.zeros((len(have), dim), dtype=np.float32)  # their directions (unit length)
        members: list[list[MemoryRecord]] = []
        for r, v in have:
            g = len(members)
            best = -1
            if g:
                sims = cents[:g] @ v
                j = int(np.argmax(sims))
                best = j if sims[j] >= (HARD_SIMILARITY if stage == HARD else TOPIC_SIMILARITY) else -1
            if best < 0:
                best = g
                members.append([])
            members[best].append(r)
            sums[best] += v
            cents[best] = sums[best] / max(float(np.linalg.norm(sums[best])), 1e-9)
        for ms in members:
            for start in range(0, len(ms), MAX_GROUP):
                part = ms[start: start + MAX_GROUP]
                merged = [r for r in part if (r.structured_data or {}).get(MARK) == MERGE]
                if len(part) >= MIN_GROUP or (stage == HARD and merged and len(part) > 1):
                    out.append(Group(mtype, part, stage))
                elif stage == HARD:  # merged memories that reached the hard stage are compressed alone
                    out.extend(Group(mtype, [r], stage) for r in merged)
    return out[:MAX_GROUPS]


def _new(ctx: JobContext, g: Group, content: str, importance: float, sources: list[MemoryRecord]) -> MemoryRecord:
    dated = max((reference(s) for s in sources), default=ctx.now)  # its age goes on from its sources'
    r = MemoryRecord(id=rec.new_id(), user_id=ctx.user_id, memory_type=g.memory_type, content=content,
                     created_at=dated, updated_at=ctx.now, importance=min(1.0, max(0.0, importance)),
                     source_ids=tuple(s.id for s in sources), structured_data={MARK: g.stage})
    return r.with_(file=file_for(r))


def extractive(ctx: JobContext, g: Group) -> list[tuple[MemoryRecord, list[MemoryRecord]]]:
    """Without an LLM: the sentences carrying the group's distinct facts (``text/condense.py``).
    Merge stage: at most 3 memories of ``MAX_CHARS`` (members that do not fit stay as they are);
    hard stage: one memory of at most ``HARD_CHARS`` (the originals go to archive.md)."""
    hard = g.stage == HARD
    cond = Condenser(novelty=HARD_NOVELTY if hard else MERGE_NOVELTY, new_terms=HARD_NEW_TERMS if hard else MERGE_NEW_TERMS)
    limit = HARD_CHARS if hard else MAX_CHARS
    starts = [0]  # where each part's sentences start in cond.kept
    members: list[list[MemoryRecord]] = [[]]
    for r in g.members:
        text = " ".join(r.content.split())
        keep = [s for s, k in cond.judge(text) if k]
        size = len(condense.join(cond.kept[starts[-1]:] + keep, ctx.language))
        if keep and any(cond.kept[starts[-1]:]) and size > limit:
            if hard:  # its words are in archive.md; its facts too
                members[-1].append(r)
                continue
            if len(starts) == 3:
                break
            starts.append(len(cond.kept))
            members.append([])
        cond.offer(text)
        members[-1].append(r)
    out = []
    for i, ms in enumerate(members):
        if not ms:
            continue
        part = cond.kept[starts[i]: starts[i + 1] if i + 1 < len(starts) else None]
        content = condense.join(part, ctx.language) or " ".join(ms[0].content.split())
        if len(content) > limit:
            content = content[: limit - 1].rstrip() + "…"
        out.append((_new(ctx, g, content, max(r.importance for r in ms), ms), ms))
    return out


def ask_llm(ctx: JobContext, calls: LLMCalls, g: Group) -> list[tuple[MemoryRecord, list[MemoryRecord]]]:
    """The LLM's 1–3 memories for a group; ValueError or ProviderError when the answer is unusable."""
    lang = ctx.language if ctx.language in prompts.LANGUAGES else "en"
    listing = "\n".join(f"{i + 1}. [{r.id}] {' '.join(r.content.split())}" for i, r in enumerate(g.members))
    messages = [{"role": "system", "content": prompts.render("system", lang)},
                {"role": "user", "content": prompts.render("compress_old_memories", lang, count=len(g.members),
                                                           type=g.memory_type.value, memories=listing)}]
    answer = parse_json_answer(calls.complete(messages, purpose="compress_old_memories", json_schema=SCHEMA).text)
    if isinstance(answer, dict):
        answer = next((v for v in answer.values() if isinstance(v, list)), [answer])
    if not isinstance(answer, list) or not 1 <= len(answer) <= 3:
        raise ValueError("expected a JSON array of 1 to 3 memories")
    by_id = {r.id: r for r in g.members}
    out = []
    for item in answer:
        text = item.get("content") if isinstance(item, dict) else None
        content = answer_text(text, "a compressed memory", MAX_CHARS)
        if not content:
            raise ValueError("a compressed memory has no content")
        imp = item.get("importance_score")
        imp = float(imp) if isinstance(imp, (int, float)) and not isinstance(imp, bool) and 0 <= imp <= 1 \
            else max(r.importance for r in g.members)
        ids = item.get("source_memory_ids")
        src = [by_id[i] for i in ids if isinstance(i, str) and i in by_id] if isinstance(ids, list) else []
        out.append((_new(ctx, g, content, imp, src or g.members), src))
    return out


def why(ctx: JobContext, g: Group) -> str:
    merge, hard = stages(ctx)
    if g.stage == HARD:
        return f"old {g.memory_type.value} memories not used for {hard} days, compressed harder (words in archive.md)"
    return f"old {g.memory_type.value} memories not used for {merge} days, merged"


def planned(ctx: JobContext, g: Group) -> list[dict[str, Any]]:
    """A dry run's changes of one group: without an LLM the extractive merge's words (what a run
    writes); with one, the memories only (the LLM writes the words when the job runs)."""
    why_ = why(ctx, g)
    if ctx.chat is not None:
        change = planned_change("compress", why_ + "; the LLM writes 1-3 memories in their place when the job runs",
                                g.members)
        change["chars_saved"] = None  # known only when the LLM has answered
        return [change]
    return [planned_change("compress", why_, sources, new.content) for new, sources in extractive(ctx, g)]


class OldMemoryCompression:
    name = "compress_old_memories"

    def run(self, ctx: JobContext) -> JobResult:
        merge, hard = stages(ctx)
        if ctx.policy.old_memory_days <= 0:
            return ctx.result(self.name, NOT_DUE, "off (old_memory_days is 0)")
        gs = groups(ctx, candidates(ctx))
        if not gs:
            return ctx.result(self.name, NOTHING, f"no group of {MIN_GROUP} or more memories unused for "
                                                  f"{merge or hard} days")
        listing = [{"type": g.memory_type.value, "ids": [r.id for r in g.members], "chars": g.chars} for g in gs]
        if ctx.dry_run:
            return ctx.result(self.name, PLANNED, f"would compress {len(gs)} group(s) of old memories "
                              f"({'LLM' if ctx.chat is not None else 'extractive merge'})",
                              archived=[r.id for g in gs for r in g.members], chars_before=sum(g.chars for g in gs),
                              details={"groups": listing}, changes=[c for g in gs for c in planned(ctx, g)])
        changes, failures = self._compress(ctx, gs)
        if not changes and failures == [OUT_OF_TIME]:
            return ctx.result(self.name, NOT_DUE, OUT_OF_TIME + "; the next run goes on")
        if not changes:
            return ctx.result(self.name, FAILED, "; ".join(failures[:3]) + "; nothing was changed", details={"groups": listing})
        apply_changes(ctx.store, changes, self.name)
        archived = [a.record.id for a in changes.archive]
        reason = f"{len(archived)} memories in {len(gs) - len(failures)} group(s) compressed into {len(changes.add)}"
        if failures:
            reason += f"; {len(failures)} group(s) kept for the next run: " + "; ".join(failures[:3])
        by_id = {a.record.id: a.record for a in changes.archive}
        stage_of_new = {r.id: Group(r.memory_type, [], str((r.structured_data or {}).get(MARK, HARD)))
                        for r in changes.add}
        shown = [planned_change("compress", why(ctx, stage_of_new[r.id]), [by_id[i] for i in r.source_ids if i in by_id],
                                r.content) for r in changes.add]
        return ctx.result(self.name, DONE, reason, archived=archived, created=[r.id for r in changes.add],
                          chars_before=sum(len(a.record.content) for a in changes.archive),
                          chars_after=sum(len(r.content) for r in changes.add), details={"failed_groups": len(failures)},
                          changes=shown)

    def _compress(self, ctx: JobContext, gs: list[Group]) -> tuple[Changes, list[str]]:
        changes, failures = Changes(), []
        calls = ctx.calls()
        try:
            for g in gs:
                if ctx.out_of_time():  # a background run's time budget, or a closing process
                    failures.append(OUT_OF_TIME)
                    break
                if calls is None:
                    made = extractive(ctx, g)
                else:
                    try:
                        made = ask_llm(ctx, calls, g)
                    except CallCapReached:
                        failures.append("the LLM call cap of this run is reached")
                        continue
                    except (ProviderError, ValueError) as exc:
                        if isinstance(exc, ValueError):
                            calls.failed()
                        failures.append(f"the LLM answer for a group of {len(g.members)} {g.memory_type.value} "
                                        f"memories was unusable ({exc})")
                        log.warning("compress_old_memories of %s: %s", ctx.user_id, failures[-1])
                        continue
                placed: set[str] = set()
                for new, sources in made:
                    changes.add.append(new)
                    for r in sources:
                        if r.id not in placed:
                            placed.add(r.id)
                            changes.archive.append(Archive(r, superseded_by=new.id, relation=RELATION,
                                                           reason="old memory compressed"))
                for r in g.members:  # members the LLM named nowhere are replaced by its first memory
                    if r.id not in placed and calls is not None:
                        placed.add(r.id)
                        changes.archive.append(Archive(r, superseded_by=made[0][0].id, relation=RELATION,
                                                       reason="old memory compressed"))
                if g.stage == HARD:  # the originals' full words stay readable in archive.md
                    changes.archive_lines.extend(archive_line(r, HARD_WHY.get(ctx.language, HARD_WHY["en"]),
                                                              ctx.language) for r in g.members if r.id in placed)
        finally:
            if calls is not None:
                record_usage(ctx.store.index, ctx.user_id, "maintain", calls, lock=ctx.store.space.lock)
        return changes, failures
