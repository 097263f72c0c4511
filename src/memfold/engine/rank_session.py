"""Session context for the read path (issue 16): a conversation turn's similarity gains from the
other candidates of its session and from its neighbouring turns.

Episodic turns stored by one ``add`` call share their session: the same time stamp (the messages'
date, else the moment of the call) and session id. Each turn also names the turns stored just
before and after it in the same call (``structured_data["prev"]`` / ``["next"]``, record ids; set
by ``link_turns`` at write time). Two query-aware bonuses, both policy keys (0 turns them off):

- ``score_weight_session``: + weight × the best fused score among the *other* candidates of the
  same session — a turn in a session that matches the query elsewhere moves up (multi-hop and
  multi-session questions have their evidence spread over a session's turns);
- ``score_weight_neighbour``: + weight × the best fused score of the turn's neighbours (the
  turns just before and after it; with ``NEIGHBOUR_STEPS`` = 2 also two away, at half weight).
  The neighbours of the best ``k`` candidates join the candidates (one read by id per step), so
  the turn next to a matching one is found even when its own words and vector missed the query.

Both are bounded by the candidate set (at most ``2k`` extra rows read by primary key per step).
Measured on the three development sets (docs/benchmarks.md, "Issue 16, session context"): both
raise LoCoMo but neither survives the cross-validation rule, so both are off by default.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, MutableMapping, Sequence

from ..models import EPISODIC, MemoryRecord
from ..policy import Policy
from .store import UserStore

LINKS = ("prev", "next")
NEIGHBOUR_STEPS = 1  # how far along the links a turn counts as a neighbour


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


def add_neighbours(fused: MutableMapping[str, tuple[float, float, float]], records: MutableMapping[str, MemoryRecord],
                   store: UserStore, user_id: str, k: int, pol: Policy) -> None:
    """With ``score_weight_neighbour`` on, the turns up to ``NEIGHBOUR_STEPS`` away from the best
    ``k`` candidates that are not candidates yet join them (fused score 0: only the neighbour
    bonus lifts them); one read by id per step."""
    if pol.score_weight_neighbour <= 0:
        return
    frontier = sorted((mid for mid in fused if mid in records), key=lambda m: -fused[m][0])[:k]
    for _ in range(NEIGHBOUR_STEPS):
        missing = list(dict.fromkeys(n for mid in frontier for n in neighbours(records[mid]) if n not in fused))
        if not missing:
            return
        frontier = []
        for r in store.index.get(user_id, missing):
            records[r.id] = r
            fused[r.id] = (0.0, 0.0, 0.0)
            frontier.append(r.id)


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
    if wn > 0:
        for mid in fused:
            best, ring, seen = 0.0, [mid], {mid}
            for step in range(NEIGHBOUR_STEPS):  # a turn ``step + 1`` away counts 1 / (step + 1)
                ring = [n for m in ring if (r := records.get(m)) is not None for n in neighbours(r)
                        if n in fused and n not in seen]
                seen.update(ring)
                best = max([best] + [fused[n][0] / (step + 1) for n in ring])
            if best > 0:
                out[mid] += wn * best
    return dict(out)
