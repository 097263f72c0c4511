"""Search snapshots of the SQLite index (index/snapshot.py): a process that closes the index after
enough changes leaves a snapshot; the next one starts from it plus the rows changed since, and
finds exactly what a process building from the rows finds. Stale, foreign or damaged snapshots
are ignored."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from memfold.index import snapshot
from memfold.index.base import IndexItem
from memfold.index.sqlite import SqliteIndex

from ..contract.conftest import rec

DIM = 8
WORDS = [f"w{i}" for i in range(60)]


def _items(rng: np.random.Generator, start: int, n: int) -> list[IndexItem]:
    out = []
    for i in range(start, start + n):
        v = rng.normal(size=DIM).astype(np.float32)
        text = " ".join(rng.choice(WORDS, 4))
        out.append(IndexItem(rec(f"m{i}", text), v / np.linalg.norm(v), text))
    return out


def _answers(ix: SqliteIndex, rng: np.random.Generator) -> list[object]:
    out: list[object] = []
    for _ in range(10):
        out.append(ix.keyword_search("alice", list(rng.choice(WORDS, 2)), 20))
        out.append(ix.vector_search("alice", rng.normal(size=DIM).astype(np.float32), 20))
    return out


def _same(a: list[object], b: list[object]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert [m for m, _ in x] == [m for m, _ in y]  # type: ignore[attr-defined]
        assert [s for _, s in x] == pytest.approx([s for _, s in y], rel=1e-6)  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "MIN_ROWS", 300)


def test_a_new_process_starts_from_the_snapshot_plus_later_changes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    path = tmp_path / "index.db"
    first = SqliteIndex(path, dim=DIM, embedder_name="test")
    first.upsert(_items(rng, 0, 1500))
    first.keyword_search("alice", ["w1"], 5)
    first.close()
    snap = snapshot.path_for(path, "alice")
    assert snap.exists()
    writer = SqliteIndex(path, dim=DIM, embedder_name="test")  # another process changes rows afterwards
    writer.upsert(_items(rng, 1500, 200))
    writer.delete("alice", [f"m{i}" for i in range(0, 1500, 5)])
    writer.upsert([IndexItem(r.with_(is_active=False)) for r in writer.get("alice", ["m1", "m2", "m3"])])
    writer.upsert([IndexItem(r, None, "w7 w7 w7") for r in writer.get("alice", ["m4", "m6"])])
    writer.upsert(_items(rng, 0, 1))  # a deleted id comes back with a new vector and terms
    writer._search.matrices.clear()  # this writer loaded nothing to snapshot
    writer.close()
    mtime = snap.stat().st_mtime_ns
    resumed = SqliteIndex(path, dim=DIM, embedder_name="test")
    got = _answers(resumed, np.random.default_rng(9))
    assert resumed._search.snapshot_seq["alice"] is not None  # it really started from the snapshot
    resumed._search.matrices.clear()
    resumed.close()
    snap.unlink()
    rebuilt = SqliteIndex(path, dim=DIM, embedder_name="test")
    _same(got, _answers(rebuilt, np.random.default_rng(9)))
    rebuilt.close()
    assert snap.exists() and snap.stat().st_mtime_ns != mtime  # the rebuilding process cut a new one


def test_stale_foreign_and_damaged_snapshots_are_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(2)
    path = tmp_path / "index.db"
    ix = SqliteIndex(path, dim=DIM, embedder_name="test")
    ix.upsert(_items(rng, 0, 1200))
    ix.vector_search("alice", np.ones(DIM, dtype=np.float32), 1)
    ix.close()
    snap = snapshot.path_for(path, "alice")
    kept = snap.read_bytes()
    # the index file is recreated (deleted, then rebuilt with other rows): the old snapshot is foreign
    for p in tmp_path.glob("index.db*"):
        if p.is_file():
            p.unlink()
    snap.parent.mkdir(exist_ok=True)
    snap.write_bytes(kept)
    ix = SqliteIndex(path, dim=DIM, embedder_name="test")
    ix.upsert(_items(np.random.default_rng(3), 5000, 400))
    answers = _answers(ix, np.random.default_rng(4))
    assert ix._search.snapshot_seq["alice"] is None
    assert all(5000 <= int(m[1:]) < 5400 for a in answers for m, _ in a)  # type: ignore[attr-defined]
    ix._search.matrices.clear()
    ix.close()
    snap.write_bytes(b"not a snapshot at all")
    with caplog.at_level(logging.WARNING):
        ix = SqliteIndex(path, dim=DIM, embedder_name="test")
        _same(answers, _answers(ix, np.random.default_rng(4)))
    assert "ignoring the search snapshot" in caplog.text
    ix.close()
