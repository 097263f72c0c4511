"""Session context for the read path (issue 16): a conversation turn's similarity gains from the
other candidates of its session and from its neighbouring turns.

Episodic turns stored by one ``add`` call share their session: the same time stamp (the messages'
date, else the moment of the call) and session id. Each turn also names the turns stored just
before and after it in the same call (``structured_data["prev"]`` / ``["next"]``, record ids; set
by ``link_turns`` at write time). Two query-aware bonuses, both policy keys (0 turns them off):

- ``score_weight_session``: + weight × the best fused score among the *other* candidates of the
  same session — a turn in a session that matches the query elsewhere moves up (multi-hop and
  multi-session questions have their evidence spread over a session's turns);
- ``score_weight_neighbour``: the turns just before and after one of the ``NEIGHBOUR_OF_BEST``
  best candidates gain weight × that candidate's fused score; they join the candidates (one read
  by id), so the turn next to a strong match is found even when its own words and vector missed
  the query. Only the best few: lifting the neighbours of every top-``k`` hit pushed other
  sessions' evidence out (LongMemEval multi-session questions).

Both are bounded by the candidate set (at most 6 extra rows read by primary key).
Measured on the three development sets (docs/benchmarks.md, "Issue 16, session context"): the
neighbour bonus survives the cross-validation rule (on by default, 0.2); the session bonus does
not (off).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, MutableMapping, Sequence

from ..models import EPISODIC, MemoryRecord
from ..policy import Policy
from .store import UserStore

LINKS = ("prev", "next")
NEIGHBOUR_OF_BEST = 3  # whose neighbours gain: the best candidates by fused score (more crowd out other sessions)


def link_turns(turns: Sequence[MemoryRecord]) -> None:
    """Record in each turn the ids of the turns stored just before and after it (same ``add`` call)."""
    for before, after in zip(turns, turns[1:]):
        before.structured_data["next"] = after.id
        after.structured_data["prev"] = before.id


def session_key(r: MemoryRecord) -> tuple[str, str] | None:
    """The session an episodic turn belongs to (its session id and time stamp); None for other memories."""
    if r.file != EPISODIC:
        return None
    return (r.source_session_id or "", r.created_at.isoformat())


def neighbours(r: MemoryRecord) -> list[str]:
    if r.file != EPISODIC:
        return []
    return [v for k in LINKS if isinstance(v := r.structured_data.get(k), str)]


def best_candidates(fused: Mapping[str, tuple[float, float, float]], records: Mapping[str, MemoryRecord]
                    ) -> list[str]:
    """The ``NEIGHBOUR_OF_BEST`` candidates with the highest fused scores (above 0)."""
    ranked = sorted((m for m in fused if m in records and fused[m][0] > 0), key=lambda m: (-fused[m][0], m))
    return ranked[:NEIGHBOUR_OF_BEST]


def add_neighbours(fused: MutableMapping[str, tuple[float, float, float]], records: MutableMapping[str, MemoryRecord],
                   store: UserStore, user_id: str, pol: Policy) -> None:
    """With ``score_weight_neighbour`` on, the neighbours of the best candidates that are not
    candidates yet join them (fused score 0: only the neighbour bonus lifts them); one read by id."""
    if pol.score_weight_neighbour <= 0:
        return
    best = best_candidates(fused, records)
    missing = list(dict.fromkeys(n for mid in best for n in neighbours(records[mid]) if n not in fused))
    for r in store.index.get(user_id, missing) if missing else []:
        records[r.id] = r
        fused[r.id] = (0.0, 0.0, 0.0)


def context_bonus(fused: Mapping[str, tuple[float, float, float]], records: Mapping[str, MemoryRecord],
                  pol: Policy) -> dict[str, float]:
    """id -> similarity bonus from the candidate's session and neighbours (empty when both weights are 0)."""
    ws, wn = pol.score_weight_session, pol.score_weight_neighbour
    if ws <= 0 and wn <= 0:
        return {}
    out: dict[str, float] = defaultdict(float)
    if ws > 0:
        sessions: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
        for mid, (sim, _, _) in fused.items():
            r = records.get(mid)
            key = session_key(r) if r is not None else None
            if key is not None:
                sessions[key].append((sim, mid))
        for members in sessions.values():
            if len(members) < 2:
                continue
            (s1, m1), (s2, _) = sorted(members, reverse=True)[:2]
            for _, mid in members:  # the best other member: the first, unless that is this one
                out[mid] += ws * (s2 if mid == m1 else s1)
    if wn > 0:  # each neighbour of a best candidate: + wn × that candidate's fused score (the largest)
        lift: dict[str, float] = {}
        for src in best_candidates(fused, records):
            for n in neighbours(records[src]):
                if n in fused:
                    lift[n] = max(lift.get(n, 0.0), wn * fused[src][0])
        for n, v in lift.items():
            out[n] += v
    return dict(out)
