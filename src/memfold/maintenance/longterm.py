"""Long-term compression (seed 001 §1.6): when MEMORY.md is over
``long_term_compress_char_threshold`` characters, at most once per 24 hours per user (the last
successful run is kept in the index's state store): backup → compression → atomic write →
re-index.

With an LLM the seed's compression prompt (zh/en) is asked for the whole file; its answer is
checked deterministically before anything is written: not empty, shorter, every section heading
kept, no secret, and the facts (numbers, dates, most words) of the pinned and recent entries
present. Bullets the answer left word for word keep their ids. Without an LLM the deterministic
tidy (``tidy.py``) is the compression. A failed or invalid compression changes nothing.

Entries that leave the file are archived in the index (inactive, with the history naming the
job), so they stay searchable with ``include_archived`` and the dated backup holds the old file."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

from .. import prompts
from ..engine.conversation.context import clean_memory_file
from ..engine.llm.llm_calls import parse_json_answer, record_usage
from ..engine.storage.pin import STATE_KIND as PIN_KIND
from ..errors import ProviderError
from ..index.base import IndexItem
from ..models import FILE_MEMORY, HistoryEntry, MemoryRecord, utcnow
from ..text import memory_markdown as md
from ..text.secrets import a_kind, find_secret
from ..text.terms import terms
from . import tidy
from .base import DONE, NOT_DUE, NOTHING, PLANNED, JobContext, JobFailed, JobResult

log = logging.getLogger("memfold")
INTERVAL = timedelta(hours=24)
KEEP_SHARE = 0.7  # the target length asked for: this share of the file, at most the threshold
TERMS_KEPT = 0.5  # a protected entry counts as kept when this share of its terms is in the new file
_NUMBER = re.compile(r"\d+(?:[.:/-]\d+)*")
_H2 = re.compile(r"^##\s+(.+?)\s*$", re.M)

SCHEMA: dict[str, Any] = {"title": "compressed_memory", "type": "object",
                          "properties": {"memory_md": {"type": "string"}}, "required": ["memory_md"]}


def protected_entries(ctx: JobContext, text: str) -> list[str]:
    """The contents of MEMORY.md entries an agent pinned or that are recent (``recent_days``)."""
    pinned: set[str] = set()
    for agent in ctx.store.index.list_state(ctx.user_id, PIN_KIND):
        doc = ctx.store.index.get_state(ctx.user_id, PIN_KIND, agent) or {}
        pinned.update(p.strip() for p in doc.get("recent_memories") or [] if isinstance(p, str))
    since = (ctx.now.date() - timedelta(days=ctx.policy.recent_days)).isoformat()
    return [e.content for e in md.parse(text) if e.content.strip() in pinned or (e.date and e.date >= since)]


def fact_kept(entry: str, new_text: str, new_terms: set[str]) -> bool:
    """Every number and date of ``entry`` and most of its words are in the new file."""
    if any(n not in new_text for n in _NUMBER.findall(entry)):
        return False
    words = set(terms(entry))
    return not words or len(words & new_terms) / len(words) >= TERMS_KEPT


def validate(old: str, new: str, protected: list[str]) -> str | None:
    """What is wrong with a compressed file (None: it may be written)."""
    if not new.strip():
        return "the compressed file is empty"
    if not md.parse(new):
        return "the compressed file holds no memories"
    before, after = len(clean_memory_file(old)), len(clean_memory_file(new))
    if after >= before:
        return f"the compressed file is not shorter ({after} characters, was {before})"
    have = {md.section_key(h) for h in _H2.findall(new)}
    lost = [h for h in _H2.findall(old) if md.section_key(h) not in have]
    if lost:
        return f"the compressed file lost the section {lost[0]!r}"
    kind = find_secret(new)
    if kind:
        return f"the compressed file contains {a_kind(kind)}"
    new_terms = set(terms(new))
    for p in protected:
        if not fact_kept(p, new, new_terms):
            return f"the compressed file lost the facts of a pinned or recent memory: {p[:80]!r}"
    return None


def keep_ids(old: str, new: str) -> str:
    """Bullets of ``new`` with the words of a bullet of ``old`` get that bullet's lines (id and meta)."""
    old_lines = old.split("\n")
    by_words = {" ".join(e.content.casefold().split()): e for e in md.parse(old)
                if "<!-- mf:" in "\n".join(old_lines[e.start: e.end])}
    out = new
    new_lines = new.split("\n")
    for e in sorted(md.parse(new), key=lambda e: e.start, reverse=True):
        twin = by_words.get(" ".join(e.content.casefold().split()))
        if twin is not None and "<!-- mf:" not in "\n".join(new_lines[e.start: e.end]):
            out = md.replace_entry(out, e, old_lines[twin.start: twin.end])
    return out


