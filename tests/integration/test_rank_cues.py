"""Query cues in the read path (engine/read/rank_cues.py) through ``Memory.search``: a time expression
in the query favours memories dated inside it, the query's names favour memories that hold them,
and diversity stops near-copies from filling the top. Each key at 0 leaves the ranking as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold import Memory

from ..support.hash_embedder import HashEmbedder

NOW = "2023-06-10T12:00:00+00:00"


def _memory(root: Path, **policy) -> Memory:
    return Memory(root=root, embedder=HashEmbedder(), policy=policy)


def _turn(m: Memory, text: str, tid: str, when: str) -> None:
    m.add([{"role": "user", "content": text, "turn_id": tid, "timestamp": when}], "u", infer=False)


def _hiking(root: Path, **policy) -> list[str]:
    with _memory(root, **policy) as m:
        if not m.get_all("u"):
            _turn(m, "Sam and I went hiking last month, hiking is fun", "march", "2023-03-05T10:00:00+00:00")
            _turn(m, "I went hiking up the hills", "may", "2023-05-20T10:00:00+00:00")
        hits = m.search("where did I go hiking last month?", "u", record_access=False, now=NOW)
        return [s for h in hits for s in h.record.source_ids]


def test_a_time_expression_favours_memories_dated_inside_it(tmp_path: Path) -> None:
    assert _hiking(tmp_path / "off", score_bonus_time=0.0)[0] == "march"
    assert _hiking(tmp_path / "on", score_bonus_time=0.8)[0] == "may"


def test_the_time_is_measured_from_the_search_now(tmp_path: Path) -> None:
    with _memory(tmp_path, score_bonus_time=0.5) as m:
        _turn(m, "I went hiking at the lake with Sam", "march", "2023-03-05T10:00:00+00:00")
        _turn(m, "I went hiking up the hills", "may", "2023-05-20T10:00:00+00:00")
        for now, favoured in (("2023-04-02T09:00:00+00:00", "march"), (NOW, "may")):
            for h in m.search("where did I go hiking last month?", "u", record_access=False, now=now):
                bonus = 0.5 if h.record.source_ids == (favoured,) else 0.0
                assert h.similarity == pytest.approx(0.5 * h.keyword_score + 0.5 * h.vector_score + bonus, abs=1e-6)


def test_key_score_bonus_time_in_chinese(tmp_path: Path) -> None:
    for bonus in (0.0, 0.3, 0.8):
        with _memory(tmp_path / str(bonus), score_bonus_time=bonus) as m:
            _turn(m, "我们上个月去海边玩了", "old", "2023-04-15T10:00:00+00:00")
            _turn(m, "我们去山里玩了", "new", "2023-05-15T10:00:00+00:00")
            got = {h.record.source_ids[0]: h for h in m.search("上个月去哪里玩了", "u", record_access=False, now=NOW)}
            assert got["new"].similarity == pytest.approx(0.5 * got["new"].keyword_score
                                                          + 0.5 * got["new"].vector_score + bonus, abs=1e-6)
            assert got["old"].similarity == pytest.approx(0.5 * got["old"].keyword_score
                                                          + 0.5 * got["old"].vector_score, abs=1e-6)
            top = m.search("上个月去哪里玩了", "u", record_access=False, now=NOW)[0].record.source_ids
            assert top == (("new",) if bonus == 0.8 else ("old",))

