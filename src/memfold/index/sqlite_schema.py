"""Tables of the embedded SQLite index.

Version 2 keeps each row's keyword terms in ``memories.terms`` (NULL: not keyword-searchable)
and searches them in process (``keywords.KeywordIndex``); version 1 kept them in an FTS5 table,
which ``migrate`` folds back into the column. Version 3 adds ``second_vectors``: a row's vector
of a second embedding model (``SecondVectors``, ``[search] profile = "quality"``), deleted by
triggers when the row is deleted or its words change; an index of version 2 gets the empty table
and its rows get their vectors from the next ``Memory`` with that profile."""

SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    agent_id TEXT,
    memory_type TEXT NOT NULL,
    content TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '',
    structured_data TEXT NOT NULL DEFAULT '{}',
    source_ids TEXT NOT NULL DEFAULT '[]',
    source_session_id TEXT,
    file TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    importance REAL NOT NULL DEFAULT 0.5,
    confidence REAL NOT NULL DEFAULT 1.0,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    is_active INTEGER NOT NULL DEFAULT 1,
    superseded_by TEXT,
    content_hash TEXT NOT NULL DEFAULT '',
    embedding BLOB,
    seq INTEGER NOT NULL DEFAULT 0,
    terms TEXT
);
CREATE INDEX IF NOT EXISTS memories_user_file ON memories (user_id, file);
CREATE INDEX IF NOT EXISTS memories_user_seq ON memories (user_id, seq);
CREATE INDEX IF NOT EXISTS memories_pending ON memories (rowid) WHERE embedding IS NULL;
CREATE TABLE IF NOT EXISTS tombstones (seq INTEGER NOT NULL, user_id TEXT NOT NULL, id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tombstones_user_seq ON tombstones (user_id, seq);
CREATE TABLE IF NOT EXISTS history (
    n INTEGER PRIMARY KEY, user_id TEXT NOT NULL, memory_id TEXT NOT NULL, action TEXT NOT NULL,
    at TEXT NOT NULL, old_content TEXT, new_content TEXT, detail TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS history_memory ON history (user_id, memory_id);
CREATE TABLE IF NOT EXISTS relations (
    user_id TEXT NOT NULL, source_id TEXT NOT NULL, target_id TEXT NOT NULL, relation TEXT NOT NULL,
    strength REAL NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (source_id, target_id, relation));
CREATE TABLE IF NOT EXISTS files (
    user_id TEXT NOT NULL, file TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    PRIMARY KEY (user_id, file));
CREATE TABLE IF NOT EXISTS state (
    user_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, kind, key));
CREATE TABLE IF NOT EXISTS access_log (user_id TEXT NOT NULL, at TEXT NOT NULL, ids TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS usage_log (
    n INTEGER PRIMARY KEY, user_id TEXT NOT NULL, at TEXT NOT NULL, query TEXT NOT NULL, ids TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS usage_log_user ON usage_log (user_id, n);
CREATE INDEX IF NOT EXISTS usage_log_user_at ON usage_log (user_id, at);
CREATE TABLE IF NOT EXISTS second_vectors (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS second_vectors_deleted AFTER DELETE ON memories
    BEGIN DELETE FROM second_vectors WHERE id = OLD.id; END;
CREATE TRIGGER IF NOT EXISTS second_vectors_stale AFTER UPDATE OF content, context ON memories
    WHEN NEW.content IS NOT OLD.content OR NEW.context IS NOT OLD.context
    BEGIN DELETE FROM second_vectors WHERE id = OLD.id; END;
"""


def migrate(db) -> None:  # type: ignore[no-untyped-def]
    """An index written by an older schema, brought up to this one in the caller's transaction (after
    ``SCHEMA`` created the tables it lacked): schema 1's FTS5 terms move into ``memories.terms`` and
    the FTS5 table goes."""
    cols = {r[1] for r in db.execute("PRAGMA table_info(memories)")}
    if "terms" not in cols:
        db.execute("ALTER TABLE memories ADD COLUMN terms TEXT")
    has_fts = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'").fetchone()
    if has_fts:
        db.execute("UPDATE memories SET terms = (SELECT f.terms FROM memories_fts f WHERE f.rowid = memories.rowid)")
        db.execute("DROP TABLE memories_fts")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
