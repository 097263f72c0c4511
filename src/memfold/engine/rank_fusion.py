"""Fusion-side adjustments of one search (issue 16, item 3), two policy keys, 0 = off.

``score_bonus_coverage``: a candidate gains this × the share of the query's distinct terms its
indexed text holds (``relevance.coverage``: matched / (terms + 1), the same signal the relevance
floor uses). BM25 scaled by the best candidate's score says which memory matches the query's
words best, not how many of them it holds: a memory holding every word of a question and one
repeating a single rare word can score alike. The counts come from the index's stored terms
(``terms_held``, SQLite) or, for rows it does not know, from the text.

``fusion_confidence``: how much the keyword side weighs in this search's fusion.

Each side's confidence is how far its best candidate stands above the rest of the first page
(``PAGE`` candidates), on the scale the fusion uses for that side: for BM25 (scaled by its
maximum) ``(s1 - mean(s2..sPAGE)) / s1``; for the cosines (min-max scaled over the side's
candidates) ``(c1 - mean(c2..cPAGE)) / (c1 - c_min)``. A side that singles one memory out is
trusted more than one whose scores are flat (a long conversation excerpt matches many memories
by a few common words, a vague query embeds near many memories). The keyword weight of that
search is ``fusion_keyword_weight + fusion_confidence × (keyword confidence − vector
confidence)``, kept inside [``MIN_WEIGHT``, ``MAX_WEIGHT``] so neither side is ever dropped.

Work: a mean over at most ``PAGE`` scores per side, nothing read from the index."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..models import MemoryRecord
from ..policy import Policy
from .records import index_text
from .relevance import coverage, terms_held

PAGE = 10  # candidates of a side its best one is compared with
MIN_WEIGHT, MAX_WEIGHT = 0.1, 0.9

Ranked = Sequence[tuple[str, float]]


def keyword_confidence(keyword: Ranked) -> float:
    """How far the best BM25 score stands above the next ones, as a share of it (0 with < 2 candidates)."""
    top = sorted((s for _, s in keyword), reverse=True)[:PAGE]
    if len(top) < 2 or top[0] <= 0:
        return 0.0
    return (top[0] - sum(top[1:]) / (len(top) - 1)) / top[0]


def vector_confidence(vector: Ranked) -> float:
    """How far the best cosine stands above the next ones, on the min-max scale of all the side's candidates."""
    scores = sorted((s for _, s in vector), reverse=True)
    if len(scores) < 2:
        return 0.0
    span = scores[0] - scores[-1]
    if span <= 1e-9:
        return 0.0
    top = scores[:PAGE]
    return (top[0] - sum(top[1:]) / (len(top) - 1)) / span


def fusion_weight(keyword: Ranked, vector: Ranked, pol: Policy) -> float:
    """The keyword side's share in this search's fusion (``fusion_keyword_weight`` when the key is off
    or a side has no candidates)."""
    base = pol.fusion_keyword_weight
    if pol.fusion_confidence <= 0 or not keyword or not vector:
        return base
    shifted = base + pol.fusion_confidence * (keyword_confidence(keyword) - vector_confidence(vector))
    return min(MAX_WEIGHT, max(MIN_WEIGHT, shifted))


def coverage_bonuses(index: Any, user_id: str, records: Mapping[str, MemoryRecord], qterms: Collection[str],
                     pol: Policy) -> dict[str, float]:
    """id -> ``score_bonus_coverage`` × the query-term coverage of that candidate (empty when off)."""
    if pol.score_bonus_coverage <= 0 or not qterms or not records:
        return {}
    held = terms_held(index, user_id, list(records), qterms)
    return {mid: pol.score_bonus_coverage * coverage(qterms, index_text(r), held.get(mid))
            for mid, r in records.items()}