def compress_with_llm(ctx: JobContext, text: str) -> str:
    """The validated compressed file, or JobFailed saying why not."""
    protected = protected_entries(ctx, text)
    lang = ctx.language if ctx.language in prompts.LANGUAGES else "en"
    thr = ctx.policy.long_term_compress_char_threshold
    target = max(200, min(thr, int(len(text) * KEEP_SHARE)))
    keep = "\n".join(f"  - {p}" for p in protected) or ("  - （无）" if lang == "zh" else "  - (none)")
    messages = [{"role": "system", "content": prompts.render("system", lang)},
                {"role": "user", "content": prompts.render("compress_memory", lang, chars=len(text), target=target,
                                                           keep=keep, memory=clean_memory_file(text))}]
    calls = ctx.calls()
    assert calls is not None
    try:
        try:
            answer = calls.complete(messages, purpose="compress_long_term", json_schema=SCHEMA).text
        except ProviderError as exc:
            raise JobFailed(f"the LLM call failed ({exc}); MEMORY.md is unchanged") from exc
        try:
            data = parse_json_answer(answer)
            new = data.get("memory_md") if isinstance(data, dict) else None
            if not isinstance(new, str):
                raise ValueError("no memory_md text in the answer")
        except ValueError as exc:
            calls.failed()
            raise JobFailed(f"the LLM answer was unusable ({exc}); MEMORY.md is unchanged") from exc
        new = new.replace("\r\n", "\n").strip() + "\n"
        problem = validate(text, new, protected)
        if problem:
            calls.failed()
            raise JobFailed(f"{problem}; MEMORY.md is unchanged")
        return keep_ids(text, new)
    finally:
        record_usage(ctx.store.index, ctx.user_id, "maintain", calls, lock=ctx.store.space.lock)


def write_compressed(ctx: JobContext, text: str, new: str, job: str) -> list[str]:
    """Replace MEMORY.md (backup first) if it is still ``text``; archive the entries that left it and
    index the new ones. Returns the archived ids."""
    st = ctx.store
    with st.space.lock:
        st.sync()
        if ctx.memory_text() != text:
            raise JobFailed("MEMORY.md changed while it was being compressed; nothing was changed and the job "
                            "runs again next time")
        rows = st.index.list_records(ctx.user_id, file=FILE_MEMORY)

        def change(current: str) -> str:
            if current != text:
                raise JobFailed("MEMORY.md changed while it was being compressed; nothing was changed")
            return new

        gone: list[MemoryRecord] = []

        def write_index() -> None:
            ids = {e.id for e in md.parse(ctx.memory_text())}
            gone.extend(r for r in rows if r.id not in ids)
            now = utcnow()
            st.index.upsert([IndexItem(record=r.with_(is_active=False, updated_at=now)) for r in gone])
            backups = st.space.backups()
            st.index.append_history([HistoryEntry(r.id, ctx.user_id, "archive", now, r.content, None,
                                                  {"by": job, "file": FILE_MEMORY, "superseded_by": None,
                                                   "backup": backups[-1].name if backups else None})
                                     for r in gone])
            st.reconcile_file(FILE_MEMORY)  # the new bullets get ids and rows

        st.commit({FILE_MEMORY: change}, write_index)  # the file put back when the index refuses
    return [r.id for r in gone]


class LongTermCompression:
    name = "compress_long_term"

    def run(self, ctx: JobContext) -> JobResult:
        thr = ctx.policy.long_term_compress_char_threshold
        text = ctx.memory_text()
        n = len(text)
        if thr <= 0:
            return ctx.result(self.name, NOT_DUE, "off (long_term_compress_char_threshold is 0)")
        if n <= thr:
            return ctx.result(self.name, NOT_DUE, f"MEMORY.md has {n} characters, not over {thr}")
        last = ctx.last_run(self.name)
        if last is not None and not ctx.force and ctx.now - last < INTERVAL:
            return ctx.result(self.name, NOT_DUE, f"ran at {last.isoformat()}; next run after "
                                                  f"{(last + INTERVAL).isoformat()} (or --force)")
        if ctx.chat is None:
            return self._tidy(ctx, n)
        if ctx.dry_run:
            return ctx.result(self.name, PLANNED, f"would compress MEMORY.md ({n} characters, over {thr}) with the LLM",
                              chars_before=n, details={"protected": len(protected_entries(ctx, text))})
        new = compress_with_llm(ctx, text)
        archived = write_compressed(ctx, text, new, self.name)
        after = len(ctx.memory_text())
        log.info("compressed MEMORY.md of %s: %d -> %d characters", ctx.user_id, n, after)
        return ctx.result(self.name, DONE, f"compressed with the LLM (over {thr})", archived=archived,
                          chars_before=n, chars_after=after)

    def _tidy(self, ctx: JobContext, n: int) -> JobResult:
        p = tidy.plan(ctx)
        if not p.changes:
            return ctx.result(self.name, NOTHING, "no LLM configured and nothing to tidy", chars_before=n, chars_after=n)
        est = n - sum(len(a.record.content) + 40 for a in p.changes.archive if a.record.file == FILE_MEMORY)
        if ctx.dry_run:
            return ctx.result(self.name, PLANNED, "no LLM: would tidy MEMORY.md deterministically",
                              archived=[a.record.id for a in p.changes.archive], chars_before=n, chars_after=max(0, est),
                              changes=p.shown)
        tidy.apply_plan(ctx, p, self.name)
        return ctx.result(self.name, DONE, "no LLM: tidied deterministically", archived=[a.record.id for a in p.changes.archive],
                          created=[r.id for r in p.changes.add], chars_before=n, chars_after=len(ctx.memory_text()),
                          changes=p.shown)
