"""The SQLite index's record cache (``index/record_cache.py``): records a search read are kept in
process between searches, bounded, and never stale: a search answers what an index without the
cache answers, after this process's own writes and access statistics, after another process's
writes and access statistics, and after a caller changed a record it was handed."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import ConfigError
from memfold.index.record_cache import RecordCache
from memfold.index.sqlite import SqliteIndex

from ..support.hash_embedder import HashEmbedder

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-11-27T08:00:00+00:00"
FACTS = [f"{who} talked about {what} on day {d}" for d, (who, what) in enumerate(
    (w, t) for w in ("Anna", "Bert", "Chen", "Dora", "Emil") for t in ("tea", "chess", "violin", "Berlin", "ramen",
                                                                      "coffee", "running", "garden"))]
QUERIES = ["what did Anna say about tea?", "chess with Bert", "violin", "Berlin ramen", "Dora garden running",
           "coffee", "Emil"]


def _open(root: Path, record_cache: int | None = None) -> Memory:
    index = {} if record_cache is None else {"record_cache": record_cache}
    # the query-result cache off: every search reads its candidates' rows through the index
    return Memory(settings=load_settings(root, index=index, cache={"backend": "off"}), embedder=HashEmbedder())


def _sqlite(mem: Memory) -> SqliteIndex:
    ix = mem.index
    ix = getattr(ix, "inner", ix)
    assert isinstance(ix, SqliteIndex)
    return ix


def _answer(mem: Memory, q: str) -> list[tuple]:
    return [(h.record.id, h.record.content, h.record.access_count, h.record.last_accessed_at,
             h.record.structured_data, h.score, h.relevance)
            for h in mem.search(q, record_access=False, now=NOW)]


def _other_process(root: Path, script: str) -> None:
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from memfold import Memory\nfrom memfold.config import load_settings\n"
            "from tests.support.hash_embedder import HashEmbedder\n"
            f"m = Memory(settings=load_settings({str(root)!r}, cache={{'backend': 'off'}}), embedder=HashEmbedder())\n"
            + script + "\nm.close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


def test_searches_with_the_record_cache_answer_as_the_index_does(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    mem, plain = _open(root), _open(root, record_cache=0)  # plain: the same file, no record cache (the truth)
    try:
        mem.add([{"role": "user", "content": t} for t in FACTS], infer=False)
        for q in QUERIES:
            assert _answer(mem, q) == _answer(plain, q)
        assert len(_sqlite(mem)._records) > 0 and len(_sqlite(plain)._records) == 0
        for q in QUERIES:  # again: now from the kept records
            assert _answer(mem, q) == _answer(plain, q)
        # this process's own access statistics (kept records patched, not dropped), then its writes
        at = datetime(2026, 11, 27, 7, 30, tzinfo=timezone.utc)
        kept = len(_sqlite(mem)._records)
        for q in QUERIES[:3]:
            mem.search(q, now=at)
        assert len(_sqlite(mem)._records) == kept  # record_access kept them
        for q in QUERIES:
            assert _answer(mem, q) == _answer(plain, q)
        hit = mem.search("violin", record_access=False, now=NOW)[0].record
        assert hit.access_count > 0 and hit.last_accessed_at == at
        mem.update(hit.id, content="Anna played the violin on a train")
        mem.add("Chen's violin teacher lives in Berlin", infer=False)
        for q in QUERIES:
            assert _answer(mem, q) == _answer(plain, q)
        # another process: access statistics (no change of the change counter), an edit, a delete
        _other_process(root, f"[m.search(q) for q in {QUERIES!r}]")
        for q in QUERIES:
            assert _answer(mem, q) == _answer(plain, q)
        gone = mem.search("Berlin ramen", record_access=False, now=NOW)[0].record
        edited = mem.search("chess with Bert", record_access=False, now=NOW)[0].record
        _other_process(root, f"m.update({edited.id!r}, content='Bert gave up chess for go')\nm.delete({gone.id!r})")
        after = {q: _answer(mem, q) for q in QUERIES}
        assert after == {q: _answer(plain, q) for q in QUERIES}
        assert all(gone.id not in [a[0] for a in hits] for hits in after.values())
        assert "Bert gave up chess for go" in [a[1] for hits in after.values() for a in hits]
    finally:
        mem.close()
        plain.close()


def test_other_process_access_statistics_reach_the_next_search(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with _open(root) as mem:
        mem.add([{"role": "user", "content": t} for t in FACTS], infer=False)
        first = mem.search("violin", record_access=False, now=NOW)[0].record  # kept now
        _other_process(root, "m.search('violin', now='2026-11-27T07:00:00+00:00')")
        again = mem.search("violin", record_access=False, now=NOW)[0].record
        assert again.id == first.id
        assert again.access_count == first.access_count + 1
        assert again.last_accessed_at == datetime(2026, 11, 27, 7, 0, tzinfo=timezone.utc)


def test_a_record_changed_by_its_caller_does_not_change_the_next_read(tmp_path: Path) -> None:
    with _open(tmp_path / "ws") as mem:
        mem.add([{"role": "user", "content": t} for t in FACTS], infer=False)
        hit = mem.search("violin", record_access=False, now=NOW)[0].record
        want = dict(hit.structured_data)
        hit.structured_data["role"] = "changed by the caller"
        hit.structured_data["extra"] = 1
        again = mem.search("violin", record_access=False, now=NOW)[0].record
        assert again.id == hit.id and again.structured_data == want


def test_the_record_cache_is_bounded(tmp_path: Path) -> None:
    with _open(tmp_path / "ws", record_cache=25) as mem:
        mem.add([{"role": "user", "content": t} for t in FACTS], infer=False)
        ix = _sqlite(mem)
        seen = 0
        for q in QUERIES * 2:
            mem.search(q, record_access=False, now=NOW)
            assert len(ix._records) <= 25
            seen = max(seen, len(ix._records))
        assert seen == 25  # it was used, up to its bound
    cache = RecordCache()
    assert cache.size == 4096  # the default bound
    with _open(tmp_path / "ws") as mem:
        rows = mem.get_all(include_archived=True)
        cache.check((1, 1))
        for i in range(3):  # more records than the bound, least recently used leave first
            cache.put("u", [r.with_(id=f"{r.id}-{i}-{j}") for j in range(120) for r in rows])
        assert len(cache) == 4096
        out: dict = {}
        assert cache.take("u", [f"{rows[0].id}-0-0"], out) == [f"{rows[0].id}-0-0"]  # the oldest left
        assert cache.take("u", [f"{rows[-1].id}-2-119"], out) == []  # the newest stayed


def test_record_cache_setting_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="record_cache"):
        _open(tmp_path / "ws", record_cache=-1)


def test_one_search_reads_the_index_seq_once_and_sees_what_it_reconciled(tmp_path: Path) -> None:
    """A search reads the index's seq once for all its lookups (``SqliteIndex.search_scope``); a hand
    edit it brings into the index first (its own write) is found by that same search."""
    root = tmp_path / "ws"
    with _open(root) as mem:
        mem.add([{"role": "user", "content": t} for t in FACTS], infer=False)
        mem.add("I keep bees on the roof", memory_type="fact", infer=False)
        mem.search("violin", record_access=False, now=NOW)
        seen: list[str] = []
        _sqlite(mem)._db.set_trace_callback(seen.append)
        mem.search("what did Anna say about tea?", record_access=False, now=NOW)
        assert sum("FROM meta WHERE key = 'seq'" in s for s in seen) == 1
        path = root / "default" / "MEMORY.md"
        path.write_text(path.read_text(encoding="utf-8").replace("I keep bees on the roof",
                                                                 "I keep wasps in the cellar"), encoding="utf-8")
        hits = mem.search("wasps in the cellar", record_access=False, now=NOW)  # reconciled, then found
        assert hits and hits[0].record.content == "I keep wasps in the cellar"
        assert "bees" not in " ".join(h.record.content for h in mem.search("bees roof", record_access=False, now=NOW))
        # a write of this thread inside a search's scope: the lookups after it read the seq again
        with _sqlite(mem).search_scope("default"):
            assert all("saxophone" not in h.record.content for h in mem.search("saxophone", record_access=False, now=NOW))
            mem.add("Dora bought a saxophone", infer=False)
            hits = mem.search("saxophone", record_access=False, now=NOW)
            assert hits and hits[0].record.content == "Dora bought a saxophone"
