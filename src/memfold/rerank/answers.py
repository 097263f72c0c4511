"""Strict checks of what a re-ranker or a query-rewriting model answered. Each check returns the
value to use or raises ``BadAnswer`` with the reason counted in the metrics (``malformed``,
``out_of_range``, ``duplicate``); nothing here guesses what a broken answer meant."""

from __future__ import annotations

import math
from typing import Any

from ..engine.llm.llm_calls import parse_json_answer

MAX_SUBQUERIES = 4  # sub-queries one question may be split into
MAX_SUBQUERY_CHARS = 300


class BadAnswer(ValueError):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def _index(value: Any, n: int, base: int) -> int:
    """A candidate's position (``base``: 1 for the numbers shown to an LLM, 0 for /rerank indexes)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadAnswer("malformed", f"{value!r} is not a candidate number")
    if not base <= value < n + base:
        raise BadAnswer("out_of_range", f"{value} is not between {base} and {n + base - 1}")
    return value - base


def complete_order(first: list[int], n: int) -> list[int]:
    """``first`` (distinct positions, best first), then the positions it left out in their incoming order."""
    seen = set(first)
    return first + [i for i in range(n) if i not in seen]


def llm_order(text: str, n: int) -> list[int]:
    """The order of ``n`` candidates in an LLM's answer ``{"ranking": [3, 1, 2]}`` (1-based numbers,
    distinct, at least one; the ones left out follow in the incoming order)."""
    try:
        data = parse_json_answer(text)
    except ValueError as exc:
        raise BadAnswer("malformed", str(exc)) from None
    ranking = data.get("ranking") if isinstance(data, dict) else data
    if not isinstance(ranking, list) or not ranking:
        raise BadAnswer("malformed", 'expected {"ranking": [candidate numbers]}')
    order = [_index(v, n, 1) for v in ranking]
    if len(set(order)) != len(order):
        raise BadAnswer("duplicate", "a candidate number is listed twice")
    return complete_order(order, n)


def endpoint_order(data: Any, n: int) -> list[int]:
    """The order of ``n`` documents in a ``/rerank`` answer ``{"results": [{"index", "relevance_score"}]}``
    (sorted by score, the server's order breaking ties; the documents left out follow in incoming order)."""
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        raise BadAnswer("malformed", 'expected {"results": [{"index", "relevance_score"}, ...]}')
    scored: list[tuple[float, int, int]] = []
    for at, r in enumerate(results):
        if not isinstance(r, dict):
            raise BadAnswer("malformed", "a result is not an object")
        score = r.get("relevance_score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise BadAnswer("malformed", f"relevance_score {score!r} is not a number")
        scored.append((-float(score), at, _index(r.get("index"), n, 0)))
    order = [i for _, _, i in sorted(scored)]
    if len(set(order)) != len(order):
        raise BadAnswer("duplicate", "a document index is listed twice")
    return complete_order(order, n)


def subqueries(text: str, query: str) -> list[str]:
    """The sub-queries of an LLM's answer ``{"queries": ["...", ...]}``: strings, at most
    ``MAX_SUBQUERIES``, each at most ``MAX_SUBQUERY_CHARS`` characters; ones equal to the question or
    to each other count once; an empty list means the question is asked as it is."""
    try:
        data = parse_json_answer(text)
    except ValueError as exc:
        raise BadAnswer("malformed", str(exc)) from None
    got = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(got, list):
        raise BadAnswer("malformed", 'expected {"queries": [strings]}')
    if len(got) > MAX_SUBQUERIES:
        raise BadAnswer("out_of_range", f"{len(got)} sub-queries, more than {MAX_SUBQUERIES}")
    out: list[str] = []
    seen = {" ".join(query.casefold().split())}
    for q in got:
        if not isinstance(q, str) or not q.strip():
            raise BadAnswer("malformed", f"sub-query {q!r} is not a non-empty string")
        if len(q) > MAX_SUBQUERY_CHARS:
            raise BadAnswer("out_of_range", f"a sub-query has {len(q)} characters, more than {MAX_SUBQUERY_CHARS}")
        key = " ".join(q.casefold().split())
        if key not in seen:
            seen.add(key)
            out.append(q.strip())
    return out
