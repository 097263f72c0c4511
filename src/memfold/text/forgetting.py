"""What a history entry keeps once a memory is deleted or forgotten ("deleted means deleted"):
the event (action, time, structural detail), never the words. Both index backends apply this
one rule to their history table (``Index.forget_text``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# detail keys of a history entry that name things (files, ids, rules, types), never memory words;
# every other key of a deleted memory's own entries ("query", "reason", "incoming", "new_content",
# and whatever comes later) is dropped with the words
STRUCTURAL_KEYS = frozenset({"file", "by", "type", "origin", "supersedes", "rule", "source_ids", "similar_to",
                             "action", "superseded_by", "moved", "request", "archived", "words_removed"})
MARK = "words_removed"
QUOTE_MIN = 6  # characters a deleted text needs to be looked for inside longer texts


def json_forms(texts: Sequence[str]) -> list[str]:
    """How each text appears inside a JSON document (escaped quotes, backslashes, newlines)."""
    return [json.dumps(t, ensure_ascii=False)[1:-1] for t in texts]


def quotes(value: str, text: str) -> bool:
    """``value`` quotes ``text``: it is the text, or holds it whole when it is long enough to mean
    something on its own (a deleted "ok" must not take the words of every history entry with "book")."""
    return value == text or (len(text) >= QUOTE_MIN and text in value)


def _quotes(value: Any, texts: Sequence[str]) -> bool:
    if isinstance(value, str):
        return any(quotes(value, t) for t in texts)
    if isinstance(value, dict):
        return any(_quotes(v, texts) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_quotes(v, texts) for v in value)
    return False


def scrub(own: bool, old: str | None, new: str | None, detail: dict[str, Any], texts: Sequence[str]
          ) -> tuple[str | None, str | None, dict[str, Any]]:
    """The (old_content, new_content, detail) an entry keeps. ``own``: the entry belongs to a
    deleted memory (all its words go); otherwise only the fields quoting one of ``texts`` go."""
    texts = [t for t in texts if t]
    old_in, new_in = old, new
    if own:
        kept = {k: v for k, v in detail.items() if k in STRUCTURAL_KEYS and not _quotes(v, texts)}
        old = new = None
    else:
        kept = {k: v for k, v in detail.items() if not _quotes(v, texts)}
        old = None if old is not None and _quotes(old, texts) else old
        new = None if new is not None and _quotes(new, texts) else new
        if len(kept) == len(detail) and (old, new) == (old_in, new_in):
            return old, new, detail  # quotes none of them: unchanged
    kept[MARK] = True
    return old, new, kept


def changes(rows: Sequence[tuple[Any, str, str | None, str | None, dict[str, Any]]], ids: Sequence[str],
            texts: Sequence[str]) -> list[tuple[str | None, str | None, str, Any]]:
    """For history rows ``(key, memory_id, old, new, detail)``, the updates ``(old, new, detail as
    JSON, key)`` that ``scrub`` asks for (rows it leaves unchanged are skipped)."""
    own = set(ids)
    out = []
    for key, mid, old, new, detail in rows:
        o2, n2, d2 = scrub(mid in own, old, new, detail, texts)
        if (o2, n2, d2) != (old, new, detail):
            out.append((o2, n2, json.dumps(d2, ensure_ascii=False), key))
    return out
