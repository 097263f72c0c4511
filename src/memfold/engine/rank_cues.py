"""Query cues for the read path (issue 16): time expressions, named entities, diversity.

Three policy keys, each 0 = off:

- ``score_bonus_time``: a memory dated (``created_at``, a turn's timestamp) inside a range the
  query's time expressions name ("last May", "two weeks ago", "上个月", resolved against the
  search's ``now`` by ``text/timeexpr.py``) gains this much similarity;
- ``score_bonus_entity``: a memory holding the query's names and numbers word for word (capitalised
  words that are not question words, digits) gains this much times the share it holds; the
  memory's own speaker is left to ``score_bonus_speaker``;
- ``diversity_weight``: the top of the list is re-picked greedily (maximal marginal relevance over
  the first ``3 × k`` hits): each next hit's score loses this much times its word overlap (Jaccard
  of terms) with the most similar hit already picked, so near-copies stop filling the list."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from ..models import MemoryRecord, SearchHit
from ..policy import Policy
from ..text.terms import terms
from ..text.timeexpr import DateRange, time_ranges

# capitalised words that start questions or sentences, not names
NOT_NAMES = frozenset("""
a an and any are as at be but by can could did do does for from had has have he her hers him his how i if in
is it its me my no not of on or our she so that the their them then there these they this those to was we
were what when where which who whom whose why will with would you your yes ok okay also just please
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday today yesterday tomorrow last next
""".split())
_NAME = re.compile(r"\b[A-Z][\w'’-]*")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w.])")
MAX_ENTITIES = 12  # a pasted paragraph is not a list of names


@dataclass(frozen=True)
class QueryCues:
    ranges: tuple[DateRange, ...] = ()
    entities: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.ranges and not self.entities


def query_entities(query: str) -> tuple[str, ...]:
    """Names (capitalised words but question words, months, weekdays; possessive 's dropped) and
    numbers other than years, in the order met, each once."""
    out: list[str] = []
    for m in _NAME.finditer(query):
        word = re.sub(r"['’]s?$", "", m.group(0))
        if word.lower() not in NOT_NAMES and len(word) > 1 and word not in out:
            out.append(word)
    for m in _NUMBER.finditer(query):
        n = m.group(0)
        if not (len(n) == 4 and n[:2] in ("19", "20")) and n not in out:
            out.append(n)
    return tuple(out[:MAX_ENTITIES])


def query_cues(query: str, now: datetime, pol: Policy) -> QueryCues:
    """What the query names, found only for the adjustments switched on."""
    ranges = tuple(time_ranges(query, now.date())) if pol.score_bonus_time else ()
    entities = query_entities(query) if pol.score_bonus_entity else ()
    return QueryCues(ranges, entities)


def _holds(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


def cue_bonus(r: MemoryRecord, cues: QueryCues, pol: Policy) -> float:
    """The similarity a candidate gains from the query's dates and names."""
    if cues.empty:
        return 0.0
    delta = 0.0
    if cues.ranges and any(r.created_at.date() in rg for rg in cues.ranges):
        delta += pol.score_bonus_time
    if cues.entities:
        speaker = r.structured_data.get("speaker")
        names = [e for e in cues.entities if not (isinstance(speaker, str) and e.casefold() == speaker.casefold())]
        if names:
            delta += pol.score_bonus_entity * sum(_holds(r.content, e) for e in names) / len(names)
    return delta


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
