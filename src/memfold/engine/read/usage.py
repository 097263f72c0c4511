"""The usage record: what each search asked (its query, redacted as everything memfold stores),
when, and which memories it returned. Bounded per namespace by ``usage_max_entries`` and
``usage_max_age_days``; an entry goes with any memory it names when that memory is deleted or
forgotten (``purge.py``). It answers which memories are used most and which questions found nothing."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ...errors import MemoryIndexError
from ...index.base import Index
from ...policy import Policy
from ...text.secrets import redact

log = logging.getLogger("memfold")

QUERY_KEPT = 500  # characters of a query the record keeps (a long one is a conversation excerpt)
SHOWN = 10  # most used memories and queries without results a report lists


def record(index: Index, pol: Policy, user_id: str, query: str, ids: Sequence[str], at: datetime) -> None:
    """Add one search to the namespace's usage record (nothing when ``usage_max_entries`` is 0).
    A failure to write it leaves the search's answer as it is."""
    if pol.usage_max_entries <= 0:
        return
    text = redact(" ".join(query.split()))[:QUERY_KEPT]
    since = at - timedelta(days=pol.usage_max_age_days) if pol.usage_max_age_days > 0 else None
    try:
        index.log_usage(user_id, at, text, list(ids), pol.usage_max_entries, since)
    except MemoryIndexError as exc:  # a full disk, a read-only file: the answer stands
        log.warning("search of %s: usage record not written: %s", user_id, exc)


def report(index: Index, pol: Policy, user_id: str, shown: int = SHOWN) -> dict[str, Any]:
    """The most used memories (how many recorded searches returned each, with its words) and the
    queries that found nothing (how often, and when last), from the whole record."""
    rows = index.usage(user_id, max(pol.usage_max_entries, 1))
    used = Counter(mid for r in rows for mid in dict.fromkeys(r["ids"]))
    empty: Counter[str] = Counter()
    last: dict[str, str] = {}
    for r in rows:
        if not r["ids"]:
            empty[r["query"]] += 1
            last.setdefault(r["query"], r["at"])  # rows come newest first
    top = used.most_common(shown)
    records = {r.id: r for r in index.get(user_id, [mid for mid, _ in top])}
    return {
        "searches": len(rows),
        "most_used": [{"id": mid, "count": n, "content": records[mid].content, "memory_type": records[mid].kind}
                      for mid, n in top if mid in records],
        "no_results": [{"query": q, "count": n, "last": last[q]} for q, n in empty.most_common(shown)],
    }
