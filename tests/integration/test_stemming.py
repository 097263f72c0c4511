"""Inflections of an English word meet at one keyword term (moved/move/moving), through
``Memory.search`` and the CLI; an index whose stored terms were made by the older stemmer is
rebuilt once when it is opened (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.index import terms_version
from memfold.index.sqlite import SqliteIndex
from memfold.text.terms import TERMS_VERSION, terms

from ..conftest import run_cli

LISBON = "Last week I moved to Lisbon for a new job at a bakery"
# what the stemmer before terms version 2 stored for LISBON ("moved" -> "mov", never "move")
OLD_LISBON_TERMS = "last week mov lisbon new job bakery"


def _found(mem: Memory, query: str, user: str) -> list[str]:
    return [h.record.content for h in mem.search(query, user, record_access=False)]


@pytest.mark.parametrize(("word", "forms"), [
    ("move", ["moves", "moved", "moving"]), ("hope", ["hopes", "hoped", "hoping"]),
    ("care", ["cares", "cared", "caring"]), ("live", ["lives", "lived", "living"]),
    ("bake", ["bakes", "baked", "baking"]), ("hop", ["hops", "hopped", "hopping"]),
    ("plan", ["plans", "planned", "planning"]), ("use", ["uses", "used", "using"]),
    ("try", ["tries", "tried", "trying"]), ("write", ["writes", "writing"]),
    ("quick", ["quickly"]), ("hopeful", ["hopefully"]), ("serious", ["seriously"]),
])
def test_inflections_make_one_term(word: str, forms: list[str]) -> None:
    assert {terms(f)[0] for f in [word, *forms]} == {word}


def test_no_new_collisions() -> None:
    for a, b in (("car", "caring"), ("hop", "hoping"), ("plan", "plane"), ("need", "ne"), ("speed", "sped"),
                 ("family", "fami"), ("news", "new"), ("sing", "s"), ("spring", "spr")):
        assert terms(a) != terms(b), (a, b)
    assert terms("我喜欢喝无糖拿铁") == ["我喜", "喜欢", "欢喝", "喝无", "无糖", "糖拿", "拿铁"]  # Chinese: as before


def test_inflected_questions_find_memories_both_ways(mem: Memory) -> None:
    pairs = [  # (stored, asked): the keyword side must meet, the vectors alone miss some of these
        (LISBON, "where did I move?"),
        ("I am moving to Porto in May", "where do I move"),
        ("She hopes to run a marathon", "what was she hoping to do"),
        ("We baked sourdough for the neighbours", "who do we bake for"),
        ("My uncle lives on a houseboat", "where is my uncle living"),
    ]
    for i, (stored, asked) in enumerate(pairs):
        mem.add(stored, f"u{i}", infer=False)
        mem.add("The quarterly report is due on Friday", f"u{i}", infer=False)
        assert _found(mem, asked, f"u{i}")[:1] == [stored], asked


def test_car_does_not_find_caring(mem: Memory) -> None:
    mem.add("I spent the weekend caring for my grandmother", "u", infer=False)
    mem.add("My sister bought a red car", "u", infer=False)
    assert _found(mem, "car", "u") == ["My sister bought a red car"]
    assert _found(mem, "who did I care for", "u")[:1] == ["I spent the weekend caring for my grandmother"]


def test_the_lisbon_example_through_the_cli(root: Path) -> None:
    added = run_cli(root, "add", LISBON)
    assert added.returncode == 0, added.stderr
    found = run_cli(root, "search", "where did I move?")
    assert found.returncode == 0, found.stderr
    assert "Lisbon" in found.stdout


def _age_sqlite(path: Path) -> None:
    """Make the index look written by the old stemmer: old terms, no terms version."""
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE memories SET terms = ? WHERE content = ?", (OLD_LISBON_TERMS, LISBON))
        db.execute("DELETE FROM meta WHERE key = 'terms_version'")
    db.close()


def test_an_index_with_old_terms_is_rebuilt_when_opened(root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(root=root, embedder=embedder) as mem:
        mem.add(LISBON, "u", infer=False)
        mem.add("Old news", "u", infer=False)
        mem.forget(mem.add("an archived line about moving", "u", infer=False).added[0].id, "u")
        path = mem.index.inner.path
    _age_sqlite(path)
    with Memory(root=root, embedder=embedder) as mem:
        assert _found(mem, "where did I move?", "u") == [LISBON]
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'terms_version'").fetchone() == (str(TERMS_VERSION),)
    assert db.execute("SELECT terms FROM memories WHERE content = ?", (LISBON,)).fetchone()[0].split()[2] == "move"
    db.close()


def test_two_processes_opening_an_old_index_rebuild_it_once(root: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(root=root, embedder=embedder) as mem:
        mem.add(LISBON, "u", infer=False)
        path, dim, name = mem.index.inner.path, mem.index.dim, embedder.name
    _age_sqlite(path)
    db = sqlite3.connect(path)
    seq = int(db.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])
    db.close()
    opened: list[SqliteIndex] = []
    threads = [threading.Thread(target=lambda: opened.append(SqliteIndex(path, dim=dim, embedder_name=name)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 2
    for ix in opened:
        assert ix.keyword_search("u", ["move"], 5) and ix.change_counter() == seq + 1  # one rebuild, one bump
        ix.close()


def test_a_postgres_index_with_old_terms_is_rebuilt_when_opened(pg_dsn: str, tmp_path: Path,
                                                                 embedder) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    settings = load_settings(tmp_path / "ws", index={"backend": "postgres", "dsn": pg_dsn})
    with Memory(settings=settings, embedder=embedder) as mem:
        mem.add(LISBON, "u", infer=False)
        mem.add("Old news", "u", infer=False)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE user_memories SET terms = %s WHERE content = %s", (OLD_LISBON_TERMS.split(), LISBON))
        conn.execute("DELETE FROM memfold_meta WHERE key = 'terms_version'")
    with Memory(settings=settings, embedder=embedder) as mem:
        assert _found(mem, "where did I move?", "u") == [LISBON]
        lisbon = next(r.id for r in mem.index.list_records("u") if r.content == LISBON)
        assert [i for i, _ in mem.index.keyword_search("u", terms("where did I move?", query=True), 5)] == [lisbon]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM memfold_meta WHERE key = 'terms_version'").fetchone() == (
            str(TERMS_VERSION),)
        assert "move" in conn.execute("SELECT terms FROM user_memories WHERE content = %s", (LISBON,)).fetchone()[0]


def test_the_rebuild_reports_progress_on_big_indexes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terms_version, "PROGRESS_MIN", 2)
    monkeypatch.setattr(terms_version, "BATCH", 2)
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES "
                     "('seq', '7'); CREATE TABLE memories (rowid INTEGER PRIMARY KEY, content TEXT, context TEXT, "
                     "terms TEXT, seq INTEGER)")
    db.executemany("INSERT INTO memories (content, context, terms, seq) VALUES (?, '', 'old', 1)",
                   [("moving",), ("hoping",), ("caring",)])
    db.execute("INSERT INTO memories (content, context, terms, seq) VALUES ('archived', '', NULL, 1)")
    assert terms_version.refresh_sqlite(db, tmp_path / "x.db") == 3
    assert [r[0] for r in db.execute("SELECT terms FROM memories ORDER BY rowid")] == ["move", "hope", "care", None]
    assert {r[0] for r in db.execute("SELECT seq FROM memories WHERE terms IS NOT NULL")} == {8}
    err = capsys.readouterr().err
    assert "2/3" in err and "3/3" in err
    assert terms_version.refresh_sqlite(db, tmp_path / "x.db") == 0  # once


def test_migrating_an_old_index_to_postgres_makes_its_terms_again(root: Path, pg_dsn: str,
                                                                  embedder) -> None:  # type: ignore[no-untyped-def]
    from memfold.facade.admin import migrate
    from memfold.index.postgres import PostgresIndex

    with Memory(root=root, embedder=embedder) as mem:
        mem.add(LISBON, "u", infer=False)
        path, dim = mem.index.inner.path, mem.index.dim
    _age_sqlite(path)  # the copy reads the file as it is, without opening (and rebuilding) it
    migrate(load_settings(root), "postgres", pg_dsn)
    ix = PostgresIndex(pg_dsn, dim=dim, embedder_name=embedder.name)
    try:
        assert len(ix.keyword_search("u", terms("where did I move?", query=True), 5)) == 1
    finally:
        ix.close()


def test_read_only_or_newer_terms_are_left_as_they_are_with_a_warning(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES "
                     "('seq', '3'); CREATE TABLE memories (rowid INTEGER PRIMARY KEY, content TEXT, context TEXT, "
                     "terms TEXT, seq INTEGER); INSERT INTO memories VALUES (1, 'moving', '', 'mov', 1)")
    with caplog.at_level("WARNING", logger="memfold"):
        terms_version.check_read_only(db, tmp_path / "x.db")
    assert "read-only" in caplog.text and "older memfold" in caplog.text
    db.execute("INSERT INTO meta VALUES ('terms_version', ?)", (str(TERMS_VERSION + 1),))
    caplog.clear()
    with caplog.at_level("WARNING", logger="memfold"):
        assert terms_version.refresh_sqlite(db, tmp_path / "x.db") == 0
    assert "newer memfold" in caplog.text
    assert db.execute("SELECT terms, seq FROM memories").fetchone() == ("mov", 1)  # not rebuilt downwards


def test_a_result_cached_before_the_rebuild_is_not_served_after(root: Path, embedder, redis_server,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:  # type: ignore[no-untyped-def]
    settings = load_settings(root, cache={"backend": "redis", "url": redis_server.url})
    with Memory(settings=settings, embedder=embedder) as mem:
        mem.add(LISBON, "u", infer=False)
        path = mem.index.inner.path
    _age_sqlite(path)
    with monkeypatch.context() as m:
        m.setattr(terms_version, "refresh_sqlite", lambda db, path: 0)  # an old memfold: reads the old terms
        with Memory(settings=settings, embedder=embedder) as mem:
            assert _found(mem, "where did I move?", "u") == []
            assert mem.index.keyword_search("u", ["move"], 5) == []  # and the empty answer is cached
    with Memory(settings=settings, embedder=embedder) as mem:  # rebuilt: the rows' counter moved on
        assert len(mem.index.keyword_search("u", ["move"], 5)) == 1
        assert _found(mem, "where did I move?", "u") == [LISBON]
