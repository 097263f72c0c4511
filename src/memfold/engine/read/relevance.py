"""A calibrated relevance for search hits, and the floor (policy key ``min_score``) below which a
hit is not returned and not put into a context.

The ranking score is relative: keyword scores are divided by the best candidate's, cosines are
min-max scaled over the candidates, so the best hit of any query, "xyzzy" included, looks like a
match. Relevance is absolute, from two signals that do not depend on the other candidates:

- the raw cosine between the query and the memory, mapped linearly from a zero point to one
  ``COS_SPAN`` above it. The zero point is ``COS_ZERO_SHORT`` (random words against the bundled
  model's memories mostly sit below it) for queries of up to ``SHORT_TERMS`` terms and falls
  linearly to ``COS_ZERO_LONG`` at ``LONG_TERMS``: a long query (a conversation excerpt) spreads
  its vector over many topics, so even its true matches have low cosines (MADial's gold memories:
  median 0.29 against LoCoMo's 0.41);
- keyword coverage: the share of the query's terms (stop words dropped, CJK as bigrams) that the
  memory's indexed text holds, smoothed as matched / (terms + 1) so that one shared word of a
  one-word query gives 0.5 and of a long query little.

relevance = max(cosine part, coverage part), in [0, 1]. The constants were set on LoCoMo and
random-word queries and checked on all three development sets (``benchmarks/relevance_floor.py``,
docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ...index.base import TermsHeld, capability
from ...text.terms import terms

COS_ZERO_SHORT, COS_ZERO_LONG = 0.15, 0.05
SHORT_TERMS, LONG_TERMS = 4, 24
COS_SPAN = 0.5


def cosine_part(cosine: float, n_terms: int = 0) -> float:
    """The raw cosine on the 0–1 relevance scale, for a query of ``n_terms`` distinct terms."""
    share = min(1.0, max(0.0, (n_terms - SHORT_TERMS) / (LONG_TERMS - SHORT_TERMS)))
    zero = COS_ZERO_SHORT + (COS_ZERO_LONG - COS_ZERO_SHORT) * share
    return min(1.0, max(0.0, (cosine - zero) / COS_SPAN))


def coverage(qterms: Collection[str], text: str, held: int | None = None) -> float:
    """Share of the distinct query terms found among ``text``'s terms, smoothed for short queries:
    matched / (distinct terms + 1), so one word of a one-word query gives 0.5. ``held``: the number
    matched when the index already knows it (``terms_held``), so the text is not tokenised again."""
    q = set(qterms)
    if not q:
        return 0.0
    if held is None:
        held = len(q & set(terms(text)))
    return held / (len(q) + 1)


def relevance(cosine: float, qterms: Collection[str], text: str, held: int | None = None) -> float:
    """The calibrated relevance of a memory whose indexed text is ``text`` to a query (``held``: see ``coverage``)."""
    return max(cosine_part(cosine, len(set(qterms))), coverage(qterms, text, held))


def terms_held(index: Any, user_id: str, ids: Sequence[str], qterms: Collection[str]) -> dict[str, int]:
    """How many of the query's distinct terms each of ``ids`` holds, from the index's own keyword
    terms (the terms of the row's indexed text, stored when it was written) where the index keeps
    them in process (SQLite); rows it does not know (archived, another backend) are left out and
    ``coverage`` tokenises their text."""
    fn = capability(index, TermsHeld)
    if not qterms or not ids or fn is None:
        return {}
    return fn.terms_held(user_id, ids, list(qterms))
