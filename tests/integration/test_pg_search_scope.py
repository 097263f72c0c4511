"""A PostgreSQL search in few round trips (``index/pg_scope.py``): the nearest rows come with the
candidates' rows, the keyword feedback's search reuses the keyword counter read with the files'
states, a cached repeat reads only the files' states and the rows; the answers are those of the
search without the scope. Access statistics live beside the rows (schema 6, ``memory_access``):
counting a search's hits never rewrites a memory row."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.engine.read.rank_speakers import may_name_someone
from memfold.index.base import IndexItem
from memfold.index.pg_pool import PgOptions
from memfold.index.pg_scope import PgSearchScope
from memfold.index.postgres import PostgresIndex
from memfold.models import MemoryRecord, MemoryType

from ..support.hash_embedder import HashEmbedder
from ..support.postgres import record_statements

pytest.importorskip("psycopg_pool")

NOW = datetime(2026, 1, 10, 12, tzinfo=timezone.utc)
FACTS = [f"{who} {did} the {what} on {day}" for who, did, what, day in
         ((w, d, t, y) for w in ("Alice", "Bob", "Carol") for d in ("painted", "repaired", "sold")
          for t, y in (("lighthouse", "Monday"), ("blue bicycle", "Friday"), ("garden fence", "Sunday")))]
QUERIES = ["what did Alice paint?", "who repaired the blue bicycle", "garden fence on Sunday", "Bob sold",
           "lighthouse"]


def _mem(root: Path, dsn: str, cache: str = "off") -> Memory:
    return Memory(settings=load_settings(root, index={"backend": "postgres", "dsn": dsn}, cache={"backend": cache}),
                  embedder=HashEmbedder())


def _answers(mem: Memory) -> list[list[tuple]]:
    return [[(h.record.id, h.record.content, round(h.score, 9), h.keyword_score, h.vector_score, h.relevance)
             for h in mem.search(q, "u", record_access=False, now=NOW)] for q in QUERIES]


def test_a_search_reads_the_candidates_rows_with_the_nearest_rows_and_answers_as_without(
        pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with _mem(tmp_path / "ws", pg_dsn) as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        scoped = _answers(mem)
        assert all(scoped) and mem.policy("u").keyword_feedback_weight > 0  # the feedback's second search runs
        sent = record_statements(monkeypatch)
        for q in QUERIES:
            mem.search(q, "u", record_access=False, now=NOW)
        per_search = len(sent) / len(QUERIES)
        assert sum("memory_files" in s for s in sent) == len(QUERIES)  # the sync, with the counters
        assert sum("embedding <=>" in s for s in sent) == len(QUERIES)  # nearest rows, with the candidates' rows
        assert not any("FROM memory_seq" in s for s in sent)  # both keyword searches: the counter read with the sync
        # at most one more: rows of candidates only the feedback found; and for a query that may name a
        # speaker, the keyword candidates' rows read before the vector search (query_speaker_mask)
        named = sum(may_name_someone(q) for q in QUERIES)
        assert 0 < named < len(QUERIES) and per_search <= 3 + named / len(QUERIES), sent
        monkeypatch.undo()
        monkeypatch.delattr(PgSearchScope, "search_scope")  # every call reads the table on its own
        assert _answers(mem) == scoped


def test_a_cached_repeat_reads_the_file_states_and_the_rows_only(pg_dsn: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with _mem(tmp_path / "ws", pg_dsn, cache="memory") as mem, _mem(tmp_path / "ws", pg_dsn) as plain:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        first = _answers(mem)
        sent = record_statements(monkeypatch)
        again = _answers(mem)
        assert again == first == _answers(plain)
        mine = [s for s in sent if "memory_files" in s or "memory_rows" in s or "memfold_meta" in s]
        assert sum("memory_files" in s for s in mine) == 2 * len(QUERIES)  # one sync per search, both handles
        assert not any(s.startswith("SELECT value FROM memfold_meta") for s in mine)  # read with the files' states


def test_rows_a_search_read_are_not_reused_after_it(pg_dsn: str, tmp_path: Path) -> None:
    with _mem(tmp_path / "ws", pg_dsn) as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS[:6]], "u", infer=False)
        hit = mem.search("lighthouse", "u", record_access=False)[0].record
        other = PostgresIndex(pg_dsn, dim=mem.embedder.dim, embedder_name=mem.embedder.name)
        try:  # another handle (another process) changes the row
            other.upsert([IndexItem(hit.with_(content="the lighthouse was sold"), None, "lighthouse sold")])
        finally:
            other.close()
        assert mem.index.get("u", [hit.id])[0].content == "the lighthouse was sold"
        assert [h.record.content for h in mem.search("lighthouse sold", "u", limit=1)] == ["the lighthouse was sold"]


def _rec(i: int) -> MemoryRecord:
    t0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
    return MemoryRecord(id=f"u{i}", user_id="u", memory_type=MemoryType.FACT, content=f"text {i}", created_at=t0,
                        updated_at=t0, file="MEMORY.md")


def test_access_statistics_never_rewrite_a_memory_row(pg_dsn: str) -> None:
    ix = PostgresIndex(pg_dsn, dim=512, embedder_name="test", options=PgOptions(access_delay_ms=60_000))
    rng = np.random.default_rng(5)
    try:
        vecs = rng.normal(size=(20, 512)).astype(np.float32)
        ix.upsert([IndexItem(_rec(i), vecs[i] / np.linalg.norm(vecs[i]), f"word{i} lighthouse") for i in range(20)])

        def versions() -> dict[str, str]:  # the transaction that wrote each row's live version
            with ix._cur() as cur:
                cur.execute("SELECT id, xmin::text FROM user_memories")
                return dict(cur.fetchall())

        before = versions()
        t = datetime(2025, 1, 1, tzinfo=timezone.utc)
        for k in range(3):  # three searches, each flushed on its own
            ix.record_access("u", ["u1", "u2", "u1"] if k else ["u2"], t + timedelta(hours=k))
            ix.flush_access()
        assert versions() == before  # no row written: no new version, no index entry (HNSW included)
        got = {r.id: (r.access_count, r.last_accessed_at) for r in ix.get("u", ["u1", "u2", "u3"])}
        assert got == {"u1": (4, t + timedelta(hours=2)), "u2": (3, t + timedelta(hours=2)), "u3": (0, None)}
        assert [r.id for r in ix.most_accessed("u", 2)] == ["u1", "u2"]
        assert {it.record.id: it.record.access_count for it in ix.iter_rows("u")}["u1"] == 4  # exports see them
        # a write of the row folds its statistics in (counted once); deleting the row deletes them
        u1 = ix.get("u", ["u1"])[0]
        ix.upsert([IndexItem(u1.with_(content="text one"), None, "one")])
        assert ix.get("u", ["u1"])[0].access_count == 4
        ix.delete("u", ["u2"])
        with ix._cur() as cur:
            cur.execute("SELECT id, k FROM memory_access ORDER BY id")
            assert cur.fetchall() == []
            cur.execute("SELECT access_count FROM user_memories WHERE id = 'u1'")
            assert cur.fetchone()[0] == 4
        ix.record_access("u", ["u1", "gone"], t + timedelta(days=1))  # a row deleted meanwhile is skipped
        ix.flush_access()
        assert ix.get("u", ["u1"])[0].access_count == 5
    finally:
        ix.close()


@pytest.mark.parametrize("user", ["scoped", "u"])
def test_the_cache_keeps_a_search_s_counter_for_its_feedback_lookup(tmp_path: Path, user: str) -> None:
    """SQLite + the in-process cache: the keyword feedback's lookup uses the counter of its search
    (one reading per search), whatever the namespace is called, and answers as without the cache."""
    root = tmp_path / "ws"
    settings = load_settings(root, cache={"backend": "memory"})
    with Memory(settings=settings, embedder=HashEmbedder()) as mem, \
            Memory(settings=load_settings(root, cache={"backend": "off"}), embedder=HashEmbedder()) as plain:
        mem.add([{"role": "user", "content": f} for f in FACTS], user, infer=False)
        reads = []
        inner = mem.index.inner
        orig = inner.change_counter
        inner.change_counter = lambda *a: reads.append(a) or orig(*a)  # type: ignore[method-assign]
        for q in QUERIES:
            got = [(h.record.id, round(h.score, 9)) for h in mem.search(q, user, record_access=False, now=NOW)]
            assert got == [(h.record.id, round(h.score, 9)) for h in plain.search(q, user, record_access=False, now=NOW)]
        assert len(reads) == len(QUERIES)  # one per search, the feedback's lookup included


def test_terms_held_without_the_keyword_index_come_from_the_rows_the_scope_read(pg_dsn: str) -> None:
    """A process whose searches a shared cache answered never loads the namespace's keyword index:
    the scope reads the rows' stored terms with them, and ``terms_held`` counts the same."""
    from memfold.text.terms import fts_document

    texts = ["the old lighthouse keeper", "a lemon tart for the keeper", "blue bicycle"]
    a = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    b = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    try:
        a.upsert([IndexItem(_rec(i).with_(content=t), np.eye(8, dtype=np.float32)[i], fts_document(t))
                  for i, t in enumerate(texts)])
        ids, q = ["u0", "u1", "u2"], ["keeper", "lighthouse", "tart"]
        a.keyword_search("u", q, 10)  # a's keyword index of the namespace is loaded
        truth = a.terms_held("u", ids, q)
        assert truth == {"u0": 2, "u1": 2, "u2": 0}
        assert not b._keywords.holds("u") and b.terms_held("u", ids, q) == {}  # nothing to count from
        with b.search_scope("u"):
            b.get("u", ids)
            assert b.terms_held("u", ids, q) == truth
        assert not b._keywords.holds("u")
    finally:
        a.close()
        b.close()


