"""The keyword feedback of a PostgreSQL search (``engine/read/rank_keywords.py``) reads the best hits'
terms from the process's keyword index of the namespace (``PostgresIndex.doc_terms``), as the
SQLite index answers it, instead of tokenising their text again: the same terms, the same answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold.engine.read import rank_keywords
from memfold.engine.read.rank_keywords import doc_terms
from memfold.engine.storage.records import index_text
from memfold.index.pg_scope import PgSearchScope

from .test_pg_search_scope import FACTS, NOW, QUERIES, _answers, _mem

pytest.importorskip("psycopg_pool")


def test_the_feedback_reads_the_best_hits_terms_from_the_keyword_index(pg_dsn: str, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with _mem(tmp_path / "ws", pg_dsn) as mem:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        ix = mem.index
        records = ix.list_records("u")
        ids = [r.id for r in records]
        assert ix.doc_terms("u", ids) == {}  # this process has not searched the namespace: nothing held
        mem.search(QUERIES[0], "u", record_access=False, now=NOW)
        held = ix.doc_terms("u", ids + ["nobody"])
        assert held == {r.id: doc_terms(index_text(r)) for r in records}  # what tokenising the text gives

        tokenised: list[str] = []
        monkeypatch.setattr(rank_keywords, "doc_terms", lambda text: tokenised.append(text) or doc_terms(text))
        answers = _answers(mem)
        assert all(answers) and mem.policy("u").keyword_feedback_weight > 0  # the feedback runs
        assert tokenised == []  # every hit's terms came from the keyword index
        monkeypatch.delattr(PgSearchScope, "doc_terms")  # as before: the hits' text tokenised again
        assert _answers(mem) == answers
        assert tokenised
