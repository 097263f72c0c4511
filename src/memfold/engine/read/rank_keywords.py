"""Keyword-side query shaping (issue 16): pseudo-relevance feedback (RM3-style), a policy key
(``keyword_feedback_weight``, 0 = off).

BM25 is a sum over query terms, so a term group's weight is applied by searching that group alone
and adding its scores scaled by the weight: ``score(d) = bm25(q, d) + w · bm25(q', d)``. The
feedback costs one extra keyword search; nothing in the index changes.

The first ``FEEDBACK_DOCS`` fused hits lend their most telling terms (frequent in them, rare among
the first ``FEEDBACK_POOL`` fused hits, not already asked) to one more keyword search with this
weight; the fusion is then redone with the expanded keyword scores. Only for a question (a query of
one line): a conversation excerpt is left as it is. Two other keyword-side options were measured and
removed because they did not survive cross-validation (docs/benchmarks.md, "Issue 16, keyword side
and fusion"): the last line of an excerpt searched again, and reciprocal-rank fusion."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import chain

from ...index.base import DocTerms, capability
from ...policy import Policy
from ...text.terms import terms
from ..storage.records import index_text
from ..storage.store import UserStore

FEEDBACK_DOCS = 3  # fused hits the expansion terms come from
FEEDBACK_TERMS = 10  # expansion terms added
FEEDBACK_POOL = 10  # fused hits whose terms give the document frequencies (the feedback idf)

Ranked = list[tuple[str, float]]


def add_scores(base: Ranked, extra: Ranked, weight: float) -> Ranked:
    """``base`` + ``weight`` × ``extra`` per id (an id missing from a list scores 0 there), best first;
    equal scores keep the lists' order (``base``'s, then ``extra``'s: the index's), never the ids'
    (random: the same data ingested twice would rank differently)."""
    out = dict(base)
    for mid, s in extra:
        out[mid] = out.get(mid, 0.0) + weight * s
    return sorted(out.items(), key=lambda x: -x[1])


def last_line_terms(query: str) -> list[str]:
    """The query terms of the last line that has any, when the query has at least two such lines."""
    split = query.splitlines()
    if len(split) < 2:  # a question of one line: nothing to tokenise
        return []
    lines = [t for t in (terms(ln, query=True) for ln in split) if t]
    return lines[-1] if len(lines) >= 2 else []


TermCounts = Mapping[str, int]


@lru_cache(maxsize=1024)
def _doc_terms(text: str) -> tuple[tuple[str, int], ...]:
    return tuple(Counter(terms(text)).items())


def doc_terms(text: str) -> dict[str, int]:
    """A memory's keyword terms with their counts; the same texts come back query after query (a
    bounded cache: 1,024 texts)."""
    return dict(_doc_terms(text))


def held_doc_terms(store: UserStore, user_id: str, ids: list[str]) -> dict[str, TermCounts]:
    """The keyword terms (with counts) of the rows ``ids`` that exist, in the order of ``ids``: from
    the index's in-process keyword index where it keeps one (SQLite; the terms stored when the row
    was written, so nothing is tokenised again and no row is read), else from the rows' indexed text."""
    fn = capability(store.index, DocTerms)
    held: dict[str, TermCounts] = dict(fn.doc_terms(user_id, ids)) if fn is not None else {}
    missing = [m for m in ids if m not in held]
    if missing:  # not keyword-searchable (archived rows), or a backend without the terms in process
        held.update((r.id, doc_terms(index_text(r))) for r in store.index.get(user_id, missing))
    return {m: held[m] for m in ids if m in held}


def feedback_terms(top: Sequence[TermCounts], pool: Sequence[TermCounts], asked: set[str], n: int) -> list[str]:
    """The ``n`` terms of the feedback documents ``top`` (best first; each its terms with their counts)
    that say most: each document's term share, weighted by its rank, times an idf over the candidate
    ``pool``; query terms excluded."""
    df: Counter[str] = Counter(chain.from_iterable(pool))  # a document holds a term once
    size = max(len(pool), 1)
    idf = {d: math.log1p(size / d) for d in {1, *df.values()}}  # a pool of ~10: a few distinct values
    weight: dict[str, float] = {}
    get = weight.get
    for rank, doc in enumerate(top, 1):
        if not doc:
            continue
        length = sum(doc.values())
        for t, c in doc.items():
            if t in asked or len(t) < 2:
                continue
            weight[t] = get(t, 0.0) + (c / length) / rank * idf[df.get(t, 1)]
    return [t for _, t in sorted([(-w, t) for t, w in weight.items()])[:n]]


def with_feedback(store: UserStore, user_id: str, query: str, qterms: list[str], keyword: Ranked,
                  fused: dict[str, tuple[float, float, float]], want: int, pol: Policy) -> Ranked:
    """The keyword candidates expanded by the feedback terms of the best fused hits (unchanged when
    off, and for a conversation excerpt: its many lines already say what a question's few words do not)."""
    if pol.keyword_feedback_weight <= 0 or not fused or last_line_terms(query):
        return keyword
    order = sorted(fused, key=lambda m: -fused[m][0])[:FEEDBACK_POOL]  # ties: fuse's order, not the random ids
    docs = held_doc_terms(store, user_id, order)
    top = [docs[m] for m in order if m in docs][:FEEDBACK_DOCS]
    extra = feedback_terms(top, list(docs.values()), set(qterms), FEEDBACK_TERMS)
    if not extra:
        return keyword
    found = store.index.keyword_search(user_id, extra, want)
    return add_scores(keyword, found, pol.keyword_feedback_weight)[: max(want, len(keyword))]

