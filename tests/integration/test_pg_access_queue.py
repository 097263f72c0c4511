"""Access statistics written behind the search on PostgreSQL (``index/pg_access.py``): this process
sees its accesses at once, other processes after the flush; a normal close loses nothing; the queue
is bounded (a full queue is written by the search that finds it full); a failed write keeps the
batch; a write of rows read with queued accesses does not count them twice; ``access_delay_ms = 0``
writes inside the search."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import ConfigError
from memfold.index.base import IndexItem
from memfold.index.pg_access import AccessQueue, Batch
from memfold.index.pg_pool import PgOptions
from memfold.index.postgres import PostgresIndex
from memfold.models import MemoryRecord, MemoryType

from ..support.hash_embedder import HashEmbedder

pytest.importorskip("psycopg_pool")

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def _rec(i: int, user: str = "u") -> MemoryRecord:
    return MemoryRecord(id=f"{user}{i}", user_id=user, memory_type=MemoryType.FACT, content=f"text {i}",
                        created_at=T0, updated_at=T0, file="MEMORY.md")


def _index(dsn: str, delay_ms: int = 60_000) -> PostgresIndex:
    return PostgresIndex(dsn, dim=4, embedder_name="test", options=PgOptions(access_delay_ms=delay_ms))


def _child(dsn: str, body: str) -> str:
    """A script for another process: an index on ``dsn`` with a long access delay, then ``body``."""
    return (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from datetime import datetime, timezone\n"
            "from memfold.index.pg_pool import PgOptions\nfrom memfold.index.postgres import PostgresIndex\n"
            f"ix = PostgresIndex({dsn!r}, dim=4, embedder_name='test', options=PgOptions(access_delay_ms=60000))\n"
            + body)


def _counts(ix: PostgresIndex | str, ids: list[str]) -> dict[str, int]:
    """What the tables hold (rows and their access statistics, not a handle's queue); ``ix``: an index or a DSN."""
    import psycopg

    with psycopg.connect(ix if isinstance(ix, str) else ix.dsn, autocommit=True) as conn:
        return dict(conn.execute("SELECT id, access_count FROM memory_rows WHERE id = ANY(%s)", (ids,)).fetchall())


def test_queued_accesses_are_seen_here_at_once_and_elsewhere_after_the_flush(pg_dsn: str) -> None:
    a, b = _index(pg_dsn), _index(pg_dsn)
    try:
        a.upsert([IndexItem(_rec(i), np.eye(4, dtype=np.float32)[i % 4], f"w{i}") for i in range(4)])
        a.record_access("u", ["u0", "u1", "u0"], T0 + timedelta(days=1))
        a.record_access("u", ["u1"], T0 + timedelta(days=2))
        mine = {r.id: (r.access_count, r.last_accessed_at) for r in a.get("u", ["u0", "u1", "u2"])}
        assert mine == {"u0": (2, T0 + timedelta(days=1)), "u1": (2, T0 + timedelta(days=2)), "u2": (0, None)}
        assert [r.access_count for r in a.list_records("u")] == [2, 2, 0, 0]
        assert [r.access_count for r in b.get("u", ["u0", "u1"])] == [0, 0]  # not written yet
        assert a.flush_access() == 2
        theirs = {r.id: (r.access_count, r.last_accessed_at) for r in b.get("u", ["u0", "u1", "u2"])}
        assert theirs == mine
        assert [r.access_count for r in a.get("u", ["u0", "u1"])] == [2, 2]  # not counted twice
        # the log keeps one entry per search
        with a._cur() as cur:
            cur.execute("SELECT ids FROM memory_access_log ORDER BY n")
            assert [r[0] for r in cur.fetchall()] == [["u0", "u1", "u0"], ["u1"]]
    finally:
        a.close()
        b.close()


def test_a_normal_close_writes_what_waits_also_in_another_process(pg_dsn: str, tmp_path: Path) -> None:
    ix = _index(pg_dsn)
    try:
        ix.upsert([IndexItem(_rec(i), np.eye(4, dtype=np.float32)[i % 4], f"w{i}") for i in range(3)])
    finally:
        ix.close()
    code = _child(pg_dsn, "for _ in range(50):\n    ix.record_access('u', ['u0', 'u2'], datetime.now(timezone.utc))\n"
                          "ix.close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    ix = _index(pg_dsn)
    try:
        assert _counts(ix, ["u0", "u1", "u2"]) == {"u0": 50, "u1": 0, "u2": 50}
    finally:
        ix.close()


def test_the_queue_is_bounded_and_a_full_queue_is_written_by_the_search_that_finds_it(pg_dsn: str) -> None:
    ix = _index(pg_dsn)
    try:
        ix.upsert([IndexItem(_rec(i), np.eye(4, dtype=np.float32)[i % 4], f"w{i}") for i in range(30)])
        assert ix._access is not None
        ix._access.max_rows = 8
        for k in range(30):
            ix.record_access("u", [f"u{k}", f"u{(k + 1) % 30}"], T0)
            assert len(ix._access) <= 8
        in_table = sum(_counts(ix, [f"u{i}" for i in range(30)]).values())
        assert 0 < in_table < 60  # the full queue was written by the searches; the rest waits
        ix.flush_access()
        assert _counts(ix, [f"u{i}" for i in range(30)]) == {f"u{i}": 2 for i in range(30)}
    finally:
        ix.close()


def test_log_entries_are_bounded_too_and_a_failed_write_keeps_the_batch() -> None:
    written: list[Batch] = []
    fail = [True]

    def write(batch: Batch, committing) -> None:  # type: ignore[no-untyped-def]
        if fail[0]:
            raise OSError("server gone")
        with committing():
            written.append(batch)

    q = AccessQueue(write, delay=60.0, max_calls=3)
    try:
        q.add("u", ["a"], T0)
        q.add("u", ["a", "b"], T0 + timedelta(hours=1))
        with pytest.raises(OSError):
            q.flush()
        q.add("u", ["b"], T0 + timedelta(hours=2))  # the queue holds 3 entries now
        with pytest.raises(OSError):  # full: this search writes it, which fails: nothing is dropped
            q.add("u", ["c"], T0 + timedelta(hours=3))
        fail[0] = False
        q.add("u", ["c"], T0 + timedelta(hours=3))
        assert len(written) == 1 and len(written[0].calls) == 3
        assert written[0].rows == {("u", "a"): (2, T0 + timedelta(hours=1)), ("u", "b"): (2, T0 + timedelta(hours=2))}
    finally:
        q.close()
    assert written[1].rows == {("u", "c"): (1, T0 + timedelta(hours=3))}  # close wrote the rest


def test_a_row_written_after_a_read_with_queued_accesses_is_not_counted_twice(pg_dsn: str) -> None:
    ix = _index(pg_dsn)
    try:
        ix.upsert([IndexItem(_rec(0), np.eye(4, dtype=np.float32)[0], "w0")])
        ix.record_access("u", ["u0"], T0)
        r = ix.get("u", ["u0"])[0]
        assert r.access_count == 1
        ix.upsert([IndexItem(r.with_(content="text zero"), np.eye(4, dtype=np.float32)[0], "w0 zero")])
        ix.flush_access()
        assert _counts(ix, ["u0"]) == {"u0": 1}
    finally:
        ix.close()


def test_delay_zero_writes_inside_the_search_and_bad_delays_are_refused(pg_dsn: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="access_delay_ms"):
        PgOptions(access_delay_ms=-1).check()
    cfg = {"backend": "postgres", "dsn": pg_dsn, "access_delay_ms": 0}
    with Memory(settings=load_settings(tmp_path / "ws", index=cfg, cache={"backend": "off"}),
                embedder=HashEmbedder()) as mem:
        mid = mem.add("I live in Oslo", infer=False).added[0].id
        mem.search("Oslo", limit=1)
        assert _counts(pg_dsn, [mid]) == {mid: 1}
    cfg["access_delay_ms"] = 100
    with Memory(settings=load_settings(tmp_path / "ws", index=cfg, cache={"backend": "memory"}),
                embedder=HashEmbedder()) as mem:
        mem.search("Oslo", limit=1)
        assert mem.get(mid).access_count == 2  # this process sees it before it is written
    assert _counts(pg_dsn, [mid]) == {mid: 2}  # written at close at the latest


def test_the_rows_of_several_files_in_one_query_are_those_of_each_file(pg_dsn: str) -> None:
    """``records_of_files`` (``build_context``'s recent notes in one round trip) = ``list_records`` per file,
    queued accesses included."""
    ix = _index(pg_dsn)
    try:
        files = ["memory/202405/20240501.md", "memory/202405/20240502.md", "MEMORY.md"]
        ix.upsert([IndexItem(_rec(i).with_(file=files[i % 3], is_active=i != 4), np.eye(4, dtype=np.float32)[i % 4],
                             f"w{i}") for i in range(9)])
        ix.record_access("u", ["u1"], T0)
        got = ix.records_of_files("u", files[:2] + ["memory/202405/20240503.md"])
        assert got == {f: ix.list_records("u", file=f) for f in files[:2] + ["memory/202405/20240503.md"]}
        assert [r.id for r in got[files[1]]] == ["u1", "u7"] and got[files[1]][0].access_count == 1
    finally:
        ix.close()


def test_a_search_after_a_hand_edit_is_not_answered_from_the_cache(pg_dsn: str, tmp_path: Path) -> None:
    """The change counter read with the files' states (one round trip, ``take_counter``) does not stand
    once the search's own sync writes the edited file's rows: the cached answer of before is not reused."""
    cfg = {"backend": "postgres", "dsn": pg_dsn}
    with Memory(settings=load_settings(tmp_path / "ws", index=cfg, cache={"backend": "memory"}),
                embedder=HashEmbedder()) as mem:
        mem.add("The zeppelin hangar is in Friedrichshafen", infer=False)
        before = [h.record.content for h in mem.search("zeppelin hangar", record_access=False)]
        assert before == ["The zeppelin hangar is in Friedrichshafen"]
        assert [h.record.content for h in mem.search("zeppelin hangar", record_access=False)] == before  # cached
        path = mem.workspace.user("default").dir / "MEMORY.md"
        path.write_text(path.read_text(encoding="utf-8") + "- a second zeppelin hangar in Akron\n", encoding="utf-8")
        after = [h.record.content for h in mem.search("zeppelin hangar", record_access=False)]
        assert "a second zeppelin hangar in Akron" in after


def test_a_process_that_exits_without_closing_still_writes_what_waits(pg_dsn: str) -> None:
    ix = _index(pg_dsn)
    try:
        ix.upsert([IndexItem(_rec(0), np.eye(4, dtype=np.float32)[0], "w0")])
    finally:
        ix.close()
    code = _child(pg_dsn, "ix.record_access('u', ['u0'], datetime.now(timezone.utc))\n")  # no close
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert _counts(pg_dsn, ["u0"]) == {"u0": 1}


def test_a_batch_being_written_counts_for_reads_until_its_commit() -> None:
    rec = _rec(0)
    seen: list[int] = []
    q: AccessQueue

    def write(batch: Batch, committing) -> None:  # type: ignore[no-untyped-def]
        seen.append(q.overlay([rec])[0].access_count)  # statements sent, not committed: still counted here
        with committing():
            pass
        seen.append(q.overlay([rec])[0].access_count)  # committed: the table has it, the overlay no more

    q = AccessQueue(write, delay=60.0)
    try:
        q.add("u", ["u0", "u0"], T0)
        q.flush()
        assert seen == [2, 0]
    finally:
        q.close()
