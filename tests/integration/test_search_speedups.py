"""The search path's shortcuts give what the long way gives: keyword coverage from the index's stored
terms (no tokenising of every hit), rows read into records without the dataclass constructor and
with short JSON decoded once, and the vector product on one BLAS thread."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from memfold import Memory
from memfold.index.base import DocTerms, TermsHeld, capability
from memfold.index.keywords import KeywordIndex
from memfold.index.rows import RECORD_FIELDS, record_from_row
from memfold.index.sqlite_search import SqliteTermReads
from memfold.index.vectors import VectorMatrix, one_blas_thread
from memfold.models import MemoryRecord
from memfold.text.terms import fts_document, terms

from ..support.hash_embedder import HashEmbedder

WORDS = ("cat dog violin lesson chess club ramen Berlin hospital nurse garden coffee latte running ran "
         "runs studies studied 拿铁 咖啡 小提琴 课程 花园").split()


def _texts(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for _ in range(n)]


def test_terms_held_counts_what_tokenising_counts() -> None:
    k = KeywordIndex()
    k.FOLD_MIN_POSTINGS = 50  # a base and a delta both get rows
    texts = _texts(120)
    ids = [f"m{i}" for i in range(len(texts))]
    for i in range(0, len(texts), 10):
        k.upsert(ids[i: i + 10], [fts_document(t) for t in texts[i: i + 10]])
    k.remove(ids[:5])
    for query in ("cat violin lessons", "Studied running in Berlin", "拿铁咖啡", "nothing here"):
        q = terms(query, query=True)
        held = k.terms_held(ids + ["unknown"], q)
        assert set(held) == set(ids[5:])  # removed and unknown rows are left out
        for mid, text in zip(ids[5:], texts[5:]):
            assert held[mid] == len(set(q) & set(terms(text))), (query, text)


def _ranked(m: Memory, query: str, **kw) -> list[tuple[str, float]]:
    """Ids and relevance, in order (scores hold the time since each memory was written: the clock moves)."""
    return [(h.record.id, h.relevance) for h in m.search(query, "u", record_access=False, **kw)]


def test_search_with_index_terms_ranks_as_tokenising_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    queries = ["violin lesson", "who studied in the garden?", "拿铁咖啡", "running club Berlin", "xyzzy"]
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder(), policy={"min_score": 0.2}) as m:
        m.add([{"role": "user", "content": t} for t in _texts(300)], "u", infer=False)
        archived = m.search("chess club", "u", limit=3, record_access=False)
        m.delete(archived[0].record.id, "u")  # an archived row: not keyword-searchable, its text is tokenised
        calls: list[int] = []
        real = SqliteTermReads.terms_held

        def counted(self, user_id, ids, qterms):  # noqa: ANN001
            got = real(self, user_id, ids, qterms)
            calls.append(len(got))
            return got

        monkeypatch.setattr(SqliteTermReads, "terms_held", counted)
        fast = {q: (_ranked(m, q), _ranked(m, q, include_archived=True)) for q in queries}
        assert sum(calls) > 0  # the index answered for its rows
    monkeypatch.delattr(SqliteTermReads, "terms_held")  # the long way: every hit's text tokenised
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder(), policy={"min_score": 0.2}) as m:
        assert capability(m.index, TermsHeld) is None  # the cache in front claims only what the index has
        slow = {q: (_ranked(m, q), _ranked(m, q, include_archived=True)) for q in queries}
    assert fast == slow
    assert any(hits for hits, _ in fast.values()) and fast["xyzzy"][0] == []


def test_keyword_feedback_with_index_terms_ranks_as_tokenising_does(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The feedback's documents are the rows' terms held by the keyword index (no row read, nothing
    tokenised); archived rows (not keyword-searchable) are read and tokenised: the same ranking."""
    queries = ["violin lesson", "who studied in the garden?", "拿铁咖啡", "running club Berlin", "chess"]
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder(), policy={"keyword_feedback_weight": 0.3}) as m:
        m.add([{"role": "user", "content": t} for t in _texts(300, seed=5)], "u", infer=False)
        for h in m.search("chess club", "u", limit=2, record_access=False):
            m.delete(h.record.id, "u")  # archived rows: their text is tokenised
        held: list[int] = []
        real = SqliteTermReads.doc_terms

        def counted(self, user_id, ids):  # noqa: ANN001
            got = real(self, user_id, ids)
            held.append(len(got))
            return got

        monkeypatch.setattr(SqliteTermReads, "doc_terms", counted)
        fast = {q: (_ranked(m, q), _ranked(m, q, include_archived=True)) for q in queries}
        assert sum(held) > 0
    monkeypatch.delattr(SqliteTermReads, "doc_terms")  # the long way: every feedback row read and tokenised
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder(), policy={"keyword_feedback_weight": 0.3}) as m:
        assert capability(m.index, DocTerms) is None  # the cache in front claims only what the index has
        slow = {q: (_ranked(m, q), _ranked(m, q, include_archived=True)) for q in queries}
    assert fast == slow


