"""The PostgreSQL backend at speed: its connection pool and settings, and its in-process keyword
index caught up from the change counter (other handles' writes and deletes, pruned tombstones)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from memfold.config import load_settings
from memfold.errors import ConfigError
from memfold.index import pg_search
from memfold.index.base import IndexItem, open_index
from memfold.index.pg_pool import PgOptions
from memfold.index.postgres import PostgresIndex
from memfold.models import MemoryRecord, MemoryType

pytest.importorskip("psycopg_pool")

T0 = __import__("datetime").datetime(2024, 5, 1, tzinfo=__import__("datetime").timezone.utc)
VEC = np.eye(8, dtype=np.float32)[0]


def _rec(i: int, user: str = "u") -> MemoryRecord:
    return MemoryRecord(id=f"{user}{i}", user_id=user, memory_type=MemoryType.FACT, content=f"text {i}",
                        created_at=T0, updated_at=T0, file="MEMORY.md")


def test_settings_reach_the_pool_and_the_hnsw_index(pg_dsn: str, pg_server, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.toml").write_text(
        "[index]\nbackend = 'postgres'\npool_min = 1\npool_max = 3\nhnsw_m = 8\nhnsw_ef_construction = 40\n",
        encoding="utf-8")
    monkeypatch.setenv("MEMFOLD_INDEX__DSN", pg_dsn)
    monkeypatch.setenv("MEMFOLD_INDEX__HNSW_EF_SEARCH", "37")
    ix = open_index(load_settings(tmp_path), 8, "test")
    try:
        assert isinstance(ix, PostgresIndex)
        schema = pg_dsn.split("search_path=")[1].split(",")[0]
        opts = pg_server.execute("SELECT reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                 "WHERE n.nspname = %s AND c.relname = 'user_memories_embedding'", (schema,))
        assert sorted(opts[0][0]) == ["ef_construction=40", "m=8"]
        fill = pg_server.execute("SELECT reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                 "WHERE n.nspname = %s AND c.relname = 'user_memories'", (schema,))
        assert "fillfactor=70" in fill[0][0]  # room for HOT updates of access statistics
        # three threads holding a connection at once: the pool grows to its maximum, every
        # connection has the search setting, and no fourth one is opened
        barrier = threading.Barrier(3)
        seen: list[str] = []

        def hold() -> None:
            with ix._cur() as cur:
                cur.execute("SHOW hnsw.ef_search")
                seen.append(cur.fetchone()[0])
                barrier.wait(timeout=30)

        threads = [threading.Thread(target=hold) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == ["37"] * 3
        stats = ix.pool.stats()
        assert stats["pool_max"] == 3 and stats["pool_size"] == 3
        assert stats["requests_num"] >= 3
    finally:
        ix.close()


def test_bad_pool_and_hnsw_settings_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"pool_min \(5\) must not exceed pool_max \(2\)"):
        PgOptions(pool_min=5, pool_max=2).check()
    with pytest.raises(ConfigError, match=r"hnsw_ef_construction \(10\) must be at least twice hnsw_m \(16\)"):
        PgOptions(hnsw_ef_construction=10).check()
    with pytest.raises(ConfigError, match=r"\[index\] hnsw_ef_search must be an integer from 1 to 1000, got 0"):
        PgOptions(hnsw_ef_search=0).check()


def test_keyword_index_follows_writes_and_deletes_of_another_handle(pg_dsn: str) -> None:
    writer = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    reader = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    try:
        writer.upsert([IndexItem(_rec(i), VEC, f"kiwi word{i}") for i in range(5)])
        assert {m for m, _ in reader.keyword_search("u", ["kiwi"], 10)} == {f"u{i}" for i in range(5)}
        writer.delete("u", ["u1"])
        writer.upsert([IndexItem(_rec(2).with_(is_active=False))])  # archived: leaves keyword search
        writer.upsert([IndexItem(_rec(3), None, "mango")])  # new terms
        writer.upsert([IndexItem(_rec(9, "other"), VEC, "kiwi")])  # another namespace: not counted
        got = reader.keyword_search("u", ["kiwi", "mango"], 10)
        assert {m for m, _ in got} == {"u0", "u3", "u4"}
        # the same scores as a handle that loads the namespace from scratch
        fresh = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
        try:
            again = fresh.keyword_search("u", ["kiwi", "mango"], 10)
            assert [m for m, _ in again] == [m for m, _ in got]
            assert [s for _, s in again] == pytest.approx([s for _, s in got])
        finally:
            fresh.close()
    finally:
        writer.close()
        reader.close()


def test_a_reader_behind_the_pruned_tombstones_reloads(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_search, "TOMBSTONE_SPAN", 1)
    writer = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    reader = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    try:
        writer.upsert([IndexItem(_rec(i), VEC, "kiwi") for i in range(3)])
        assert len(reader.keyword_search("u", ["kiwi"], 10)) == 3
        # deletions until the counter passes a multiple of 1000: the old tombstones are pruned
        with writer._cur(write=True) as cur:
            cur.execute("UPDATE memory_seq SET seq = 998 WHERE user_id = 'u'")
        writer.delete("u", ["u0"])  # seq 999
        writer.delete("u", ["u1"])  # seq 1000: tombstones up to 999 (u0's) pruned, floor 999
        with writer._cur() as cur:
            cur.execute("SELECT floor FROM memory_seq WHERE user_id = 'u'")
            assert cur.fetchone()[0] == 999
            cur.execute("SELECT count(*) FROM memory_tombstones WHERE user_id = 'u'")
            assert cur.fetchone()[0] == 1
        assert [m for m, _ in reader.keyword_search("u", ["kiwi"], 10)] == ["u2"]
    finally:
        writer.close()
        reader.close()


def test_a_search_asks_for_the_file_states_once_however_many_note_files(pg_dsn: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from memfold import Memory
    from tests.support.hash_embedder import HashEmbedder
    from tests.support.postgres import record_statements

    settings = load_settings(tmp_path, index={"backend": "postgres", "dsn": pg_dsn})
    day = __import__("datetime").datetime(2024, 5, 1, tzinfo=__import__("datetime").timezone.utc)
    with Memory(settings=settings, embedder=HashEmbedder()) as mem:
        mem.add("I like green tea", "u")
        for k in range(6):  # six daily-note files
            mem.add_note(f"note {k} about the lighthouse", "u", when=day + __import__("datetime").timedelta(days=k))
        mem.search("lighthouse", "u")
        orig = psycopg.Cursor.execute
        sent = record_statements(monkeypatch)
        hits = mem.search("lighthouse", "u")
        monkeypatch.setattr(psycopg.Cursor, "execute", orig)
        assert len(hits) >= 6
        assert sum("memory_files" in q for q in sent) == 1, sent
        # a hand edit of one note file is still seen by the next search
        note = next((mem.workspace.user("u").dir / "memory").rglob("*.md"))
        note.write_text(note.read_text(encoding="utf-8") + "- the zeppelin hangar\n", encoding="utf-8")
        assert mem.search("zeppelin hangar", "u", limit=1)[0].record.content == "the zeppelin hangar"


def test_access_statistics_updates_stay_on_the_page(pg_dsn: str) -> None:
    """Rows as wide as the bundled model's (512-dim vector): the access-count update of a search's hits
    is a HOT update (no new index entries, HNSW included), which the page's free space allows."""
    from datetime import datetime, timezone

    rng = np.random.default_rng(3)
    ix = PostgresIndex(pg_dsn, dim=512, embedder_name="test")
    try:
        vecs = rng.normal(size=(60, 512)).astype(np.float32)
        ix.upsert([IndexItem(_rec(i), vecs[i] / np.linalg.norm(vecs[i]), f"word{i} about a lighthouse")
                   for i in range(60)])
        def pages() -> dict[str, int]:  # the page each row's live version is on
            with ix._cur() as cur:
                cur.execute("SELECT id, (ctid::text::point)[0]::int FROM user_memories")
                return dict(cur.fetchall())

        before = pages()
        assert len(set(before.values())) < 60  # several rows share a page
        for k in range(5):
            ix.record_access("u", [f"u{i}" for i in range(k, 60, 5)], datetime.now(timezone.utc))
            ix.flush_access()  # each search's accesses written on their own (they are queued: pg_access)
        # an update that leaves its page is a full one: the row gets new entries in every index
        assert pages() == before
        assert all(r.access_count == 1 for r in ix.get("u", list(before)))
    finally:
        ix.close()


