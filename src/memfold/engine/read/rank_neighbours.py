"""The neighbour signal of the read path: a turn is indexed with the turn before it (its context:
``<day> <previous turn>\\n<speaker>``), whose words help find it (an answer is found by the
question it answers) but must not steer the ranking.

- The neighbour's words are searched with the turn's own (keywords and vector): they find it.
- A turn *steered* by its neighbour (none of the query's words in its own, at least half of them
  in its neighbour's) never ranks above a result that says itself every query word the turn
  borrows: it moves below the last such result. A result holding only some of them (a greeting
  that shares one word of a question) does not say the thing; the turn keeps its place.
- The relevance floor counts a steered turn's borrowed words and its cosine (its vector carries
  the neighbour too) at ``NEIGHBOUR_WEIGHT``: a turn found only by what was said before it is not
  shown for a short query about something the turn itself does not say. A turn that replies to a
  question is the exception: it is found by the question it answers, and judged as any record.

A turn's own words are its text, its day and its speaker; the date in words and the speaker's
name are the turn's own (they say when and who), only the previous turn is borrowed."""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from ...models import EPISODIC, MemoryRecord
from ...text.terms import terms
from .relevance import cosine_part

# the day that starts a turn's context: "2023-05-08 May 2023" (the ISO day and the month in words)
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}(?: [^\W\d_]+ \d{4})?(?: |$)")
# what the relevance floor counts of a query word only the previous turn holds, against one of the
# turn's own: one borrowed word of a short query stays below the default floor
NEIGHBOUR_WEIGHT = 0.25
_SPEAKER = re.compile(r"^[^\s:][^:\n]{0,80}:$")  # "Name:" alone: who speaks, not a previous turn


def split_context(context: str) -> tuple[str, str]:
    """(the turn's own part of its context: day and speaker, the neighbour's words)."""
    lines = context.split("\n")
    head = lines[0]
    day = _DAY.match(head)
    own = head[: day.end()].strip() if day else ""
    rest = (head[day.end():] if day else head).strip()
    if len(lines) == 1 and _SPEAKER.match(rest):
        return " ".join(p for p in (own, rest) if p), ""
    return " ".join(p for p in (own, *(ln.strip() for ln in lines[1:])) if p), rest


@lru_cache(maxsize=8192)
def own_and_borrowed(content: str, context: str) -> tuple[frozenset[str], frozenset[str]]:
    """The terms of a record's own words, and the terms only its neighbour's words hold (kept for
    the texts of recent searches: a conversation's candidates come back query after query)."""
    own_ctx, neighbour = split_context(context) if context else ("", "")
    own = frozenset(terms(content)) | frozenset(terms(own_ctx) if own_ctx else ())
    return own, (frozenset(terms(neighbour)) - own if neighbour else frozenset())


def counts(r: MemoryRecord, qterms: Collection[str]) -> tuple[int, int]:
    """(query terms in the record's own words, query terms only in its neighbour's words)."""
    if not qterms:
        return 0, 0
    own, borrowed = own_and_borrowed(r.content, r.context if r.file == EPISODIC else "")
    q = qterms if isinstance(qterms, (set, frozenset)) else set(qterms)
    return len(own & q), len(borrowed & q)


def borrowed_only(r: MemoryRecord, qterms: Collection[str]) -> bool:
    """A turn steered by its neighbour: it holds none of the query's terms in its own words, and its
    neighbour's words hold at least half of them (one shared word of a long question does not make
    the neighbour decide; a short query's only word does)."""
    if r.file != EPISODIC or not r.context:
        return False
    o, b = counts(r, qterms)
    return o == 0 and b > 0 and 2 * b >= len(set(qterms))


def _query_terms(r: MemoryRecord, q: set[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(the query terms in a record's own words, the query terms only its neighbour's words hold)."""
    own, borrowed = own_and_borrowed(r.content, r.context if r.file == EPISODIC else "")
    return own & q, borrowed & q


def answers_a_question(r: MemoryRecord) -> bool:
    """A turn whose neighbour (the turn before it) asks a question: it is the reply."""
    neighbour = split_context(r.context)[1] if r.file == EPISODIC and r.context else ""
    return neighbour.rstrip().endswith(("?", "？"))


def own_words_first(records: list[MemoryRecord], qterms: Collection[str]) -> list[int]:
    """The order (positions into ``records``, ranked best first) in which no steered turn stands
    above a record that says in its own words every query term the turn borrows from its
    neighbour (the turn that says the thing itself); otherwise the ranking is kept. A record holding
    only some of them (a greeting that shares one word of a question) does not say the thing: the
    turn keeps its place above it."""
    if not qterms:
        return list(range(len(records)))
    q = set(qterms)
    below: dict[int, list[int]] = {}  # position -> the steered turns placed right after it
    moved: set[int] = set()
    held: list[frozenset[str]] | None = None
    for i, r in enumerate(records):
        if not borrowed_only(r, q):
            continue
        if held is None:
            held = [_query_terms(x, q)[0] for x in records]
        wanted = _query_terms(r, q)[1]
        last = next((j for j in range(len(records) - 1, i, -1) if wanted <= held[j]), -1)
        if last > i:
            below.setdefault(last, []).append(i)
            moved.add(i)
    if not moved:
        return list(range(len(records)))
    order: list[int] = []
    for i in range(len(records)):
        if i not in moved:
            order.append(i)
        order.extend(below.get(i, ()))
    return order


def turn_relevance(r: MemoryRecord, cosine: float, qterms: Collection[str], weight: float) -> float | None:
    """The calibrated relevance of a turn steered by its neighbour (``borrowed_only``; None for any
    other record: ``relevance.relevance`` applies): its borrowed query terms count ``weight`` of one
    of its own, and so does its cosine part (its vector carries the neighbour's words too). A turn
    that replies to a question (its neighbour asks one) is the answer to what the neighbour asked:
    it is judged like any other record."""
    if weight >= 1.0 or not borrowed_only(r, qterms) or answers_a_question(r):
        return None
    _, b = counts(r, qterms)
    q = len(set(qterms))
    return max(cosine_part(cosine, q) * weight, weight * b / (q + 1))
