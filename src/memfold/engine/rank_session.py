"""Session context for the read path (issue 16): a conversation turn next to one of the best
candidates gains from it (``score_weight_neighbour``, a policy key; 0 turns it off).

Each episodic turn stored by one ``add`` call names the turns stored just before and after it in
the same call (``structured_data["prev"]`` / ``["next"]``, record ids; set by ``link_turns`` at
write time). The turns just before and after one of the ``NEIGHBOUR_OF_BEST`` best candidates gain
weight × that candidate's fused score; they join the candidates (one read by id, at most 6 rows),
so the turn next to a strong match is found even when its own words and vector missed the query.
Only the best few: lifting the neighbours of every top-``k`` hit pushed other sessions' evidence
out (LongMemEval multi-session questions).

Measured on the three development sets (docs/benchmarks.md, "Issue 16, session context"): the
neighbour bonus survives the cross-validation rule (on by default, 0.2). A session bonus (the best
other candidate of the turn's session) did not survive and was removed.
"""

from __future__ import annotations

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
    """id -> similarity bonus of a neighbour of a best candidate: + weight × that candidate's fused
    score (the largest, when it neighbours two); empty when ``score_weight_neighbour`` is 0."""
    wn = pol.score_weight_neighbour
    if wn <= 0:
        return {}
    lift: dict[str, float] = {}
    for src in best_candidates(fused, records):
        for n in neighbours(records[src]):
            if n in fused:
                lift[n] = max(lift.get(n, 0.0), wn * fused[src][0])
    return lift
