"""``word_match_weight`` (engine/read/rank_wordvec.py): a question's words matched softly, through the
static word vectors of the optional ``memfold[wordvec]`` extra (WordLlama's bundled table), against
each candidate's words, so a memory that says the same thing in other words moves up."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.engine.read import rank_wordvec
from memfold.engine.read.rank_wordvec import (
    TERM_CACHE,
    TEXT_CACHE,
    WordVectors,
    clear_caches,
    mostly_cjk,
    package_dir,
    query_words,
    soft_match,
    term_cache_size,
    text_matrix,
    vectors_of,
)
from memfold.errors import ConfigError

from ..support.hash_embedder import HashEmbedder

# the fused similarity alone decides (no floor, no bonuses, no recency or importance)
ONLY_FUSED = {"score_weight_time": 0.0, "score_weight_importance": 0.0, "score_weight_similarity": 1.0,
              "score_penalty_question": 0.0, "score_bonus_speaker": 0.0, "score_bonus_time": 0.0,
              "min_score": 0.0, "keyword_feedback_weight": 0.0}
# none shares a word with the questions below; the hash embedder gives no meaning to the vector side
NOTES = ["We went hiking up the mountain trail with a tent and a canoe.",
         "The quarterly invoice was paid by bank transfer on Tuesday.",
         "My neighbour repaired the kitchen sink and the dishwasher.",
         "The printer toner ran out again during the meeting."]


def _ranking(root: Path, query: str, notes: list[str] = NOTES, **policy) -> list[str]:
    with Memory(root=root, embedder=HashEmbedder(), policy={**ONLY_FUSED, **policy}) as m:
        for text in notes:
            m.add(text, "u", infer=False)
        return _ordered(m.search(query, "u", limit=len(notes), record_access=False))


def _ordered(hits) -> list[str]:
    """Hits' texts, equal scores in text order: meaningless vectors tie often, and the order among
    ties is not a ranking."""
    return [h.record.content for h in sorted(hits, key=lambda h: (-round(h.score, 6), h.record.content))]


def test_word_match_moves_a_memory_in_other_words_up(tmp_path: Path) -> None:
    q = "Which outdoor adventures did we enjoy?"
    off = _ranking(tmp_path / "off", q)
    on = _ranking(tmp_path / "on", q, word_match_weight=0.5)
    assert off[0] != NOTES[0]  # no shared word, meaningless vectors: the hiking trip is not found first
    assert on[0] == NOTES[0]  # "outdoor adventures" meets "hiking", "mountain", "trail", "tent"
    assert sorted(on) == sorted(off)  # only a reordering: no candidate added or lost
    assert _ranking(tmp_path / "default", q) == off  # off by default
    assert _ranking(tmp_path / "zero", q, word_match_weight=0.0) == off


def test_a_chinese_question_is_left_as_it_is(tmp_path: Path) -> None:
    """The table is English-centric: a mostly-CJK query is not soft-matched (its Latin words aside)."""
    notes = ["我们周末去山上徒步 hiking", "发票已经通过银行转账付款了", "邻居修好了厨房的水槽", "打印机又没墨了"]
    q = "你们喜欢什么 outdoor 活动？"
    assert mostly_cjk(q) and query_words(q) == []
    assert query_words("Which outdoor adventures did we enjoy?") == ["outdoor", "adventure", "enjoy"]
    assert _ranking(tmp_path / "on", q, notes, word_match_weight=0.9) == _ranking(tmp_path / "off", q, notes)


def test_the_table_loads_offline_from_the_installed_package() -> None:
    """Nothing is downloaded: the table and tokenizer are the files inside the wordllama wheel."""
    real = socket.socket.connect

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("network access while loading the word vectors")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        wv = WordVectors(package_dir())
    finally:
        socket.socket.connect = real  # type: ignore[method-assign]
    assert wv.table.shape == (32000, 256) and wv.dim == 256
    v = wv.embed(["book", "novel", "invoice", ""])
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-5) and not v[3].any()
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])  # a book is nearer a novel than an invoice


def test_caches_are_bounded() -> None:
    assert text_matrix.cache_info().maxsize == TEXT_CACHE
    clear_caches()
    words = [f"w{i}" for i in range(TERM_CACHE + 10)]
    for i in range(0, len(words), 1000):
        vectors_of(words[i: i + 1000])
    assert term_cache_size() == TERM_CACHE
    first, again = vectors_of(["book", "novel"]), vectors_of(["novel", "book"])  # cached rows, in order
    assert np.array_equal(first, again[::-1])
    clear_caches()


def test_a_clear_error_without_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rank_wordvec.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(rank_wordvec, "_loaded", {})
    clear_caches()
    try:
        with pytest.raises(ConfigError, match=r"memfold\[wordvec\]"):
            _ranking(tmp_path, "Which outdoor adventures did we enjoy?", word_match_weight=0.5)
        assert _ranking(tmp_path / "off", "Which outdoor adventures did we enjoy?")  # off: never needed
    finally:
        clear_caches()


def test_a_long_text_does_not_win_by_its_length() -> None:
    """Soft recall alone grows with a text's words (more chances for each query word); the harmonic
    mean with soft precision does not reward what the text says besides."""
    q = vectors_of(query_words("Which outdoor adventures did we enjoy?"))
    short = "We went hiking on the mountain trail."
    long = short + " The invoice, the printer toner, the kitchen sink, taxes, meetings and the dishwasher."
    assert soft_match(q, short) > soft_match(q, long)
    assert soft_match(q, "") == 0.0 and soft_match(vectors_of([]), short) == 0.0


def test_the_same_ranking_on_postgresql(pg_dsn: str, tmp_path: Path) -> None:
    """On PostgreSQL the candidates' rows are read for the match right after the fusion (the search
    scope's reads): the same answers as the SQLite index gives."""
    pytest.importorskip("psycopg_pool")
    q = "Which outdoor adventures did we enjoy?"
    policy = {**ONLY_FUSED, "word_match_weight": 0.5}
    settings = load_settings(tmp_path / "pg", index={"backend": "postgres", "dsn": pg_dsn}, cache={"backend": "off"})
    with Memory(settings=settings, embedder=HashEmbedder(), policy=policy) as m:
        for text in NOTES:
            m.add(text, "u", infer=False)
        on_pg = _ordered(m.search(q, "u", limit=len(NOTES), record_access=False))
    assert on_pg == _ranking(tmp_path / "sqlite", q, word_match_weight=0.5)
    assert on_pg[0] == NOTES[0]
