"""Session context in the ranking (issue 16, engine/rank_session.py), through Memory.search with
the fast hash embedder: a turn just before or after one of the best candidates gains from it
(score_weight_neighbour) and joins the candidates."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from memfold import Memory

from ..support.hash_embedder import HashEmbedder

OFF = {"score_weight_neighbour": 0.0, "min_score": 0.0, "dedupe_threshold": 1.0}
TRIP = ["We drove to the coast on Saturday morning",
        "My sister Ana brought her new kayak along",
        "The water was freezing but paddling felt wonderful"]
DISTRACTORS = ["freezing weather all winter long", "water the tomato plants daily", "a paddling pool for the kids",
               "the water bill went up again", "freezing rain closed the school", "paddling upstream is hard work",
               "wonderful pancakes for breakfast", "felt the cold water", "the pool water was green", "freezing hands"]


@contextmanager
def memory(root: Path, **policy):
    m = Memory(root=root, embedder=HashEmbedder(), policy={**OFF, **policy})
    try:
        yield m
    finally:
        m.close()


def fill(root: Path) -> None:
    with memory(root) as m:
        m.add([{"role": "user", "content": t, "timestamp": "2024-06-01T10:00:00+00:00"} for t in TRIP], "u",
              infer=False)
        for i, d in enumerate(DISTRACTORS):
            m.add([{"role": "user", "content": d, "timestamp": f"2024-05-{i + 1:02d}T09:00:00+00:00"}], "u",
                  infer=False)


def found(m: Memory, query: str, limit: int) -> list[str]:
    return [h.record.content for h in m.search(query, "u", limit=limit, record_access=False)]


def test_turns_of_one_add_call_name_their_neighbours(root: Path):
    fill(root)
    with memory(root) as m:
        turns = {r.content: r for r in m.get_all("u") if r.content in TRIP}
        first, middle, last = (turns[t] for t in TRIP)
        assert "prev" not in first.structured_data and first.structured_data["next"] == middle.id
        assert middle.structured_data["prev"] == first.id and middle.structured_data["next"] == last.id
        assert last.structured_data["prev"] == middle.id and "next" not in last.structured_data
        lone = next(r for r in m.get_all("u") if r.content == DISTRACTORS[0])
        assert "prev" not in lone.structured_data and "next" not in lone.structured_data


def test_neighbour_of_a_matching_turn_is_found(root: Path):
    """The kayak turn shares no word with the query; the turn after it matches. With the neighbour
    weight on it joins the candidates (a small pool: it is not one by its own words or vector) and
    ranks second; off, distractors that share a query word come first."""
    fill(root)
    query = "freezing water paddling wonderful"
    with memory(root, candidate_pool_min=1) as m:
        off = found(m, query, 2)
    assert off[0] == TRIP[2] and TRIP[1] not in off
    with memory(root, candidate_pool_min=1, score_weight_neighbour=0.5) as m:
        on = found(m, query, 2)
    assert on == [TRIP[2], TRIP[1]]
