"""Per-session spread of the top hits (issue 16): a question whose answer is gathered over several
conversations ("how many model kits have I bought?", "how much did I raise for charity in total?")
needs one piece of evidence from each; the fused ranking instead fills the top with the follow-up
turns of the one or two sessions that match best, each of which repeats the topic without adding
a new piece.

A policy key, 0 = off (then the order is untouched):

- ``session_spread_weight``: the first ``SPREAD_DEPTH`` × k hits are re-listed greedily, each next
  one the hit with the best score minus ``w`` × the number of hits of its session already listed.
  A session is what groups conversation turns (``rank_sessions.group_key``: a shared
  ``session_id``, else one time stamp, i.e. one ``add`` call); a memory extracted from a turn
  carries the turn's session. Hits beyond the window keep their order after it.

The cost is a loop over at most ``SPREAD_DEPTH`` × k hits per listed hit (k = 10: 30 × 10 steps).
Measured in docs/benchmarks.md ("Issue 16, session 5: recall where it is lost")."""

from __future__ import annotations

from collections import Counter

from ..models import SearchHit
from ..policy import Policy
from .rank_sessions import group_key

SPREAD_DEPTH = 3  # hits re-listed: this many times the hits asked for


def session_of(h: SearchHit) -> str:
    r = h.record
    return group_key(r.source_session_id, r.created_at)


def spread_sessions(hits: list[SearchHit], k: int, pol: Policy) -> list[SearchHit]:
    """``hits`` (best first) with the first ``SPREAD_DEPTH`` × ``k`` re-listed so that a session's
    second, third … hit gives way to another session's unless it scores ``w`` per earlier hit more."""
    w = pol.session_spread_weight
    if w <= 0 or len(hits) < 2:
        return hits
    depth = max(k, 1) * SPREAD_DEPTH
    pool, rest = list(hits[:depth]), hits[depth:]
    sessions = [session_of(h) for h in pool]
    listed: Counter[str] = Counter()
    out: list[SearchHit] = []
    while pool:
        best = max(range(len(pool)), key=lambda i: (pool[i].score - w * listed[sessions[i]], -i))
        listed[sessions[best]] += 1
        out.append(pool.pop(best))
        sessions.pop(best)
    return out + rest
