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
embedded twice: the masked question replaces the question on the vector side.

Names are matched as whole words, where a CJK character counts as a word boundary: Chinese and
Japanese are written without spaces, so "Melanie喜欢做什么？" and "小明喜欢做什么？" name Melanie and
小明. A CJK query is always read early (its names have no capitals to look for), and a name in or
next to CJK text is replaced by "TA" (the written gender-neutral third person of Chinese), not
"they" (session 7, issue 16)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ...models import MemoryRecord
from ...policy import Policy
from ...text.terms import CJK_RANGES, terms

MASK_WORD = "they"  # the first and only replacement chosen before measuring (docs/benchmarks.md)
MASK_WORD_CJK = "TA"  # the replacement in or next to CJK text (chosen before measuring; no such dev data)

_CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
# a name's edges: not inside a longer word, where a CJK character is a boundary (no spaces in CJK text)
_BEFORE = rf"(?<![^\W{CJK_RANGES}])"
_AFTER = rf"(?![^\W{CJK_RANGES}])"


@lru_cache(maxsize=4096)
def name_terms(name: str) -> frozenset[str]:
    """A speaker's name as terms (a conversation's few names come back with every candidate)."""
    return frozenset(terms(name))


def named_speakers(records: Iterable[MemoryRecord], qterms: set[str], query: str = "") -> list[str]:
    """The speakers of ``records`` whose whole name (as terms) the query holds, longest first. A name
    written in CJK characters is also named when ``query`` holds it as it is written (the query's
    terms leave out the bigrams of function characters, which a name such as 大为 may hold)."""
    names: set[str] = set()
    seen: set[str] = set()
    folded = query.casefold()
    for r in records:
        speaker = r.structured_data.get("speaker")
        if isinstance(speaker, str) and speaker not in seen:
            seen.add(speaker)
            held = name_terms(speaker)
            if (held and held <= qterms) or (folded and _CJK_CHAR.search(speaker) and speaker.casefold() in folded):
                names.add(speaker)
    return sorted(names, key=lambda n: (-len(n), n))


def _mask_for(m: re.Match[str]) -> str:
    """``MASK_WORD_CJK`` for a name in CJK script or written against CJK text, else ``MASK_WORD``."""
    text, a, b = m.string, m.start(), m.end()
    near = text[a - 1: a] + m.group() + text[b: b + 1]
    return MASK_WORD_CJK if _CJK_CHAR.search(near) else MASK_WORD


def masked_query(query: str, names: Iterable[str]) -> str:
    """``query`` with each name (a whole word, any case, with a possessive 's) replaced by ``MASK_WORD``
    (``MASK_WORD_CJK`` in or next to CJK text, where a CJK character is a word boundary)."""
    for name in names:
        words = r"\s+".join(re.escape(w) for w in name.split())
        query = re.sub(rf"{_BEFORE}{words}(?:['’]s)?{_AFTER}", _mask_for, query, flags=re.IGNORECASE)
    return query


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_OPENERS = set(".!?:\n\"'“‘(<>")  # a capitalised word after one of these may just open a sentence or a line


def may_name_someone(query: str) -> bool:
    """A capitalised word that does not open the text, a sentence or a line (and is not "I"), or any CJK
    character (CJK names have no capitals): a name may be in the query. Without one no candidate row is
    read early (a query in lower case is not masked)."""
    if not query.isascii() and _CJK_CHAR.search(query):  # isascii first: most queries, at C speed
        return True
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
    names = named_speakers(candidates, qterms, query)
    return masked_query(query, names) if names else query