def test_the_near_duplicate_check_follows_other_handles_and_is_exact(pg_dsn: str) -> None:
    """``vector_search_many`` with a score floor runs in process (``PgVectors``), caught up like the
    keyword index: rows written, archived and deleted through another handle are seen."""
    rng = np.random.default_rng(6)
    vecs = rng.normal(size=(40, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    writer = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    reader = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    try:
        writer.upsert([IndexItem(_rec(i), vecs[i], "w") for i in range(30)])
        assert [r[0][0] for r in reader.vector_search_many("u", vecs[:30], 1, min_score=0.999)] == \
            [f"u{i}" for i in range(30)]
        writer.delete("u", ["u3"])
        writer.upsert([IndexItem(_rec(4).with_(is_active=False))])
        writer.upsert([IndexItem(_rec(i), vecs[i], "w") for i in range(30, 40)])
        writer.upsert([IndexItem(_rec(5), -vecs[5], None)])  # a changed vector
        got = reader.vector_search_many("u", vecs, 3, min_score=0.5)
        live = {i: (-vecs[5] if i == 5 else vecs[i]) for i in range(40) if i not in (3, 4)}
        for q in range(40):
            scores = sorted(((float(vecs[q] @ v), f"u{i}") for i, v in live.items()), key=lambda x: -x[0])
            want = [mid for s, mid in scores[:3] if s >= 0.5]
            assert [mid for mid, _ in got[q]] == want, q
        assert "u3" not in {m for r in got for m, _ in r} and "u4" not in {m for r in got for m, _ in r}
    finally:
        writer.close()
        reader.close()