def test_a_bulk_write_into_a_table_without_statistics_analyzes_it(pg_dsn: str) -> None:
    """``memfold migrate`` and a first import write thousands of rows and search at once: without
    statistics the planner answered the nearest-rows query with an exact scan of the namespace."""
    ix = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    try:
        rng = np.random.default_rng(1)
        vecs = rng.normal(size=(400, 8)).astype(np.float32)
        def analyzed() -> bool:
            with ix._cur() as cur:
                cur.execute("SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() "
                            "AND tablename = 'user_memories' AND attname = 'user_id'")
                return bool(cur.fetchone()[0])

        ix.upsert([IndexItem(_rec(i), vecs[i] / np.linalg.norm(vecs[i]), f"w{i}") for i in range(3)])
        assert not analyzed()  # a small write: left to autovacuum
        ix.upsert([IndexItem(_rec(i), vecs[i] / np.linalg.norm(vecs[i]), f"w{i}") for i in range(3, 400)])
        assert analyzed()  # (at 10k rows the plan then uses the HNSW index: docs/benchmarks.md)
        assert not ix.analyze_after_bulk(1000)  # once per handle
    finally:
        ix.close()




@pytest.mark.parametrize("told", [True, False])
def test_keyword_candidates_a_cache_answered_come_with_the_nearest_rows(pg_dsn: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       told: bool) -> None:
    """Keyword candidates answered from the cache were not read by the index's keyword search, which
    notes its candidates for the nearest-rows statement: the cache tells the scope instead
    (``CachedIndex._expect`` → ``expect_rows``), so when the vector side is not cached (another query
    vector) the candidates' rows still come with the nearest rows and the search's ``get`` sends no
    statement. Untold (the second case), that ``get`` reads the keyword-only rows on its own."""
    from memfold.cache.index import CachedIndex

    if not told:
        monkeypatch.setattr(CachedIndex, "_expect", lambda self, user_id, found: None)
    with _mem(tmp_path / "ws", pg_dsn, cache="memory") as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        index = mem.index
        terms, q = ["lighthouse", "monday"], mem.embedder.embed(["who sold the bicycle"])[0]
        with index.search_scope("u"):
            index.keyword_search("u", terms, 20)  # kept by the cache
        with pytest.MonkeyPatch.context() as mp:
            sent = record_statements(mp)
            with index.search_scope("u"):
                kw = index.keyword_search("u", terms, 20)  # from the cache
                vec = index.inner.vector_search("u", q, 20)  # not cached: the nearest-rows statement
                rows = index.get("u", list(dict.fromkeys([m for m, _ in kw] + [m for m, _ in vec])))
        assert kw and vec and {m for m, _ in kw} - {m for m, _ in vec}  # some rows only the keyword side found
        assert {r.id for r in rows} == {m for m, _ in kw} | {m for m, _ in vec}
        row_reads = [s for s in sent if "FROM memory_rows" in s and "<=>" not in s]
        assert sum("<=>" in s for s in sent) == 1
        assert (row_reads == []) is told, sent
