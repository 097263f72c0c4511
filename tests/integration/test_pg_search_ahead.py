"""A PostgreSQL search sends its nearest-rows query before it searches the keywords in process
(``PostgresIndex.vector_search_begin``, ``engine/read.py``): the server walks the HNSW graph while
the client scores BM25. The answers are those of the search in the old order, with or without the
cache; the keyword feedback reads the best hits' terms from the process's keyword index
(``doc_terms``), as on SQLite, instead of tokenising their text; the threads that send the queries
are bounded and leave with the index."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.engine.rank_keywords import doc_terms
from memfold.engine.records import index_text
from memfold.index.pg_scope import NEAR_THREADS, PgSearchScope
from memfold.index.pg_search import PgKeywords

from ..support.hash_embedder import HashEmbedder
from ..support.postgres import record_statements
from .test_pg_search_scope import FACTS, NOW, QUERIES, _answers, _mem

pytest.importorskip("psycopg_pool")


def test_the_nearest_rows_query_is_out_while_the_keywords_are_searched(pg_dsn: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with _mem(tmp_path / "ws", pg_dsn) as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        ahead = _answers(mem)
        keywords_started = threading.Event()
        overlapped: list[bool] = []
        search, nearest = PgKeywords.search, PgSearchScope._nearest_rows

        def keyword_search(self, *a, **kw):  # type: ignore[no-untyped-def]
            keywords_started.set()
            return search(self, *a, **kw)

        def nearest_rows(self, *a, **kw):  # type: ignore[no-untyped-def]
            # the statement waits for the search's keyword side to start: only a query sent ahead
            # of it sees that happen (sent after it, the keyword side already ran: also set)
            overlapped.append(keywords_started.wait(timeout=30) and threading.current_thread().name
                              .startswith("memfold-pg-nearest"))
            return nearest(self, *a, **kw)

        monkeypatch.setattr(PgKeywords, "search", keyword_search)
        monkeypatch.setattr(PgSearchScope, "_nearest_rows", nearest_rows)
        for q in QUERIES:
            keywords_started.clear()
            mem.search(q, "u", record_access=False, now=NOW)
        assert overlapped == [True] * len(QUERIES)
        monkeypatch.undo()
        sent = record_statements(monkeypatch)
        for q in QUERIES:
            mem.search(q, "u", record_access=False, now=NOW)
        assert len(sent) / len(QUERIES) <= 3, sent  # files' states, nearest rows, the other candidates' rows
        monkeypatch.undo()
        monkeypatch.delattr(PgSearchScope, "vector_search_begin")  # the old order: keywords, then vectors
        assert _answers(mem) == ahead


def test_a_cached_search_sent_ahead_is_cached_and_answers_as_the_index(pg_dsn: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with _mem(tmp_path / "ws", pg_dsn, cache="memory") as mem, _mem(tmp_path / "ws", pg_dsn) as plain:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        assert callable(getattr(mem.index, "vector_search_begin", None))
        first = _answers(mem)
        sent = record_statements(monkeypatch)
        again = _answers(mem)
        assert not any("embedding <=>" in s for s in sent)  # the nearest rows came from the cache
        assert again == first == _answers(plain)
        mem.add([{"role": "user", "content": "Alice painted the lighthouse again on Friday"}], "u", infer=False)
        assert _answers(mem) == _answers(plain)  # a write: the cached nearest rows are not reused


def test_the_feedback_reads_the_best_hits_terms_from_the_keyword_index(pg_dsn: str, tmp_path: Path) -> None:
    with _mem(tmp_path / "ws", pg_dsn) as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        ix = mem.index
        records = ix.list_records("u")
        ids = [r.id for r in records]
        assert ix.doc_terms("u", ids) == {}  # this process has not searched the namespace: nothing held
        mem.search(QUERIES[0], "u", record_access=False, now=NOW)
        held = ix.doc_terms("u", ids + ["nobody"])
        assert held == {r.id: doc_terms(index_text(r)) for r in records}  # what tokenising the text gives


def test_the_threads_sending_queries_ahead_are_bounded_and_leave_with_the_index(pg_dsn: str, tmp_path: Path) -> None:
    def senders() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("memfold-pg-nearest")]

    with Memory(settings=load_settings(tmp_path / "ws", index={"backend": "postgres", "dsn": pg_dsn},
                                       cache={"backend": "off"}), embedder=HashEmbedder()) as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        errors: list[BaseException] = []

        def searcher() -> None:
            try:
                for q in QUERIES * 2:
                    mem.search(q, "u", record_access=False)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        workers = [threading.Thread(target=searcher) for _ in range(2 * NEAR_THREADS)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert not errors
        assert 1 <= len(senders()) <= NEAR_THREADS
    assert senders() == []