def test_rows_read_as_the_constructor_makes_them() -> None:
    row = ("id1", "u", None, "event", "Peggy went to a concert.", "ctx", '{"role": "user", "n": 2}', '["a", "b"]',
           None, "", "2026-11-25T11:42:10+00:00", "2026-11-25T11:42:10", 0.3, 1.0, 4, None, 1, None)
    r = record_from_row(row)
    fields = dict(zip(RECORD_FIELDS, row))
    assert r == MemoryRecord(**{**{f: getattr(r, f) for f in RECORD_FIELDS}, "content": fields["content"]})
    assert r.structured_data == {"role": "user", "n": 2} and r.source_ids == ("a", "b")
    assert r.updated_at.tzinfo is not None and r.with_(content="x").content == "x"
    r.structured_data["role"] = "changed"  # a record's dict is its own, though its JSON was decoded once
    assert record_from_row(row).structured_data == {"role": "user", "n": 2}
    nested = row[:6] + ('{"tags": ["x"]}',) + row[7:]
    a, b = record_from_row(nested), record_from_row(nested)
    a.structured_data["tags"].append("y")  # nested values are decoded afresh for each row
    assert b.structured_data == {"tags": ["x"]}
    with pytest.raises(ValueError):
        record_from_row(row[:6] + ("{not json",) + row[7:])


def test_vector_search_runs_on_one_blas_thread() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    m = VectorMatrix(64)
    m.upsert([f"v{i}" for i in range(len(x))], x)
    q = x[7]
    exact = np.argsort(-(x @ q), kind="stable")[:10]
    assert [mid for mid, _ in m.search(q, 10)] == [f"v{i}" for i in exact]
    before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    with one_blas_thread():
        assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
    assert [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"] == before  # given back
    with threadpool_limits(limits=2, user_api="blas"):  # whatever the count was, it comes back
        with one_blas_thread():
            assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
        assert all(lib["num_threads"] == 2 for lib in threadpool_info() if lib["user_api"] == "blas")


def test_kept_row_terms_are_bounded_and_follow_changes() -> None:
    """The terms of rows asked about are kept between searches (``KeywordIndex._doc``): at most
    ``DOCS_KEPT`` rows, forgotten at the next change, and each caller gets a dict of its own."""
    k = KeywordIndex()
    k.DOCS_KEPT = 20
    k.FOLD_MIN_POSTINGS = 50  # a base and a delta both get rows
    texts = _texts(60, seed=9)
    ids = [f"m{i}" for i in range(len(texts))]
    for i in range(0, len(texts), 15):
        k.upsert(ids[i: i + 15], [fts_document(t) for t in texts[i: i + 15]])

    def counts(text: str) -> dict[str, int]:
        return dict(Counter(fts_document(text).split()))

    for _ in range(2):  # asked, then asked again (kept)
        got = k.doc_terms(ids)
        assert got == {mid: counts(t) for mid, t in zip(ids, texts)}
        assert 0 < len(k._docs) <= 20
    q = terms("violin lesson in the garden", query=True)
    assert k.terms_held(ids, q) == {mid: len(set(q) & set(counts(t))) for mid, t in zip(ids, texts)}
    assert 0 < len(k._docs) <= 20
    last = ids[-1]
    k.doc_terms([last])[last]["violin"] = 99  # the caller's copy
    assert k.doc_terms([last])[last] == counts(texts[-1])
    k.upsert([last], [fts_document("chess club in Berlin")])  # a change: the kept terms go
    assert k.doc_terms([last])[last] == counts("chess club in Berlin")
    assert k.terms_held([last], terms("chess Berlin", query=True)) == {last: 2}
    k.remove([ids[-2]])
    assert ids[-2] not in k.doc_terms([ids[-2]]) and k.terms_held([ids[-2]], q) == {}


def test_sqlite_file_states_are_what_file_state_reads(tmp_path: Path) -> None:
    """A search's file check reads every file state of the namespace in one query (``file_states``)."""
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder()) as m:
        m.add("I keep bees on the roof", "u", memory_type="fact", infer=False)
        m.add("I learned that bees dislike smoke", "u", memory_type="skill", infer=False)
        m.add_note("went to the market", "u")
        ix = getattr(m.index, "inner", m.index)
        got = ix.file_states("u")
        files = [r[0] for r in ix._db.execute("SELECT file FROM files WHERE user_id = 'u'")]
        assert len(got) >= 2 and set(got) == set(files)
        assert got == {f: ix.file_state("u", f) for f in files}
        assert ix.file_states("nobody") == {}


