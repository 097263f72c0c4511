"""Per-session spread of the top hits (engine/rank_spread.py, ``session_spread_weight``): a session's
second and third hits give way to another session's hit unless they score that much more per hit
already listed; at 0 the ranking is what it was."""

from __future__ import annotations

from pathlib import Path

from memfold import Memory
from memfold.engine.rank_spread import spread_sessions
from memfold.policy import Policy

from ..support.hash_embedder import HashEmbedder

QUESTION = "how many model kits did I build?"
# one session (one add call, one time stamp): three turns on the topic
FIRST = ["I built a model kit of a Spitfire, my first model kit", "the model kit glue dried too fast",
         "painting the model kit took two evenings"]
# another session, a day later: the second kit, matching a little less
SECOND = ["I also finished a tank model kit last week"]
OTHER = ["the cat slept on the sofa all day", "we bought bread and cheese", "rain is forecast for Sunday"]
POLICY = {"score_weight_similarity": 1.0, "score_weight_time": 0.0, "score_weight_importance": 0.0,
          "min_score": 0.0, "keyword_feedback_weight": 0.0}


def day(n: int, texts: list[str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": t, "timestamp": f"2024-03-{n:02d}T10:00:00+00:00"} for t in texts]


def top(root: Path, limit: int = 2, **policy: float) -> list[str]:
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, **policy}) as m:
        if not m.get_all("u"):
            m.add(day(1, FIRST), "u", infer=False)
            m.add(day(2, SECOND), "u", infer=False)
            for i, text in enumerate(OTHER):
                m.add(day(3 + i, [text]), "u", infer=False)
        return [h.record.content for h in m.search(QUESTION, "u", limit=limit, record_access=False)]


def test_a_second_session_gets_a_place_in_the_top(tmp_path: Path) -> None:
    off = top(tmp_path, session_spread_weight=0.0)
    assert off and all(t in FIRST for t in off)  # one session fills the top two
    on = top(tmp_path, session_spread_weight=1.0)
    assert on[0] == off[0] and on[1] == SECOND[0]


def test_off_leaves_the_ranking_unchanged(tmp_path: Path) -> None:
    default = top(tmp_path, limit=6)
    assert top(tmp_path, limit=6, session_spread_weight=0.0) == default
    assert len(default) == 6
    spread = top(tmp_path, limit=6, session_spread_weight=1.0)
    assert spread != default and spread[0] == default[0]  # on: the best stays, the rest moves


def test_key_session_spread_weight() -> None:
    """The key is validated like the others, 0 by default; at 0 the list is returned as it came."""
    assert Policy().session_spread_weight == 0.0
    hits: list = []
    assert spread_sessions(hits, 10, Policy()) is hits
