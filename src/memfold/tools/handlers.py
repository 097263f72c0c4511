"""What each tool does: a handler takes the ``Memory`` facade, the validated input model and the
caller's namespace, and returns the result model. Errors are raised as ``memfold.errors`` and
turned into error results by ``dispatch.call``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..engine.storage.guard import screen_text
from ..errors import InvalidInputError, NotFoundError, PathRefusedError, TextMatchError
from ..facade.memory import Memory
from ..facade.relations import related
from ..limits import MAX_TOOL_RESULTS, WRITE_LINES, over
from ..models import FILE_MEMORY, AddResult
from ..text.memory_markdown import DEFAULT_TYPE_OF_SECTION, HEADINGS, parse
from ..text.skills import parse as parse_skill
from .models import (
    EditResult,
    ForgetResult,
    MemoryAppendInput,
    MemoryEditInput,
    MemoryForgetInput,
    MemoryItem,
    MemoryReadInput,
    MemoryRelateInput,
    MemorySearchInput,
    ReadResult,
    RelatedItem,
    RelateResult,
    SaveMemoryInput,
    SearchItem,
    SearchResult,
    SkillResult,
    SkillSuccessInput,
    StoredResult,
    WriteFileInput,
)

_SECTION_OF_HEADING = {h.casefold(): key for lang in HEADINGS.values() for key, h in lang.items()}
_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2})?\s*[:：]\s*")
_COMMENT = re.compile(r"<!--.*?-->")


def _line_text(line: str) -> str:
    """A line's words without comments, bullet marker and leading date, spaces collapsed."""
    return " ".join(_DATE.sub("", _BULLET.sub("", _COMMENT.sub("", line).strip())).split())


@dataclass(frozen=True)
class ToolContext:
    """Whose memory a call reads and writes: the namespace, and the agent a saved memory is pinned to."""

    user_id: str = "default"
    agent_id: str | None = None


def _stored(res: AddResult, slot: str = "long_term") -> StoredResult:
    notes = [*res.skipped, *res.refused, *res.redacted, *res.warnings]
    return StoredResult(stored=[MemoryItem.of(r) for r in res.added], merged=[MemoryItem.of(r) for r in res.merged],
                        completed=[MemoryItem.of(r) for r in res.completed], slot=slot, notes=notes)


def memory_search(m: Memory, a: MemorySearchInput, ctx: ToolContext) -> SearchResult:
    hits = m.search(a.query, ctx.user_id, limit=a.limit, memory_type=a.memory_type)
    return SearchResult(results=[SearchItem.hit(h) for h in hits])


def memory_append(m: Memory, a: MemoryAppendInput, ctx: ToolContext) -> StoredResult:
    if a.slot == "today":
        return StoredResult(stored=[MemoryItem.of(m.add_note(a.content, ctx.user_id))], slot="today")
    return _stored(m.add(a.content, ctx.user_id, memory_type=a.memory_type, importance=a.importance,
                         agent_id=ctx.agent_id))


_SKILL_FIELDS = ("when_to_use", "steps", "tools", "outcome")


def save_memory(m: Memory, a: SaveMemoryInput, ctx: ToolContext) -> StoredResult:
    if a.memory_type == "skill":
        return _stored(m.add_skill(a.content, ctx.user_id, when_to_use=a.when_to_use, steps=a.steps, tools=a.tools,
                                   outcome=a.outcome, importance=a.importance, agent_id=ctx.agent_id))
    given = [f for f in _SKILL_FIELDS if getattr(a, f) is not None]
    if given:
        raise InvalidInputError(f"{', '.join(given)}: only a skill has these; set memory_type to 'skill' or leave "
                                "them out")
    return _stored(m.add(a.content, ctx.user_id, memory_type=a.memory_type, importance=a.importance,
                         agent_id=ctx.agent_id))


def skill_success(m: Memory, a: SkillSuccessInput, ctx: ToolContext) -> SkillResult:
    r = m.skill_succeeded(a.memory_id, ctx.user_id)
    s = parse_skill(r.content)
    return SkillResult(id=r.id, name=s.name, successes=s.successes, last_success=s.last_success)