def test_returned_hits_are_the_callers_own_while_candidates_are_shared(tmp_path: Path) -> None:
    """The read path scores the record cache's records themselves (``SqliteIndex.get_shared``: no copy
    of its ~30 candidates) and hands out copies of the hits it returns: a caller that changes a hit's
    structured data changes neither the next search (fresh, or answered from its prepared answer)
    nor what ``get`` reads."""
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder()) as m:
        m.add([{"role": "user", "content": t} for t in _texts(120, seed=4)], "u", infer=False)
        first = m.search("violin lesson", "u", limit=5, record_access=False)
        assert first and all(h.record.structured_data == {"role": "user"} for h in first)
        for h in first:
            h.record.structured_data["role"] = "changed by the caller"
        ids = [h.record.id for h in first]
        again = m.search("violin lesson", "u", limit=5, record_access=False)  # its prepared answer
        other = m.search("lesson violin garden", "u", limit=10, record_access=False)  # a search of its own
        assert [h.record.id for h in again] == ids and set(ids) & {h.record.id for h in other}
        assert all(h.record.structured_data == {"role": "user"} for h in again + other)
        assert all(r.structured_data == {"role": "user"} for r in m.index.get("u", ids))
        pool: list = []  # the diagnosis's list of every scored candidate: the caller's own records too
        m.retriever.search("lesson violin garden", "u", limit=10, record_access=False, pool=pool)
        assert len(pool) > 10
        for h in pool:
            h.record.structured_data["role"] = "changed through the pool"
        after = m.search("lesson violin garden", "u", limit=10, record_access=False)
        assert all(h.record.structured_data == {"role": "user"} for h in after)


def test_feedback_terms_are_the_formula() -> None:
    """``feedback_terms`` (counts, idf and sort written with fewer operations) gives the terms, in the
    order, that the formula gives term by term: share / rank × ln(1 + pool / df), best first, ties by term."""
    from memfold.engine.read.rank_keywords import feedback_terms

    rng = random.Random(8)

    def formula(top: list[dict[str, int]], pool: list[dict[str, int]], asked: set[str], n: int) -> list[str]:
        size = max(len(pool), 1)
        weight: dict[str, float] = {}
        for rank, doc in enumerate(top):
            for t, c in doc.items():
                if t in asked or len(t) < 2:
                    continue
                df = sum(1 for d in pool if t in d) or 1
                weight[t] = weight.get(t, 0.0) + (c / sum(doc.values())) / (rank + 1) * math.log1p(size / df)
        return [t for t, _ in sorted(weight.items(), key=lambda x: (-x[1], x[0]))[:n]]

    for _ in range(200):
        pool = [dict(Counter(terms(t))) for t in _texts(rng.randint(0, 10), seed=rng.randint(0, 10**6))]
        pool += [{}] * rng.randint(0, 1)  # a row without terms keeps its rank
        rng.shuffle(pool)
        top, asked = pool[:3], set(rng.sample(WORDS, 3))
        assert feedback_terms(top, pool, asked, 10) == formula(top, pool, asked, 10)
        assert feedback_terms(top[:1], pool[1:], asked, 4) == formula(top[:1], pool[1:], asked, 4)  # top not in pool
