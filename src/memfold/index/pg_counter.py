"""The PostgreSQL index's change counter and identity, for caches (``cache/``).

``memfold_meta`` holds ``change_counter``, bumped by a statement trigger on every insert, delete
and update of ``user_memories`` that touches anything but the access statistics, in the writing
transaction: other sessions see the new value exactly when they see the rows (a write of any
process, whatever its code path). ``instance`` names the database for keys of a shared cache.
Installed (or brought up to date when the table's columns changed) at open, under an advisory lock."""

from __future__ import annotations

from typing import Any

_LOCK_KEY = 0x6D656D63  # pg_advisory_xact_lock key of this installation ("memc")
TRIGGER = "memfold_change_counter"
ACCESS_COLUMNS = ("access_count", "last_accessed_at")  # reading memories updates these: not a change


def install(conn: Any) -> str:
    """Create the counter, the identity and the trigger if missing; returns the identity."""
    from psycopg import sql

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute("INSERT INTO memfold_meta VALUES ('change_counter', '0'), "
                     "('instance', md5(random()::text || clock_timestamp()::text)) ON CONFLICT (key) DO NOTHING")
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        cols = [r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'user_memories'::regclass AND attnum > 0 "
            "AND NOT attisdropped AND attgenerated = '' AND attidentity = '' ORDER BY attnum")
            if r[0] not in ACCESS_COLUMNS]
        want = sql.SQL("CREATE OR REPLACE TRIGGER {t} AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF {cols} "
                       "ON {s}.user_memories FOR EACH STATEMENT EXECUTE FUNCTION {s}.memfold_bump_change_counter()"
                       ).format(t=sql.Identifier(TRIGGER), s=sql.Identifier(schema),
                                cols=sql.SQL(", ").join(sql.Identifier(c) for c in cols))
        have = conn.execute("SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = %s "
                            "AND tgrelid = 'user_memories'::regclass", (TRIGGER,)).fetchone()
        if have is None or any(c not in have[0] for c in cols):
            conn.execute(sql.SQL(
                "CREATE OR REPLACE FUNCTION {s}.memfold_bump_change_counter() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN UPDATE {s}.memfold_meta SET value = (value::bigint + 1)::text WHERE key = 'change_counter'; "
                "RETURN NULL; END $$").format(s=sql.Identifier(schema)))
            conn.execute(want)
        return str(conn.execute("SELECT value FROM memfold_meta WHERE key = 'instance'").fetchone()[0])


def read(cur: Any) -> int:
    cur.execute("SELECT value FROM memfold_meta WHERE key = 'change_counter'")
    return int(cur.fetchone()[0])
