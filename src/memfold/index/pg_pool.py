"""The PostgreSQL index's connection pool (``psycopg_pool``) and the settings it is made from.

Every call of ``PostgresIndex`` borrows one connection for one statement or one transaction, so
the threads of a process (a server's request workers, the write-ahead vector worker) query in
parallel instead of queueing on one connection. Each connection is set up once when the pool
opens it: UTC, pgvector's type adapter and the HNSW search settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, MemoryIndexError
from .pg_schema import SETTING, describe, driver


@dataclass(frozen=True)
class PgOptions:
    """``[index]`` settings of the PostgreSQL backend (README: "PostgreSQL settings")."""

    pool_min: int = 1  # connections kept open
    pool_max: int = 8  # connections at most (per process)
    pool_timeout: float = 30.0  # seconds a call waits for a free connection before failing
    hnsw_m: int = 16  # HNSW graph degree (when the index is created)
    hnsw_ef_construction: int = 64  # HNSW build-time candidate list (when the index is created)
    hnsw_ef_search: int = 100  # HNSW query-time candidate list (every connection)
    access_delay_ms: int = 100  # searches' access statistics written this long after, in one transaction; 0: inside

    def check(self) -> "PgOptions":
        bounds = {"pool_min": (0, 1000), "pool_max": (1, 1000), "hnsw_m": (2, 100),
                  "hnsw_ef_construction": (4, 1000), "hnsw_ef_search": (1, 1000),
                  "access_delay_ms": (0, 60_000)}
        for key, (lo, hi) in bounds.items():
            v = getattr(self, key)
            if not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"setting [index] {key} must be an integer from {lo} to {hi}, got {v!r}")
        if self.pool_min > self.pool_max:
            raise ConfigError(f"setting [index] pool_min ({self.pool_min}) must not exceed pool_max ({self.pool_max})")
        if not self.pool_timeout > 0:
            raise ConfigError(f"setting [index] pool_timeout must be a positive number of seconds, "
                              f"got {self.pool_timeout!r}")
        if not self.hnsw_ef_construction >= 2 * self.hnsw_m:
            raise ConfigError(f"setting [index] hnsw_ef_construction ({self.hnsw_ef_construction}) must be at least "
                              f"twice hnsw_m ({self.hnsw_m}) (pgvector's rule)")
        return self


def configure(conn: Any, ef_search: int) -> None:
    """What every connection of the index needs before its first query."""
    from pgvector.psycopg import register_vector

    conn.execute("SET TIME ZONE 'UTC'")
    # exact-enough filtered search: keep scanning the graph until `limit` rows of the namespace are found
    conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
    conn.execute("SET hnsw.iterative_scan = strict_order")
    register_vector(conn)


class Pool:
    """A ``psycopg_pool.ConnectionPool`` of autocommit connections with errors in memfold's words."""

    def __init__(self, dsn: str, opts: PgOptions):
        psycopg = driver()
        try:
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError as exc:
            raise ConfigError("[index] backend = 'postgres' needs psycopg-pool: pip install 'memfold[postgres]'") \
                from exc
        self._timeout_error = PoolTimeout
        self._psycopg = psycopg
        self.opts = opts
        self.where = describe(dsn)
        self.pool = ConnectionPool(dsn, min_size=opts.pool_min, max_size=opts.pool_max, open=False,
                                   kwargs={"autocommit": True, "connect_timeout": 10},
                                   configure=lambda c: configure(c, opts.hnsw_ef_search), timeout=opts.pool_timeout,
                                   name="memfold")
        self.pool.open(wait=False)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except self._timeout_error as exc:
            raise MemoryIndexError(
                f"no PostgreSQL connection to {self.where} (given by {SETTING}) within {self.opts.pool_timeout:g} s: "
                f"{exc}; raise [index] pool_max or check the server") from exc

    def stats(self) -> dict[str, int]:
        return dict(self.pool.get_stats())

    def close(self) -> None:
        self.pool.close()
