"""The SQLite index's in-process search structures, through the ``Index`` API: BM25 over the
incremental keyword index stays exact through bulk loads, deletes, archiving and re-terming, also
as seen by a second index object on the same file (another process); a schema-1 file (terms in
FTS5) is migrated; the two-stage vector search keeps the exact top hits."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memfold.index.base import IndexItem
from memfold.index.sqlite import SqliteIndex

from ..contract.conftest import rec, unit
from ..contract.test_index_search import _bm25

WORDS = [f"w{i}" for i in range(300)] + ["咖啡", "拿铁", "上海"]


def _docs(rng: np.random.Generator, n: int, start: int) -> dict[str, list[str]]:
    # Zipf-like word choice, so some terms are in most rows (idf floored) and some in a few
    p = 1.0 / np.arange(1, len(WORDS) + 1)
    p /= p.sum()
    return {f"m{start + i}": [WORDS[j] for j in rng.choice(len(WORDS), rng.integers(1, 12), p=p)] for i in range(n)}


def _check(ix: SqliteIndex, corpus: dict[str, list[str]], mine: set[str], rng: np.random.Generator) -> None:
    for _ in range(12):
        q = [WORDS[j] for j in rng.choice(len(WORDS), 3)]
        expected = _bm25(corpus, mine, q)
        got = dict(ix.keyword_search("alice", q, len(mine)))
        assert got.keys() == expected.keys(), q
        for mid, s in expected.items():
            assert got[mid] == pytest.approx(s, rel=1e-9), (q, mid)
        top = ix.keyword_search("alice", q, 5)
        assert [s for _, s in top] == pytest.approx(sorted(expected.values(), reverse=True)[:5])


def test_keyword_index_stays_exact_through_every_change(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "index.db"
    ix = SqliteIndex(path, dim=8, embedder_name="test")
    other = SqliteIndex(path, dim=8, embedder_name="test")  # another process on the same file
    corpus: dict[str, list[str]] = {}
    for batch in range(6):  # 6 × 600 rows: the first batch is the bulk base, later ones a delta, then folded
        docs = _docs(rng, 600, batch * 600)
        ix.upsert([IndexItem(rec(mid, " ".join(t)), unit(1), " ".join(t)) for mid, t in docs.items()])
        corpus.update(docs)
        _check(ix, corpus, set(corpus), rng)
    _check(other, corpus, set(corpus), rng)
    gone = [f"m{i}" for i in range(0, 3600, 3)]
    ix.delete("alice", gone)
    archived = [f"m{i}" for i in range(1, 3600, 7) if f"m{i}" not in gone]
    ix.upsert([IndexItem(r.with_(is_active=False)) for r in ix.get("alice", archived)])
    changed = {f"m{i}": ["咖啡", "拿铁", "w1"] for i in range(2, 3600, 11) if f"m{i}" not in gone + archived}
    ix.upsert([IndexItem(r, None, " ".join(changed[r.id])) for r in ix.get("alice", list(changed))])
    for mid in gone + archived:
        del corpus[mid]
    corpus.update(changed)
    # bob's rows never change alice's statistics
    ix.upsert([IndexItem(rec(f"b{i}", "咖啡 w1", "bob"), unit(1), "咖啡 w1") for i in range(50)])
    _check(ix, corpus, set(corpus), rng)
    _check(other, corpus, set(corpus), rng)
    assert ix.keyword_search("alice", ["nothing-like-this"], 5) == []
    ix.close()
    other.close()


def test_a_schema_1_index_is_migrated_with_its_terms(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    ix = SqliteIndex(path, dim=8, embedder_name="test")
    docs = {"a": "coffee latte", "b": "coffee tea tea", "c": "shanghai trip", "d": "green grass", "e": "blue sky"}
    ix.upsert([IndexItem(rec(mid, t), unit(1), t) for mid, t in docs.items()])
    ix.upsert([IndexItem(ix.get("alice", ["c"])[0].with_(is_active=False))])
    before = ix.keyword_search("alice", ["coffee", "tea"], 10)
    ix.close()
    db = sqlite3.connect(path)  # what schema 1 looked like: the terms in an FTS5 table
    db.execute("CREATE VIRTUAL TABLE memories_fts USING fts5 (ns, terms)")
    db.execute("INSERT INTO memories_fts (rowid, ns, terms) SELECT rowid, 'ux', terms FROM memories "
               "WHERE terms IS NOT NULL")
    db.execute("ALTER TABLE memories DROP COLUMN terms")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    ix = SqliteIndex(path, dim=8, embedder_name="test")
    assert ix.keyword_search("alice", ["coffee", "tea"], 10) == before and [m for m, _ in before] == ["b", "a"]
    assert ix.keyword_search("alice", ["shanghai"], 10) == []
    ix.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("3",)  # and on to the current schema
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'memories_fts'").fetchone() == (0,)
    db.close()


def test_two_stage_vector_search_keeps_the_exact_top_hits(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    dim, n = 256, 4000
    latent = rng.normal(size=(n, 48)) @ rng.normal(size=(48, dim)) + 0.3 * rng.normal(size=(n, dim))
    vecs = (latent / np.linalg.norm(latent, axis=1, keepdims=True)).astype(np.float32)
    items = [IndexItem(rec(f"v{i}", f"row {i}"), vecs[i], "") for i in range(n)]
    fast = SqliteIndex(tmp_path / "fast.db", dim=dim, embedder_name="test", vector_exact_max=500)
    exact = SqliteIndex(tmp_path / "exact.db", dim=dim, embedder_name="test", vector_exact_max=10**9)
    for ix in (fast, exact):
        ix.upsert(items)
        ix.delete("alice", [f"v{i}" for i in range(0, n, 10)])
        ix.upsert([IndexItem(rec("v1", "moved"), -vecs[1], "")])  # a changed vector
    queries = vecs[rng.choice(n, 60)] + 0.05 * rng.normal(size=(60, dim)).astype(np.float32)
    recall = []
    for q in queries:
        got, want = fast.vector_search("alice", q, 10), exact.vector_search("alice", q, 10)
        assert not any(mid in {f"v{i}" for i in range(0, n, 10)} for mid, _ in got)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        recall.append(len({m for m, _ in got} & {m for m, _ in want}) / 10)
        got_scores = dict(got)
        assert all(got_scores[m] == pytest.approx(s, abs=1e-5) for m, s in want if m in got_scores)
    assert np.mean(recall) >= 0.98
    # the near-duplicate check (a floor on the score) is exact: its first stage only bounds scores
    near = np.concatenate([vecs[5:40], vecs[40:80] + 0.02 * rng.normal(size=(40, dim)).astype(np.float32), queries])
    for floor in (0.95, 0.8):
        got_many = fast.vector_search_many("alice", near, 3, min_score=floor)
        want_many = exact.vector_search_many("alice", near, 3, min_score=floor)
        assert [[m for m, _ in r] for r in got_many] == [[m for m, _ in r] for r in want_many]
        assert sum(len(r) for r in got_many) >= 60
    assert fast.vector_search("alice", -vecs[1], 1)[0][0] == "v1"
    fast.close()
    exact.close()
