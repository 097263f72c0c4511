"""What a conversation turn is beside the memories extracted from it (docs/turns-and-memories.md).

A user turn is kept in the index as it was said (``file`` ''); the memories the rules or the LLM
extract from it are bullets of ``MEMORY.md`` that list the turn's key (its first source id) among
their ``source_ids``. A listing or a search shows each fact once: a turn stands for itself only
while no memory taken from it is shown, and near-identical texts (``same_text``) count once.
In a search, one turn takes one place among the results first: the further memories taken
from the same turn follow the results from other turns (``one_place_per_turn``)."""

from __future__ import annotations

import re

from ...filters import Filter
from ...index.base import RecordStore
from ...models import EPISODIC, FILE_LEARNINGS, FILE_MEMORY, MemoryRecord

_WORDS = re.compile(r"\w+")
BATCH = 500  # rows a listing reads at a time while it skips the turns its memories stand for


def same_text(text: str) -> str:
    """A text as near-identical copies share it: its words, case folded, without punctuation and spacing."""
    return " ".join(_WORDS.findall(text.casefold()))


def one_place_per_turn(records: list[MemoryRecord]) -> list[int]:
    """The order (positions into ``records``, ranked best first) in which a memory taken from the
    same single turn as a memory placed before it follows every result from elsewhere: one long
    turn the rules split into several memories ("I usually wake up at 7:15 on weekdays. On
    weekends I'd like to wake up at 8") does not fill the first places alone. Memories of several
    turns (an LLM's extraction from a whole conversation, a memory said again) and turns keep
    their place; so does every record when no turn gave two."""
    seen: set[str] = set()
    first: list[int] = []
    later: list[int] = []
    for i, r in enumerate(records):
        if r.file != EPISODIC and r.is_active and len(r.source_ids) == 1:
            if r.source_ids[0] in seen:
                later.append(i)
                continue
            seen.add(r.source_ids[0])
        first.append(i)
    return first + later


def one_fact_once(index: RecordStore, user_id: str, *, active_only: bool, memory_type: str | None,
                  limit: int | None, offset: int, where_filter: Filter | None = None) -> list[MemoryRecord]:
    """A namespace's rows as ``list_records`` gives them, without the turns a memory of the
    memory files stands for (extracted from the turn, or the same words) and without a turn that
    repeats one listed before it; ``limit`` and ``offset`` count the rows shown (``where_filter``:
    only the rows that match it are listed; the memories that stand for turns are all of them)."""
    memories = [r for f in (FILE_MEMORY, FILE_LEARNINGS) for r in index.list_records(user_id, file=f)]
    keys = {sid for r in memories for sid in r.source_ids}
    texts = {same_text(r.content) for r in memories}
    seen: set[str] = set()  # the words of the turns listed so far (bounded by the rows read)
    out: list[MemoryRecord] = []
    skip = offset
    pos = 0
    while True:
        rows = index.list_records(user_id, active_only=active_only, memory_type=memory_type, limit=BATCH, offset=pos,
                                  where_filter=where_filter)
        pos += len(rows)
        for r in rows:
            if r.file == EPISODIC and r.is_active:
                words = same_text(r.content)
                if (r.turn_key is not None and r.turn_key in keys) or words in texts or words in seen:
                    continue
                seen.add(words)
            if skip > 0:
                skip -= 1
                continue
            out.append(r)
            if limit is not None and len(out) >= limit:
                return out
        if len(rows) < BATCH:
            return out
