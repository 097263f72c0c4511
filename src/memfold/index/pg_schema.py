"""PostgreSQL side of the index: the driver import, connecting with a clear error, and the
schema with its numbered migrations (a version table, applied under an advisory lock so that
several processes opening the same database at once migrate it exactly once)."""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ConfigError, MemoryIndexError

log = logging.getLogger("memfold")

SETTING = "[index] dsn (MEMFOLD_INDEX__DSN)"
HNSW_MAX_DIM = 2000  # pgvector cannot build an HNSW index over wider `vector` columns
_LOCK_KEY = 0x6D656D66  # pg_advisory_xact_lock key of schema migrations ("memf")


def driver() -> Any:
    """The psycopg module with pgvector's adapter, or a ConfigError saying what to install."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"[index] backend = 'postgres' needs the PostgreSQL driver ({exc.name} is missing): "
            "pip install 'memfold[postgres]'") from exc
    return psycopg


def describe(dsn: str) -> str:
    """Where a DSN points, without its password."""
    psycopg = driver()
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an unparsable DSN"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"{parts.get('user') or '?'}@{host}:{port}/{parts.get('dbname') or '?'}"


def connect(dsn: str) -> Any:
    """An autocommit connection in UTC with the HNSW search settings, or a MemoryIndexError naming the setting."""
    psycopg = driver()
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"setting {SETTING} is not a valid PostgreSQL DSN: {exc}") from exc
    except psycopg.OperationalError as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MemoryIndexError(
            f"cannot connect to PostgreSQL at {describe(dsn)} given by {SETTING}: {msg}") from exc
    conn.execute("SET TIME ZONE 'UTC'")
    # exact-enough filtered search: keep scanning the graph until `limit` rows of the namespace are found
    conn.execute("SET hnsw.ef_search = 100")
    conn.execute("SET hnsw.iterative_scan = strict_order")
    return conn


def _v1(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    ann = ("CREATE INDEX IF NOT EXISTS user_memories_embedding ON user_memories "
           f"USING hnsw (embedding vector_cosine_ops) WITH (m = {int(hnsw[0])}, ef_construction = {int(hnsw[1])}) "
           "WHERE is_active" if dim <= HNSW_MAX_DIM else "")
    return [s for s in (
        # seed 003 §3.1 columns, plus what the engine keeps: file anchor, context, hashes, terms
        f"""CREATE TABLE IF NOT EXISTS user_memories (
            n BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            agent_id TEXT,
            memory_type TEXT NOT NULL,
            content TEXT NOT NULL,
            context TEXT NOT NULL DEFAULT '',
            structured_data JSONB NOT NULL DEFAULT '{{}}',
            source_ids TEXT[] NOT NULL DEFAULT '{{}}',
            source_session_id TEXT,
            file TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            importance_score DOUBLE PRECISION NOT NULL DEFAULT 0.5,
            confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at TIMESTAMPTZ,
            is_active BOOLEAN NOT NULL DEFAULT TRUE,
            superseded_by TEXT,
            content_hash TEXT NOT NULL DEFAULT '',
            embedding vector({dim}) NOT NULL,
            terms TEXT[])""",
        "COMMENT ON COLUMN user_memories.terms IS "
        "'keyword terms made by memfold.text.terms (words + CJK bigrams); NULL = not keyword-searchable'",
        "CREATE INDEX IF NOT EXISTS user_memories_user_n ON user_memories (user_id, n)",
        "CREATE INDEX IF NOT EXISTS user_memories_user_file ON user_memories (user_id, file)",
        "CREATE INDEX IF NOT EXISTS user_memories_user_type ON user_memories (user_id, memory_type)",
        "CREATE INDEX IF NOT EXISTS user_memories_active ON user_memories (is_active, importance_score DESC)",
        "CREATE INDEX IF NOT EXISTS user_memories_terms ON user_memories USING gin (terms)",
        ann,
        """CREATE TABLE IF NOT EXISTS memory_relations (
            user_id TEXT NOT NULL,
            source_memory_id TEXT NOT NULL,
            target_memory_id TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            strength DOUBLE PRECISION NOT NULL DEFAULT 0.5,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (source_memory_id, target_memory_id, relation_type))""",
        "CREATE INDEX IF NOT EXISTS memory_relations_target ON memory_relations (target_memory_id)",
        """CREATE TABLE IF NOT EXISTS memory_history (
            n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            user_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            action TEXT NOT NULL,
            at TIMESTAMPTZ NOT NULL,
            old_content TEXT,
            new_content TEXT,
            detail JSONB NOT NULL DEFAULT '{}')""",
        "CREATE INDEX IF NOT EXISTS memory_history_memory ON memory_history (user_id, memory_id, n)",
        """CREATE TABLE IF NOT EXISTS memory_files (
            user_id TEXT NOT NULL, file TEXT NOT NULL, mtime_ns BIGINT NOT NULL, size BIGINT NOT NULL,
            PRIMARY KEY (user_id, file))""",
        """CREATE TABLE IF NOT EXISTS memory_state (
            user_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, value JSONB NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (user_id, kind, key))""",
        """CREATE TABLE IF NOT EXISTS memory_access_log (
            n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, user_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL,
            ids TEXT[] NOT NULL)""",
    ) if s]


def _v2(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """BM25 needs the number of searchable rows and their total length at every query; counting
    them per query costs a scan of the table, so a trigger keeps the totals in a few shard rows
    (by backend pid, so that concurrent writers rarely wait on the same row). And the terms index
    is updated in place, so that keyword latency stays flat right after a bulk ingest."""
    return [
        """CREATE TABLE IF NOT EXISTS memory_term_stats (
            shard INTEGER PRIMARY KEY, nrow BIGINT NOT NULL DEFAULT 0, ntok BIGINT NOT NULL DEFAULT 0)""",
        """CREATE OR REPLACE FUNCTION memfold_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE dn BIGINT := 0; dt BIGINT := 0;
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.terms IS NOT NULL THEN
                dn := dn - 1; dt := dt - 1 - cardinality(OLD.terms);
            END IF;
            IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.terms IS NOT NULL THEN
                dn := dn + 1; dt := dt + 1 + cardinality(NEW.terms);
            END IF;
            IF dn <> 0 OR dt <> 0 THEN
                INSERT INTO memory_term_stats AS s VALUES (pg_backend_pid() % 8, dn, dt)
                ON CONFLICT (shard) DO UPDATE SET nrow = s.nrow + EXCLUDED.nrow, ntok = s.ntok + EXCLUDED.ntok;
            END IF;
            RETURN NULL;
        END $$""",
        "DROP TRIGGER IF EXISTS user_memories_term_stats ON user_memories",
        "CREATE TRIGGER user_memories_term_stats AFTER INSERT OR DELETE OR UPDATE OF terms ON user_memories "
        "FOR EACH ROW EXECUTE FUNCTION memfold_term_stats()",
        # GIN's pending list makes every query after a bulk ingest scan it until vacuum: update in place
        "ALTER INDEX user_memories_terms SET (fastupdate = off)",
        "DELETE FROM memory_term_stats",
        "INSERT INTO memory_term_stats SELECT 0, count(*), count(*) + coalesce(sum(cardinality(terms)), 0) "
        "FROM user_memories WHERE terms IS NOT NULL",
    ]


def _v3(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """BM25 statistics per namespace (SPEC §5: another user's rows never change your scores): the
    trigger keeps searchable rows and their total number of terms per user_id, in shard rows."""
    return [
        """CREATE TABLE IF NOT EXISTS memory_term_stats_user (
            user_id TEXT NOT NULL, shard INTEGER NOT NULL, nrow BIGINT NOT NULL DEFAULT 0,
            ntok BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (user_id, shard))""",
        """CREATE OR REPLACE FUNCTION memfold_term_stats_user() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.terms IS NOT NULL THEN
                INSERT INTO memory_term_stats_user AS s VALUES (OLD.user_id, pg_backend_pid() % 8, -1,
                                                               -cardinality(OLD.terms))
                ON CONFLICT (user_id, shard) DO UPDATE SET nrow = s.nrow + EXCLUDED.nrow, ntok = s.ntok + EXCLUDED.ntok;
            END IF;
            IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.terms IS NOT NULL THEN
                INSERT INTO memory_term_stats_user AS s VALUES (NEW.user_id, pg_backend_pid() % 8, 1,
                                                               cardinality(NEW.terms))
                ON CONFLICT (user_id, shard) DO UPDATE SET nrow = s.nrow + EXCLUDED.nrow, ntok = s.ntok + EXCLUDED.ntok;
            END IF;
            RETURN NULL;
        END $$""",
        "DROP TRIGGER IF EXISTS user_memories_term_stats ON user_memories",
        "DROP TRIGGER IF EXISTS user_memories_term_stats_user ON user_memories",
        "CREATE TRIGGER user_memories_term_stats_user AFTER INSERT OR DELETE OR UPDATE OF terms, user_id "
        "ON user_memories FOR EACH ROW EXECUTE FUNCTION memfold_term_stats_user()",
        "DROP TABLE IF EXISTS memory_term_stats",
        "DELETE FROM memory_term_stats_user",
        "INSERT INTO memory_term_stats_user SELECT user_id, 0, count(*), coalesce(sum(cardinality(terms)), 0) "
        "FROM user_memories WHERE terms IS NOT NULL GROUP BY user_id",
    ]


def _v4(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """Vectors stored inside the row (STORAGE MAIN: out of line only when a row would not fit a
    page): a 512-dim vector is 2 KB, over the TOAST threshold, so each one was fetched from the
    TOAST table and an exact scan of 6k rows read 36k buffers (25 ms). Rows written before keep
    their storage until rewritten."""
    return ["ALTER TABLE user_memories ALTER COLUMN embedding SET STORAGE MAIN",
            # and the keyword terms too: else they are the first column moved out to make room, and
            # BM25 reads them three times per candidate row (15 ms instead of 8 at 6k rows)
            "ALTER TABLE user_memories ALTER COLUMN terms SET STORAGE MAIN"]


def _v5(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """Keyword search moves into the process (``pg_search.PgKeywords``): a change counter per
    namespace, stamped on the rows written and on tombstones of the rows deleted; the keyword
    statistics trigger and the GIN index it served go (every write paid for them). Vectors may
    follow their row (write-ahead mode: ``engine/write/vector_worker.py``), found by a partial index.
    Pages keep 30 % free: a row with a 512-dim vector is ~2.5 KB, so at 90 % a page had no room for
    a second version of one of its rows and every access-count update (each search) was a full
    update that inserted the row into every index, HNSW included (28 ms p50 for a search's 10 hits
    at 2k rows); at 70 % the update stays on the page (HOT, 3.9 ms), for a table about a third larger.
    Rows written before keep their pages until rewritten."""
    return [
        "ALTER TABLE user_memories ADD COLUMN IF NOT EXISTS seq BIGINT NOT NULL DEFAULT 0",
        "CREATE INDEX IF NOT EXISTS user_memories_user_seq ON user_memories (user_id, seq)",
        "CREATE TABLE IF NOT EXISTS memory_seq (user_id TEXT PRIMARY KEY, seq BIGINT NOT NULL, floor BIGINT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS memory_tombstones (user_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS memory_tombstones_user_seq ON memory_tombstones (user_id, seq)",
        "ALTER TABLE user_memories ALTER COLUMN embedding DROP NOT NULL",
        "CREATE INDEX IF NOT EXISTS user_memories_pending ON user_memories (n) WHERE embedding IS NULL",
        "ALTER TABLE user_memories SET (fillfactor = 70)",
        "DROP TRIGGER IF EXISTS user_memories_term_stats_user ON user_memories",
        "DROP TRIGGER IF EXISTS user_memories_term_stats ON user_memories",
        "DROP FUNCTION IF EXISTS memfold_term_stats_user()",
        "DROP FUNCTION IF EXISTS memfold_term_stats()",
        "DROP TABLE IF EXISTS memory_term_stats_user",
        "DROP TABLE IF EXISTS memory_term_stats",
        "DROP INDEX IF EXISTS user_memories_terms",
    ]


def _v6(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """Access statistics beside the rows (``memory_access``), read through ``memory_rows``: a search's
    hits were counted by updating their rows, ~2.7 KB each with a 512-dim vector, and a page at
    ``fillfactor`` 70 holding two of them has no room for a third version, so such an update left its
    page and inserted the row into every index, HNSW included (38 % of the updates of a repeated
    query at 10k rows; the test that checked they stayed on the page failed one run in two). Now an
    access adds to a narrow row of its own; reads add it to the row's stored count (``memory_rows``);
    a write of the row folds it in (``PostgresIndex.upsert``); deleting the row deletes it. No foreign
    key: its check would lock the memory row, and a write holding that row while it waits for the
    statistics' row could deadlock with a flush."""
    return [
        """CREATE TABLE IF NOT EXISTS memory_access (
            id TEXT PRIMARY KEY, k INTEGER NOT NULL, at TIMESTAMPTZ NOT NULL)""",
        "CREATE OR REPLACE VIEW memory_rows AS SELECT m.n, m.id, m.user_id, m.agent_id, m.memory_type, m.content, "
        "m.context, m.structured_data, m.source_ids, m.source_session_id, m.file, m.created_at, m.updated_at, "
        "m.importance_score, m.confidence, m.access_count + coalesce(a.k, 0) AS access_count, "
        "greatest(m.last_accessed_at, a.at) AS last_accessed_at, m.is_active, m.superseded_by, m.content_hash, "
        "m.embedding, m.terms, m.seq FROM user_memories m LEFT JOIN memory_access a ON a.id = m.id",
    ]


def _v7(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """The usage record: each search's query (redacted), time and the ids it returned, bounded by
    age and count (``[usage]``), deleted with the memories it names."""
    return [
        """CREATE TABLE IF NOT EXISTS memory_usage_log (
            n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, user_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL,
            query TEXT NOT NULL, ids TEXT[] NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS memory_usage_log_user ON memory_usage_log (user_id, n)",
        "CREATE INDEX IF NOT EXISTS memory_usage_log_ids ON memory_usage_log USING gin (ids)",
    ]


def _v8(dim: int, hnsw: tuple[int, int] = (16, 64)) -> list[str]:
    """Second vectors (``[search] profile = "quality"``: a second embedding model's vector of each
    active row, ``pg_second.py``), deleted by row triggers when their row is deleted or its words
    change. No foreign key: its check would lock the memory row (see ``_v6``). The trigger function
    keeps the search_path it was made with, so it finds the table whatever the session's path."""
    return [
        """CREATE TABLE IF NOT EXISTS memory_second_vectors (
            id TEXT PRIMARY KEY, user_id TEXT NOT NULL, model TEXT NOT NULL, embedding vector NOT NULL)""",
        "CREATE OR REPLACE FUNCTION memfold_second_vector_gone() RETURNS trigger LANGUAGE plpgsql "
        "SET search_path FROM CURRENT AS $$ BEGIN DELETE FROM memory_second_vectors WHERE id = OLD.id; "
        "RETURN NULL; END $$",
        "DROP TRIGGER IF EXISTS memfold_second_vector_deleted ON user_memories",
        "CREATE TRIGGER memfold_second_vector_deleted AFTER DELETE ON user_memories FOR EACH ROW "
        "EXECUTE FUNCTION memfold_second_vector_gone()",
        "DROP TRIGGER IF EXISTS memfold_second_vector_stale ON user_memories",
        "CREATE TRIGGER memfold_second_vector_stale AFTER UPDATE OF content, context ON user_memories FOR EACH ROW "
        "WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.context IS DISTINCT FROM NEW.context) "
        "EXECUTE FUNCTION memfold_second_vector_gone()",
    ]


# version -> (description, statements for a given vector dimension). Append, never edit.
MIGRATIONS: dict[int, tuple[str, Any]] = {
    1: ("memories, relations, history, file states, state store, access log; HNSW + GIN indexes", _v1),
    2: ("keyword statistics (searchable rows, total length) kept by a trigger", _v2),
    3: ("keyword statistics per namespace", _v3),
    4: ("vectors stored in the row", _v4),
    5: ("change counters and tombstones for in-process keyword search; vectors may follow their row", _v5),
    6: ("access statistics beside the rows, read through the memory_rows view", _v6),
    7: ("the usage record: queries, times and the ids they returned", _v7),
    8: ("second vectors of another embedding model, deleted with their row or its words", _v8),
}
SCHEMA_VERSION = max(MIGRATIONS)


def ensure_schema(conn: Any, dim: int, embedder_name: str, hnsw: tuple[int, int] = (16, 64)) -> int:
    """Create or upgrade the schema in the connection's search_path; check the embedder. Returns the version.
    ``hnsw`` = (m, ef_construction) of the HNSW index when this call creates it."""
    if not isinstance(dim, int) or dim <= 0:
        raise MemoryIndexError(f"vector dimension must be a positive integer, got {dim!r}")
    psycopg = driver()
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            _ensure_vector_extension(conn, psycopg)
            conn.execute("""CREATE TABLE IF NOT EXISTS memfold_schema_version (
                version INTEGER PRIMARY KEY, description TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now())""")
            conn.execute("CREATE TABLE IF NOT EXISTS memfold_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = conn.execute("SELECT max(version) FROM memfold_schema_version").fetchone()
            current = int(row[0] or 0)
            if current > SCHEMA_VERSION:
                raise MemoryIndexError(
                    f"the PostgreSQL index at {describe(conn.info.dsn)} has schema version {current}, newer than "
                    f"this memfold supports ({SCHEMA_VERSION}); upgrade memfold")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                description, statements = MIGRATIONS[version]
                for stmt in statements(dim, hnsw):
                    conn.execute(stmt)
                conn.execute("INSERT INTO memfold_schema_version (version, description) VALUES (%s, %s)",
                             (version, description))
                log.info("PostgreSQL index: applied schema migration %d (%s)", version, description)
            _check_meta(conn, dim, embedder_name)
    except psycopg.Error as exc:
        raise MemoryIndexError(f"cannot prepare the PostgreSQL index at {describe(conn.info.dsn)}: {exc}") from exc
    return SCHEMA_VERSION


def _ensure_vector_extension(conn: Any, psycopg: Any) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise MemoryIndexError(
            f"the database at {describe(conn.info.dsn)} has no pgvector extension and memfold cannot create it "
            f"({str(exc).strip().splitlines()[0]}); install pgvector and run 'CREATE EXTENSION vector' as a "
            "superuser") from exc


def _check_meta(conn: Any, dim: int, embedder_name: str) -> None:
    meta = dict(conn.execute("SELECT key, value FROM memfold_meta").fetchall())
    if not meta:
        conn.execute("INSERT INTO memfold_meta VALUES ('embedder', %s), ('dim', %s)", (embedder_name, str(dim)))
        return
    if meta.get("embedder") != embedder_name or int(meta.get("dim", 0)) != dim:
        raise MemoryIndexError(
            f"the PostgreSQL index at {describe(conn.info.dsn)} was built with embedder {meta.get('embedder')!r} "
            f"(dim {meta.get('dim')}), but {embedder_name!r} (dim {dim}) is configured; point {SETTING} at an "
            "empty database or schema and run 'memfold reindex' (or 'memfold migrate') to rebuild it")
