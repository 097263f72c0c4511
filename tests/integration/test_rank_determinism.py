"""The same memories ingested twice rank the same way: equal scores are never ordered by the
memories' ids, which are random (issue 16, session 6: the LoCoMo eval moved by up to 0.003
between runs of the same code because pseudo-relevance feedback chose its documents among tied
hits by id)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import memfold.engine.storage.records as records
import memfold.engine.write.write as write
from memfold import Memory
from memfold.engine.read.rank_keywords import add_scores
from memfold.engine.read.read import fuse

from ..support.hash_embedder import HashEmbedder

# keyword side only, the feedback on, no floor: scores are BM25 sums, full of exact ties
KEYWORD_FEEDBACK = {"score_weight_similarity": 1.0, "score_weight_time": 0.0, "score_weight_importance": 0.0,
                    "fusion_keyword_weight": 1.0, "min_score": 0.0, "score_penalty_question": 0.0,
                    "score_bonus_speaker": 0.0, "keyword_feedback_weight": 0.5}
AT = datetime(2026, 11, 27, 9, 0, 0, tzinfo=timezone.utc)
NAMES = ["rex", "bella", "max", "luna", "coco", "milo", "nala", "odie"]


def _ids(descending: bool):
    """Ids in insertion order, ascending or descending: the two extremes of what random ids give."""
    n = iter(range(10_000))

    def new_id() -> str:
        i = next(n)
        return f"{(9_999 - i) if descending else i:012d}"
    return new_id


def _ranking(root: Path, monkeypatch: pytest.MonkeyPatch, descending: bool) -> list[tuple[str, float]]:
    monkeypatch.setattr(records, "new_id", _ids(descending))
    # one clock for both runs: created_at (whole seconds) breaks the final order's ties, and a run
    # that crossed a second boundary while the other did not ordered its tied turns differently
    monkeypatch.setattr(write, "utcnow", lambda: AT)
    with Memory(root=root, embedder=HashEmbedder(), policy=KEYWORD_FEEDBACK) as m:
        # eight turns tied on the question's words (same length, one name each) ...
        for name in NAMES:
            m.add(f"the dog {name} plays outside", "u", infer=False)
        # ... and, per name, a turn only the feedback terms (the names of the three best) can find
        for name in NAMES:
            m.add(f"{name} sleeps by the fire", "u", infer=False)
        return [(h.record.content, round(h.score, 9))
                for h in m.search("where does the dog play", "u", limit=12, record_access=False)]


def test_ties_do_not_follow_random_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    up = _ranking(tmp_path / "a", monkeypatch, descending=False)
    down = _ranking(tmp_path / "b", monkeypatch, descending=True)
    assert up == down
    # the feedback did work: three "sleeps" turns found through the names of the first tied hits
    assert sum("sleeps" in c and s > 0 for c, s in up) == 3


def test_fuse_and_add_scores_keep_the_lists_order_on_ties() -> None:
    assert list(fuse([("z", 2.0), ("a", 2.0)], [("m", 0.5), ("b", 0.5), ("a", 0.5)], 0.5)) == ["z", "a", "m", "b"]
    assert [m for m, _ in add_scores([("z", 1.0), ("a", 1.0)], [("y", 2.0), ("b", 2.0)], 0.5)] == ["z", "a", "y", "b"]
