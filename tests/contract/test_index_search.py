"""Index contract: keyword search (Chinese and English terms, BM25) and vector search (cosine)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memfold.index.base import Index, IndexItem
from memfold.text.terms import fts_document, terms

from .conftest import DIM, item, rec, unit

CORPUS = [
    ("zh1", "alice", "我喜欢喝咖啡，尤其是早上的拿铁"),
    ("zh2", "alice", "下周三要去上海出差，记得订酒店"),
    ("zh3", "alice", "我的猫叫小白，喜欢吃鱼"),
    ("en1", "alice", "Alice prefers green tea in the afternoon"),
    ("en2", "alice", "The quarterly report is due on Friday; the report needs charts"),
    ("en3", "alice", "Running every morning, planned a marathon in Shanghai"),
    ("bob1", "bob", "Bob also likes coffee and the report format"),
]


def _load(index: Index) -> None:
    rng = np.random.default_rng(7)
    index.upsert([item(rec(mid, text, user), unit(*rng.normal(size=DIM))) for mid, user, text in CORPUS])


def _bm25(corpus: dict[str, list[str]], user_docs: set[str], query: list[str]) -> dict[str, float]:
    """BM25 as both backends define it: k1 1.2, b 0.75, statistics over the namespace's searchable
    rows only, Lucene's idf ln(1 + (N − df + 0.5)/(df + 0.5)), a row's length its number of terms."""
    docs = {mid: corpus[mid] for mid in user_docs}
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    out: dict[str, float] = {}
    for q in dict.fromkeys(query):
        hits = sum(1 for t in docs.values() if q in t)
        idf = math.log(1 + (n - hits + 0.5) / (hits + 0.5))
        for mid, t in docs.items():
            tf = t.count(q)
            if tf:
                out[mid] = out.get(mid, 0.0) + idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(t) / avgdl))
    return out


@pytest.mark.parametrize("query, expected", [
    ("咖啡", "zh1"), ("上海出差", "zh2"), ("小白喜欢什么", "zh3"), ("green tea", "en1"),
    ("reports", "en2"), ("run a marathon", "en3"),
])
def test_keyword_search_finds_chinese_and_english(index: Index, query: str, expected: str) -> None:
    _load(index)
    hits = index.keyword_search("alice", terms(query, query=True), 3)
    assert hits and hits[0][0] == expected
    assert all(s > 0 for _, s in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_keyword_scores_are_bm25_per_namespace(index: Index) -> None:
    """Both backends rank keywords with the same BM25, so fusion sees the same numbers; another
    namespace's rows never change the scores."""
    _load(index)
    corpus = {mid: fts_document(text).split() for mid, _, text in CORPUS}
    mine = {mid for mid, user, _ in CORPUS if user == "alice"}

    def check() -> None:
        for query in ("report coffee", "喜欢 咖啡 report", "上海 shanghai", "the report report"):
            q = terms(query, query=True)
            expected = _bm25(corpus, mine, q)
            got = dict(index.keyword_search("alice", q, 10))
            assert got.keys() == expected.keys(), query
            for mid, s in expected.items():
                assert got[mid] == pytest.approx(s, rel=1e-9), (query, mid)

    check()
    # the statistics follow archiving, deletion and new terms
    index.upsert([IndexItem(record=index.get("alice", ["zh2"])[0].with_(is_active=False))])
    index.delete("alice", ["en3"])
    index.upsert([IndexItem(record=index.get("alice", ["en1"])[0], terms="report report coffee")])
    for gone in ("zh2", "en3"):
        del corpus[gone]
        mine.discard(gone)
    corpus["en1"] = ["report", "report", "coffee"]
    check()
    # bob's rows with alice's words leave alice's statistics alone
    rng = np.random.default_rng(8)
    index.upsert([item(rec(f"bob{i}", "coffee report shanghai", "bob"), unit(*rng.normal(size=DIM)))
                  for i in range(2, 12)])
    check()


def test_keyword_ranking_prefers_more_and_rarer_matches(index: Index) -> None:
    index.upsert([item(rec("a", "kiwi kiwi kiwi mango"), unit(1)), item(rec("b", "kiwi mango papaya guava"), unit(0, 1)),
                  item(rec("c", "mango only here"), unit(0, 0, 1))])
    assert [m for m, _ in index.keyword_search("alice", ["kiwi"], 5)] == ["a", "b"]
    assert [m for m, _ in index.keyword_search("alice", ["papaya", "mango"], 5)][0] == "b"


def test_keyword_search_edge_cases(index: Index) -> None:
    _load(index)
    assert index.keyword_search("alice", [], 5) == []
    assert index.keyword_search("alice", ["", ""], 5) == []
    assert index.keyword_search("alice", ["咖啡"], 0) == []
    assert index.keyword_search("alice", ["nothingmatches"], 5) == []
    assert len(index.keyword_search("alice", ["report", "咖啡", "上海", "tea"], 2)) == 2
    # a term is matched whole, never as a prefix or a quoted expression
    assert index.keyword_search("alice", ["repo"], 5) == []
    assert index.keyword_search("alice", ['report" OR "tea'], 5) == []


def test_rows_with_empty_terms_are_stored_but_not_found(index: Index) -> None:
    index.upsert([item(rec("m1", "kiwi"), unit(1), terms=""), item(rec("m2", "kiwi"), unit(0, 1), terms=None)])
    assert index.keyword_search("alice", ["kiwi"], 5) == []
    assert index.count("alice") == 2


def test_vector_search_is_cosine_best_first(index: Index) -> None:
    rng = np.random.default_rng(3)
    vecs = {f"m{i}": unit(*rng.normal(size=DIM)) for i in range(40)}
    index.upsert([item(rec(mid, f"memory {mid}"), v) for mid, v in vecs.items()])
    q = unit(*rng.normal(size=DIM))
    expected = sorted(((mid, float(v @ q)) for mid, v in vecs.items()), key=lambda x: -x[1])
    got = index.vector_search("alice", q, 10)
    assert [m for m, _ in got] == [m for m, _ in expected[:10]]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected[:10]], abs=1e-5)
    assert len(index.vector_search("alice", q, 100)) == 40
    assert index.vector_search("alice", q, 0) == []


def test_vector_search_many_matches_single_searches(index: Index) -> None:
    rng = np.random.default_rng(5)
    index.upsert([item(rec(f"m{i}", f"memory {i}"), unit(*rng.normal(size=DIM))) for i in range(30)])
    qs = np.stack([unit(*rng.normal(size=DIM)) for _ in range(4)])
    many = index.vector_search_many("alice", qs, 5)
    assert len(many) == 4
    for q, row in zip(qs, many):
        single = index.vector_search("alice", q, 5)
        assert [m for m, _ in row] == [m for m, _ in single]
        assert [s for _, s in row] == pytest.approx([s for _, s in single], abs=1e-6)
    assert index.vector_search_many("alice", np.zeros((0, DIM), np.float32), 5) == []
    assert index.vector_search_many("nobody", qs[:2], 5) == [[], []]
    # with a floor: the same rows, cut at the floor (the near-duplicate check)
    index.delete("alice", ["m3"])
    plain = index.vector_search_many("alice", qs, 5)
    for floor in (0.0, 0.5, 0.9):
        above = index.vector_search_many("alice", qs, 5, min_score=floor)
        for row, cut in zip(plain, above):
            want = [(m, s) for m, s in row if s >= floor]
            assert [m for m, _ in cut] == [m for m, _ in want]
            assert [s for _, s in cut] == pytest.approx([s for _, s in want], abs=1e-6)
