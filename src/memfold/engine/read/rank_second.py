"""The second model's cosine as a third relevance signal (``[search] profile = "quality"``; policy
key ``e5_weight``, 0 = off).

A second embedding model (multilingual-e5-small) reads the words differently from the first (the
sentence encoder that finds the vector candidates): where the two disagree, their mix ranks better
than either (the search guide has the measurements). Its passage vectors are written after each
add by a background worker (``engine/write/vector_worker.py``), so adding costs nothing more; at
search time the query gets its vector of the second model and each candidate the keyword and
vector sides found is scored by the cosine of its stored one, scaled over the candidates that have
one (from the best down to ``MIN_SPAN`` below it, or the lowest when that is further) and mixed
in: ``fused' = (1 - w) · fused + w · cosine``. It only reorders the
candidates (no new ones). A candidate without its vector yet (added a moment ago) keeps its fused
score: it is scored by the signals it has."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ...policy import Policy
from ...providers.embedder import Embedder, embed_query

Fused = dict[str, tuple[float, float, float]]
# the scale of the cosines is at least this wide: the model's cosines of a search's candidates often lie
# within a few hundredths, and min-max scaling alone turned such noise into a full-weight signal
# (measured on the development sets: the search guide's table)
MIN_SPAN = 0.1


@dataclass(frozen=True)
class SecondModel:
    """The second embedding model of a ``Memory`` (its vectors are stored under ``embedder.name``)."""

    embedder: Embedder

    @property
    def name(self) -> str:
        return self.embedder.name

    def query_vector(self, query: str) -> np.ndarray:
        return embed_query(self.embedder, [query])[0]


def with_second(fused: Fused, query_vector: Callable[[], np.ndarray] | None,
                stored: Callable[[list[str]], Mapping[str, np.ndarray]], pol: Policy,
                memo: dict[str, float | None] | None = None) -> Fused:
    """``fused`` with each candidate's cosine to the query's vector of the second model
    (``query_vector``, asked only when a candidate has a stored vector: ``stored``, id -> vector of
    the ids that have one) mixed in by ``e5_weight``; unchanged at 0 or without ``query_vector``.
    ``memo``: cosines already read for this query (the fusion is redone after the keyword feedback);
    None marks a candidate without a vector."""
    w = pol.e5_weight
    if w <= 0 or query_vector is None or not fused:
        return fused
    memo = {} if memo is None else memo
    todo = [m for m in fused if m not in memo]
    if todo:
        got = stored(todo)
        qvec = query_vector() if got else None
        for m in todo:
            vec = got.get(m)
            memo[m] = float(np.dot(vec, qvec)) if vec is not None and qvec is not None and vec.shape == qvec.shape \
                else None
    have = {m: c for m in fused if (c := memo[m]) is not None}
    if not have:
        return fused
    hi = max(have.values())
    lo = min(min(have.values()), hi - MIN_SPAN)
    span = hi - lo
    out: Fused = {}
    for m, (f, k, v) in fused.items():
        c = have.get(m)
        out[m] = (f if c is None else (1.0 - w) * f + w * ((c - lo) / span if span > 1e-9 else 0.0), k, v)
    return out


def needed(second: SecondModel | None, pol: Policy) -> bool:
    return second is not None and pol.e5_weight > 0
