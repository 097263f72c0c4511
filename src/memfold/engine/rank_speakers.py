"""Speaker-aware query vector (issue 16, session 6), a policy key (``query_speaker_mask``, 0 = off).

A question about one speaker of a conversation ("What activities does Melanie partake in?") names
them, but the turns that answer it are that speaker's own, which rarely say their own name; the
name is in the turns of the *other* speaker, who addresses them ("Wow, Melanie! What made you try
pottery?"), and in greetings. Embedded with the name, the question's vector pulls those turns up.
Who is asked about is already known to the ranking (``score_bonus_speaker`` lifts the named
speaker's turns), so with this key on the vector side embeds the question with each named speaker
replaced by "they" ("What activities does they partake in?"): the vector looks for the *what*, the
speaker bonus for the *who*. The keyword side keeps the name (measured: dropping it there changes
nothing).

Which names are speakers is read from the keyword candidates (fetched before the vector search,
and reused afterwards): a speaker named by the query holds the name in its turns' indexed text (a
turn's context carries its speaker), so its turns are among them. They are read early only when the
query has a capitalised word that does not open a sentence (``may_name_someone``): other queries
keep the read path as it was (on PostgreSQL the early read is a round trip of its own). Nothing is
embedded twice: the masked question replaces the question on the vector side. Names are matched as
whole words, so a name inside Chinese text (no spaces) is not masked."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..models import MemoryRecord
from ..policy import Policy
from ..text.terms import terms

MASK_WORD = "they"  # the first and only replacement chosen before measuring (docs/benchmarks.md)


@lru_cache(maxsize=4096)
def name_terms(name: str) -> frozenset[str]:
    """A speaker's name as terms (a conversation's few names come back with every candidate)."""
    return frozenset(terms(name))


def named_speakers(records: Iterable[MemoryRecord], qterms: set[str]) -> list[str]:
    """The speakers of ``records`` whose whole name (as terms) the query holds, longest first."""
    names: set[str] = set()
    seen: set[str] = set()
    for r in records:
        speaker = r.structured_data.get("speaker")
        if isinstance(speaker, str) and speaker not in seen:
            seen.add(speaker)
            held = name_terms(speaker)
            if held and held <= qterms:
                names.add(speaker)
    return sorted(names, key=lambda n: (-len(n), n))


def masked_query(query: str, names: Iterable[str]) -> str:
    """``query`` with each name (a whole word, any case, with a possessive 's) replaced by ``MASK_WORD``."""
    for name in names:
        words = r"\s+".join(re.escape(w) for w in name.split())
        query = re.sub(rf"(?<!\w){words}(?:['’]s)?(?!\w)", MASK_WORD, query, flags=re.IGNORECASE)
    return query


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_OPENERS = set(".!?:\n\"'“‘(<>")  # a capitalised word after one of these may just open a sentence or a line


def may_name_someone(query: str) -> bool:
    """A capitalised word that does not open the text, a sentence or a line (and is not "I"): a name
    may be in the query. Without one no candidate row is read early (a query in lower case is not masked)."""
    for m in _WORD.finditer(query):
        w = m.group()
        if not w[0].isupper() or w == "I":
            continue
        before = query[max(0, m.start() - 8): m.start()].rstrip(" \t")
        if before and before[-1] not in _OPENERS:
            return True
    return False


def vector_side_query(query: str, qterms: set[str], candidates: Iterable[MemoryRecord], pol: Policy) -> str:
    """The text the vector side embeds: the query, with the speakers it names masked when the key is on."""
    if pol.query_speaker_mask <= 0 or not qterms:
        return query
    names = named_speakers(candidates, qterms)
    return masked_query(query, names) if names else query