def memory_relate(m: Memory, a: MemoryRelateInput, ctx: ToolContext) -> RelateResult:
    out = RelateResult(memory_id=a.memory_id)
    if a.action in ("add", "remove") and not a.other_id:
        raise InvalidInputError(f"{a.action} needs other_id: the memory the relation is about")
    if a.action == "add":
        if a.relation is None:
            raise InvalidInputError("add needs relation: supports, contradicts, refines, duplicates or summarizes",
                                    field="relation")
        m.relate(a.memory_id, a.other_id or "", a.relation, ctx.user_id, strength=a.strength)
        out.added = True
    elif a.action == "remove":
        out.removed = m.unrelate(a.memory_id, a.other_id or "", a.relation, ctx.user_id)
    else:
        m.get(a.memory_id, ctx.user_id)  # a clear error for an id the namespace does not hold
    out.related = [RelatedItem(**r) for r in related(m.index, ctx.user_id, a.memory_id, MAX_TOOL_RESULTS)]
    return out


def memory_edit(m: Memory, a: MemoryEditInput, ctx: ToolContext) -> EditResult:
    done = m.edit_text(a.path, a.old_text, a.new_text, ctx.user_id, author="memory_edit")
    return EditResult(path=done.path, added=done.added, updated=done.updated, removed=done.removed,
                      redacted=done.redacted)


def memory_forget(m: Memory, a: MemoryForgetInput, ctx: ToolContext) -> ForgetResult:
    gone = m.forget(a.query_or_id, ctx.user_id, dry_run=a.dry_run)
    if not gone:
        raise TextMatchError(f"no memory matches {a.query_or_id!r}; nothing was deleted (search first, then "
                             "forget by id)", "no_match")
    return ForgetResult(dry_run=a.dry_run, forgotten=[MemoryItem.of(r) for r in gone])


def memory_read(m: Memory, a: MemoryReadInput, ctx: ToolContext) -> ReadResult:
    v = m.read_file(a.path, ctx.user_id, section=a.section)
    return ReadResult(path=v.path, exists=v.exists, section=v.section, text=v.text, truncated=v.truncated,
                      sections=v.sections)


def write_file(m: Memory, a: WriteFileInput, ctx: ToolContext) -> StoredResult:
    """A write of MEMORY.md is an append of its new lines, each stored as a memory in the
    memory format (typed by the section it was written under); nothing is overwritten."""
    raw = a.path.strip()
    parts = PurePosixPath(raw).parts
    if raw.startswith(("/", "\\", "~")) or "\\" in raw or ".." in parts:
        raise PathRefusedError(f"path {a.path!r} is refused: write_file writes only MEMORY.md of your memory folder")
    rel = "/".join(p for p in parts if p != ".")
    if rel not in (FILE_MEMORY, f"memory/{FILE_MEMORY}"):
        raise PathRefusedError(f"path {a.path!r} is refused: write_file writes only MEMORY.md (its new lines become "
                               "memories); use memory_edit to change a file, memory_append with slot 'today' for "
                               "today's note")
    m.read_file(FILE_MEMORY, ctx.user_id)  # refuses a MEMORY.md that is a symlink out of the folder
    try:
        existing = m.show(ctx.user_id)
    except NotFoundError:
        existing = ""
    known = {" ".join(e.content.split()) for e in parse(existing)}
    known |= {_line_text(line) for line in existing.splitlines()}  # the file's other lines, as written
    new: list[tuple[str, str | None]] = []
    section: str | None = None
    for line in a.content.splitlines():
        if _COMMENT.sub("", line).strip().startswith("#"):
            key = _SECTION_OF_HEADING.get(_COMMENT.sub("", line).strip().lstrip("#").strip().casefold())
            section = DEFAULT_TYPE_OF_SECTION[key].value if key else None
            continue
        flat = _line_text(line)
        if not flat or set(flat) <= set("-_*=") or (flat.startswith("_") and flat.endswith("_")) or flat in known:
            continue
        known.add(flat)
        new.append((flat, section))
    over(WRITE_LINES, len(new), "the new lines of write_file", hint="write the new lines only, in several calls")
    for text, _ in new:  # a line that is mostly a secret refuses the whole call before anything is stored
        screen_text(text, "a line of content")
    out = StoredResult(stored=[], redirected_to=FILE_MEMORY,
                       notes=[] if new else ["nothing new: every line is already in MEMORY.md"])
    for text, mtype in new:
        got = _stored(m.add(text, ctx.user_id, memory_type=mtype, agent_id=ctx.agent_id))
        out.stored.extend(got.stored)
        out.merged.extend(got.merged)
        out.completed.extend(got.completed)
        out.notes.extend(got.notes)
    return out
