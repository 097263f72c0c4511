"""What only the PostgreSQL backend has: selection by config, clear errors, schema versions,
the HNSW index, concurrent first opens."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memfold.config import load_settings
from memfold.errors import ConfigError, MemoryIndexError
from memfold.index.base import IndexItem, open_index
from memfold.index.pg_schema import SCHEMA_VERSION
from memfold.index.postgres import PostgresIndex
from memfold.models import MemoryRecord, MemoryType, utcnow


def _rec(i: int, user: str = "u") -> MemoryRecord:
    now = utcnow()
    return MemoryRecord(id=f"m{i}", user_id=user, memory_type=MemoryType.FACT, content=f"memory {i}",
                        created_at=now, updated_at=now)


def test_backend_is_chosen_by_config(pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_INDEX__BACKEND", "postgres")
    monkeypatch.setenv("MEMFOLD_INDEX__DSN", pg_dsn)
    ix = open_index(load_settings(tmp_path), 8, "test")
    try:
        assert isinstance(ix, PostgresIndex) and ix.count("u") == 0
    finally:
        ix.close()
    assert not (tmp_path / "index.db").exists()


def test_missing_dsn_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[index\] dsn.*MEMFOLD_INDEX__DSN"):
        open_index(load_settings(tmp_path, index={"backend": "postgres"}), 8, "test")


def test_unreachable_server_names_the_setting_and_hides_the_password(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, index={"backend": "postgres",
                                              "dsn": "postgresql://memfold:s3cret@127.0.0.1:9/memdb"})
    with pytest.raises(MemoryIndexError) as err:
        open_index(settings, 8, "test")
    msg = str(err.value)
    assert "[index] dsn" in msg and "127.0.0.1:9/memdb" in msg and "s3cret" not in msg


def test_a_bad_dsn_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"\[index\] dsn"):
        PostgresIndex("host=x port=5432 this is not a dsn", dim=8, embedder_name="test")


def test_missing_driver_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` fail as if not installed
    settings = load_settings(tmp_path, index={"backend": "postgres", "dsn": "postgresql://localhost/x"})
    with pytest.raises(ConfigError, match=r"memfold\[postgres\]"):
        open_index(settings, 8, "test")


def test_schema_has_the_seed_columns_and_one_version_row(pg_dsn: str, pg_server) -> None:  # type: ignore[no-untyped-def]
    PostgresIndex(pg_dsn, dim=8, embedder_name="test").close()
    PostgresIndex(pg_dsn, dim=8, embedder_name="test").close()  # reopening migrates nothing
    schema = pg_dsn.split("search_path=")[1].split(",")[0]
    cols = dict(pg_server.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped", (f"{schema}.user_memories",)))
    seed = {"user_id": "text", "memory_type": "text", "content": "text", "structured_data": "jsonb",
            "embedding": "vector(8)", "source_session_id": "text", "created_at": "timestamp with time zone",
            "updated_at": "timestamp with time zone", "importance_score": "double precision",
            "access_count": "integer", "last_accessed_at": "timestamp with time zone", "is_active": "boolean",
            "confidence": "double precision"}
    assert {k: cols.get(k) for k in seed} == seed
    assert pg_server.execute(f"SELECT version FROM {schema}.memfold_schema_version ORDER BY 1") == [
        (v,) for v in range(1, SCHEMA_VERSION + 1)]
    idx = dict(pg_server.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)))
    assert "USING hnsw (embedding vector_cosine_ops)" in idx["user_memories_embedding"]
    assert "user_memories_terms" not in idx  # keyword search runs in process (schema 5)
    assert "WHERE (embedding IS NULL)" in idx["user_memories_pending"]
    assert {"memory_relations", "memory_history", "memory_state", "memory_files"} <= {
        r[0] for r in pg_server.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}


def test_a_newer_schema_is_refused(pg_dsn: str, pg_server) -> None:  # type: ignore[no-untyped-def]
    PostgresIndex(pg_dsn, dim=8, embedder_name="test").close()
    schema = pg_dsn.split("search_path=")[1].split(",")[0]
    pg_server.execute(f"INSERT INTO {schema}.memfold_schema_version VALUES (%s, 'from the future')",
                      (SCHEMA_VERSION + 1,))
    with pytest.raises(MemoryIndexError, match="newer than this memfold supports"):
        PostgresIndex(pg_dsn, dim=8, embedder_name="test")


def test_upgrading_a_version_1_database_backfills_keyword_statistics(pg_dsn: str, pg_server) -> None:  # type: ignore[no-untyped-def]
    ix = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    vec = np.eye(8, dtype=np.float32)[0]
    ix.upsert([IndexItem(_rec(i), vec, f"kiwi {'mango ' * i}word{i}") for i in range(6)])
    ix.delete("u", ["m5"])
    ix.upsert([IndexItem(_rec(4).with_(is_active=False))])
    scores = ix.keyword_search("u", ["kiwi", "mango"], 10)
    ix.close()
    schema = pg_dsn.split("search_path=")[1].split(",")[0]
    # back to what a version-1 database looks like, rows and all
    pg_server.execute(f"DROP VIEW {schema}.memory_rows")  # schema 6
    pg_server.execute(f"DROP TABLE {schema}.memory_seq, {schema}.memory_tombstones, {schema}.memory_access")
    pg_server.execute(f"DROP TRIGGER memfold_change_counter ON {schema}.user_memories")  # version 1 had none
    pg_server.execute(f"ALTER TABLE {schema}.user_memories DROP COLUMN seq")
    pg_server.execute(f"CREATE INDEX user_memories_terms ON {schema}.user_memories USING gin (terms)")
    pg_server.execute(f"DELETE FROM {schema}.memfold_schema_version WHERE version > 1")
    ix = PostgresIndex(pg_dsn, dim=8, embedder_name="test")
    try:
        assert pg_server.execute(f"SELECT max(version) FROM {schema}.memfold_schema_version") == [(SCHEMA_VERSION,)]
        assert [m for m, _ in ix.keyword_search("u", ["kiwi", "mango"], 10)] == [m for m, _ in scores]
        assert [s for _, s in ix.keyword_search("u", ["kiwi", "mango"], 10)] == pytest.approx([s for _, s in scores])
    finally:
        ix.close()


def test_concurrent_first_opens_migrate_once(pg_dsn: str, pg_server) -> None:  # type: ignore[no-untyped-def]
    errors: list[BaseException] = []
    opened: list[PostgresIndex] = []

    def open_() -> None:
        try:
            opened.append(PostgresIndex(pg_dsn, dim=8, embedder_name="test"))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=open_) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ix in opened:
        ix.close()
    assert errors == [] and len(opened) == 6
    schema = pg_dsn.split("search_path=")[1].split(",")[0]
    assert pg_server.execute(f"SELECT count(*) FROM {schema}.memfold_schema_version") == [(SCHEMA_VERSION,)]


def test_hnsw_search_is_used_and_finds_the_exact_neighbours(pg_dsn: str) -> None:
    """2,000 vectors of one namespace among 2,500. At this size the planner prefers an exact scan, so
    the test turns plain scans off to check that the HNSW index serves the backend's query (partial
    index on is_active, cosine operator, iterative scan filtered by user_id) with a high recall."""
    rng = np.random.default_rng(11)
    dim = 32
    vecs = rng.normal(size=(2500, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ix = PostgresIndex(pg_dsn, dim=dim, embedder_name="test")
    try:
        for start in range(0, 2500, 500):
            ix.upsert([IndexItem(_rec(i, "big" if i < 2000 else "small"), vecs[i], "") for i in range(start, start + 500)])
        with ix._cur() as cur:
            cur.execute("ANALYZE user_memories")
            cur.execute("SET enable_seqscan = off")
            cur.execute("SET enable_bitmapscan = off")
            cur.execute("EXPLAIN " + "SELECT id FROM user_memories WHERE user_id = 'big' AND is_active "
                        "ORDER BY embedding <=> %s LIMIT 10", (vecs[0],))
            plan = "\n".join(r[0] for r in cur.fetchall())
        assert "Index Scan using user_memories_embedding" in plan, plan
        queries = rng.normal(size=(20, dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        found = 0
        for q in queries:
            exact = {f"m{i}" for i in np.argsort(-(vecs[:2000] @ q))[:10]}
            got = ix.vector_search("big", q, 10)
            assert len(got) == 10 and all(m in {f"m{i}" for i in range(2000)} for m, _ in got)
            found += len(exact & {m for m, _ in got})
        assert found / 200 >= 0.95  # recall@10 of the approximate index against brute force
        assert ix.storage_bytes() > vecs.nbytes  # tables + HNSW/GIN indexes hold at least the raw vectors
        small = ix.vector_search("small", queries[0], 10)
        assert len(small) == 10 and all(int(m[1:]) >= 2000 for m, _ in small)
    finally:
        ix.close()
