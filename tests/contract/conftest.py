"""Every test of the contract suite runs once per index backend: ``index`` is a SqliteIndex on a
temporary file or a PostgresIndex on a fresh schema of the session's PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memfold.index.base import Index, IndexItem
from memfold.models import MemoryRecord, MemoryType
from memfold.text.terms import fts_document

DIM = 8
BACKENDS = ["sqlite", "postgres"]
T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_index(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Index]]:
    """Opens (another handle on) one of this test's indexes:
    ``make_index(dim=8, embedder_name="test", name="main")``; each ``name`` is a separate, empty index."""
    opened: list[Any] = []
    schemas: dict[str, str] = {}
    drops: list[Callable[[], Any]] = []
    if backend == "postgres":  # set up first, so that the indexes are closed before their schema is dropped
        schemas["main"] = request.getfixturevalue("pg_dsn")

    def open_(dim: int = DIM, embedder_name: str = "test", name: str = "main") -> Index:
        if backend == "sqlite":
            from memfold.index.sqlite import SqliteIndex

            ix: Index = SqliteIndex(tmp_path / f"{name}.db", dim=dim, embedder_name=embedder_name)
        else:
            from memfold.index.postgres import PostgresIndex

            if name not in schemas:
                schemas[name] = request.getfixturevalue("pg_dsn") if name == "main" else _new_schema(request, name, drops)
            ix = PostgresIndex(schemas[name], dim=dim, embedder_name=embedder_name)
        opened.append(ix)
        return ix

    yield open_
    for ix in opened:
        ix.close()
    for drop in drops:
        drop()


def _new_schema(request: pytest.FixtureRequest, name: str, drops: list[Callable[[], Any]]) -> str:
    """A DSN on one more fresh schema (make_index drops it after closing its indexes)."""
    import secrets

    srv = request.getfixturevalue("pg_server")
    schema = f"mf_{name}_{secrets.token_hex(4)}"
    srv.execute(f"CREATE SCHEMA {schema}")
    drops.append(lambda: srv.execute(f"DROP SCHEMA {schema} CASCADE"))
    return srv.schema_dsn(schema)


@pytest.fixture
def index(make_index: Callable[..., Index]) -> Index:
    return make_index()


def unit(*values: float) -> np.ndarray:
    """A normalised vector of DIM columns from its first values."""
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def rec(mid: str, content: str, user_id: str = "alice", *, file: str = "MEMORY.md", minutes: int = 0,
        **fields: Any) -> MemoryRecord:
    at = T0 + timedelta(minutes=minutes)
    fields.setdefault("memory_type", MemoryType.FACT)
    return MemoryRecord(id=mid, user_id=user_id, content=content, created_at=at, updated_at=at, file=file, **fields)


def item(r: MemoryRecord, vector: np.ndarray | None, terms: str | None = "auto", content_hash: str = "h") -> IndexItem:
    return IndexItem(record=r, vector=vector, terms=fts_document(r.content) if terms == "auto" else terms,
                     content_hash=content_hash)
