"""Query cues for the read path (issue 16): time expressions in the query.

A policy key, 0 = off:

- ``score_bonus_time``: a memory dated (``created_at``, a turn's timestamp) inside a range the
  query's time expressions name ("last May", "two weeks ago", "上个月", resolved against the
  search's ``now`` by ``text/timeexpr.py``) gains this much similarity.

An entity bonus (the query's names and numbers held word for word) and MMR diversity of the top
hits were measured and removed: they did not survive cross-validation together with the other
kept changes (docs/benchmarks.md, "Issue 16, query cues" and "all kept changes together")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...models import MemoryRecord
from ...policy import Policy
from ...text.timeexpr import DateRange, time_ranges


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

