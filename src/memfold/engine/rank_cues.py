"""Query cues for the read path (issue 16): time expressions and diversity.

Two policy keys, each 0 = off:

- ``score_bonus_time``: a memory dated (``created_at``, a turn's timestamp) inside a range the
  query's time expressions name ("last May", "two weeks ago", "上个月", resolved against the
  search's ``now`` by ``text/timeexpr.py``) gains this much similarity;
- ``diversity_weight``: the top of the list is re-picked greedily (maximal marginal relevance over
  the first ``3 × k`` hits): each next hit's score loses this much times its word overlap (Jaccard
  of terms) with the most similar hit already picked, so near-copies stop filling the list.

An entity bonus (the query's names and numbers held word for word) was measured and removed: it did
not survive cross-validation (docs/benchmarks.md, "Issue 16, query cues")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..models import MemoryRecord, SearchHit
from ..policy import Policy
from ..text.terms import terms
from ..text.timeexpr import DateRange, time_ranges


@dataclass(frozen=True)
class QueryCues:
    ranges: tuple[DateRange, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.ranges


def query_cues(query: str, now: datetime, pol: Policy) -> QueryCues:
    """What the query names, found only for the adjustments switched on."""
    return QueryCues(tuple(time_ranges(query, now.date())) if pol.score_bonus_time else ())


def cue_bonus(r: MemoryRecord, cues: QueryCues, pol: Policy) -> float:
    """The similarity a candidate gains from the query's dates."""
    if cues.ranges and any(r.created_at.date() in rg for rg in cues.ranges):
        return pol.score_bonus_time
    return 0.0


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def diversify(hits: list[SearchHit], k: int, weight: float) -> list[SearchHit]:
    """Maximal marginal relevance over the first ``3 k`` hits (best first); the rest keep their order.
    A hit's score is unchanged: only the order of the top moves."""
    if weight <= 0 or len(hits) < 2:
        return hits
    pool = hits[: 3 * k]
    words = [frozenset(terms(h.record.content)) for h in pool]
    overlap = [0.0] * len(pool)  # each candidate's largest overlap with a picked hit, kept up to date
    left = list(range(len(pool)))
    picked: list[int] = []
    while left and len(picked) < k:
        best = max(left, key=lambda i: (pool[i].score - weight * overlap[i], -i))
        picked.append(best)
        left.remove(best)
        for i in left:
            overlap[i] = max(overlap[i], _jaccard(words[i], words[best]))
    return [pool[i] for i in picked] + [pool[i] for i in sorted(left)] + hits[3 * k:]
