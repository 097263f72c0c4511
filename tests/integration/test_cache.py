"""The hot cache in front of both index backends: a hit is exactly what the index answers, also
after writes from another process (the change counter); Redis shared by processes, killed or
frozen mid-run (requests keep working, one warning per outage, back after ``retry_after``); the
in-process cache stays bounded under thousands of distinct queries; the hot set."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memfold import Memory
from memfold.cache import CachedIndex, LocalCache, RedisCache, TieredCache
from memfold.config import load_settings
from memfold.errors import ConfigError
from memfold.metrics import summary

from ..support.hash_embedder import HashEmbedder

REPO = Path(__file__).resolve().parents[2]
QUERIES = ["green tea", "dog Rex", "Oslo", "breakfast coffee", "tea with milk"]
FACTS = ["I like green tea in the morning", "My dog is called Rex", "I live in Oslo",
         "Coffee is what I drink at breakfast", "Tea with milk makes me sleepy"]


def _settings(root: Path, index: dict | None, cache: dict) -> object:
    return load_settings(root, index=index or {}, cache=cache)


# the counts below are of one keyword and one vector search per query: keyword feedback (a second
# keyword search for a question, engine/read/rank_keywords.py) is off here
ONE_KEYWORD_SEARCH = {"keyword_feedback_weight": 0.0}


def _open(root: Path, index: dict | None, cache: dict) -> Memory:
    return Memory(settings=_settings(root, index, cache), embedder=HashEmbedder(), policy=ONE_KEYWORD_SEARCH)


def _answer(mem: Memory, q: str, user: str = "default") -> list[tuple]:
    return [(h.record.id, h.record.content, h.similarity, h.keyword_score, h.vector_score)
            for h in mem.search(q, user, record_access=False)]


def _other_process(root: Path, index: dict | None, cache: dict, script: str) -> None:
    """Run ``script`` with ``m``, a Memory on the same index, in another process."""
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
            "from memfold import Memory\nfrom memfold.config import load_settings\n"
            "from tests.support.hash_embedder import HashEmbedder\n"
            f"m = Memory(settings=load_settings({str(root)!r}, index={index or {}!r}, cache={cache!r}), "
            "embedder=HashEmbedder())\n" + script + "\nm.close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)


def _hits(*kinds: str) -> int:
    """Cache hits so far of these kinds (default: keyword and vector results, prepared answers)."""
    by_kind = summary()["cache"]["by_kind"]
    return sum(by_kind.get(k, {}).get("hit", 0) for k in kinds or ("query", "vector", "answer"))


@pytest.fixture(params=["sqlite", "postgres"])
def index_cfg(request) -> dict | None:
    if request.param == "sqlite":
        return None
    return {"backend": "postgres", "dsn": request.getfixturevalue("pg_dsn")}


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_hit_equals_the_index_across_writes_from_another_process(tmp_path, index_cfg, backend, request):
    cache = {"backend": backend}
    if backend == "redis":
        cache["url"] = request.getfixturevalue("redis_server").url
    root = tmp_path / "ws"
    mem = _open(root, index_cfg, cache)
    plain = _open(root, index_cfg, {"backend": "off"})  # the same index without a cache: the truth
    try:
        assert isinstance(mem.index, CachedIndex) and not isinstance(plain.index, CachedIndex)
        for fact in FACTS[:3]:
            mem.add(fact, infer=False)
        for q in QUERIES:
            assert _answer(mem, q) == _answer(plain, q)
        before, answered = _hits(), _hits("answer")
        first = {q: _answer(mem, q) for q in QUERIES}
        assert _hits() - before == len(QUERIES) == _hits("answer") - answered  # prepared answers, scored again
        assert first == {q: _answer(plain, q) for q in QUERIES}
        # another process writes (and, sharing Redis, caches its own answers at the new counter)
        _other_process(root, index_cfg, cache, f"m.add({FACTS[3]!r}, infer=False)\nm.add({FACTS[4]!r}, infer=False)\n"
                       f"[m.search(q, record_access=False) for q in {QUERIES!r}]")
        after = {q: _answer(mem, q) for q in QUERIES}
        assert after == {q: _answer(plain, q) for q in QUERIES} and after != first
        assert any(FACTS[4] in [a[1] for a in hits] for hits in after.values())
        gone = next(r for r in mem.get_all() if r.content == FACTS[0])
        _other_process(root, index_cfg, cache, f"m.delete({gone.id!r})")
        again = {q: _answer(mem, q) for q in QUERIES}
        assert again == {q: _answer(plain, q) for q in QUERIES}
        assert all(gone.id not in [a[0] for a in hits] for hits in again.values())
    finally:
        mem.close()
        plain.close()


def test_redis_killed_or_frozen_mid_run_requests_keep_working_with_one_warning(tmp_path, redis_server, caplog):
    root = tmp_path / "ws"
    cfg = {"backend": "redis", "url": redis_server.url, "retry_after": 0.3, "timeout": 1.0}  # generous: a loaded CI
    mem = _open(root, None, cfg)
    plain = _open(root, None, {"backend": "off"})
    rounds = iter(range(1000))

    def new_queries() -> list[str]:  # queries this process has not cached yet: they go to Redis
        n = next(rounds)
        return [f"{q} {n}" for q in QUERIES]

    def right(m: Memory, queries: list[str]) -> bool:
        return all(_answer(m, q) == _answer(plain, q) for q in queries)

    try:
        for fact in FACTS:
            mem.add(fact, infer=False)
        assert right(mem, new_queries())
        caplog.set_level(logging.WARNING, logger="memfold")
        redis_server.kill()
        skipped = summary()["cache"]["by_kind"].get("query", {}).get("skip", 0)
        for _ in range(3):
            assert right(mem, new_queries())
            time.sleep(0.35)  # past retry_after: Redis is tried again (and fails again: same outage)
        down = [r for r in caplog.records if "unavailable" in r.getMessage()]
        assert len(down) == 1 and redis_server.url.split("//")[1] in down[0].getMessage()
        assert summary()["cache"]["by_kind"]["query"]["skip"] - skipped >= len(QUERIES)
        redis_server.start()  # back on the same port, empty
        time.sleep(0.35)
        stored = new_queries()
        assert right(mem, stored)  # misses, stored in Redis again
        assert [r for r in caplog.records if "available again" in r.getMessage()]
        with _open(root, None, cfg) as other:  # another Memory: nothing of its own cached, Redis has it
            before = _hits()
            assert right(other, stored)
            assert _hits() - before == 2 * len(QUERIES)
        # frozen (slow): calls time out, the cache is skipped with one more warning, answers stay right
        caplog.clear()
        redis_server.proc.send_signal(signal.SIGSTOP)
        try:
            for _ in range(2):
                assert right(mem, new_queries())
            assert len([r for r in caplog.records if "unavailable" in r.getMessage()]) == 1
        finally:
            redis_server.proc.send_signal(signal.SIGCONT)
        assert mem.index.cache.warnings == 2
    finally:
        mem.close()
        plain.close()


def test_the_in_process_cache_stays_bounded_under_thousands_of_distinct_queries(tmp_path):
    mem = _open(tmp_path / "ws", None, {"backend": "memory", "max_entries": 500})
    try:
        for fact in FACTS:
            mem.add(fact, infer=False)
        cache = mem.index.cache
        assert isinstance(cache, LocalCache)
        sizes = []
        for i in range(2500):
            mem.search(f"question {i} about tea", record_access=False)
            if i % 250 == 0:
                sizes.append(len(cache))
        assert len(cache) == 500 and max(sizes) <= 500 and cache.nbytes < 2_000_000
        answers = mem.index.answers
        assert len(answers) == answers.max_entries == 128  # prepared answers: bounded too
        # the most recent queries are the ones kept: a repeat of the last one is a hit
        before, answered = _hits(), _hits("answer")
        mem.search("question 2499 about tea", record_access=False)
        assert _hits() - before == 1 == _hits("answer") - answered and len(answers) == 128
    finally:
        mem.close()


def test_local_cache_expires_and_evicts_least_recently_used():
    c = LocalCache(max_entries=2)
    c.set("a", b"1", 60)
    c.set("b", b"2", 60)
    assert c.get("a") == b"1"  # a is now the most recently used
    c.set("c", b"3", 60)
    assert c.get("b") is None and c.get("a") == b"1" and c.get("c") == b"3"
    c.set("d", b"4", 0.01)
    time.sleep(0.02)
    assert c.get("d") is None and len(c) == 1  # "d" pushed out "a", then expired


def test_prepared_answers_expire_and_evict_least_recently_used():
    from memfold.cache.answers import AnswerCache, Prepared

    def prep(n: int) -> Prepared:
        return Prepared(None, time.gmtime(n), [], {}, 0.0, set())  # type: ignore[arg-type]

    c = AnswerCache(max_entries=2, ttl=60)
    c.put("a", prep(1))
    c.put("b", prep(2))
    assert c.get("a") is not None  # a is now the most recently used
    c.put("c", prep(3))
    assert c.get("b") is None and c.get("a") is not None and c.get("c") is not None and len(c) == 2
    c.ttl = 0.01
    c.put("d", prep(4))
    time.sleep(0.02)
    assert c.get("d") is None and len(c) == 1  # "d" pushed out "a", then expired


def test_hot_set_is_the_most_accessed_and_follows_writes(tmp_path, index_cfg):
    root = tmp_path / "ws"
    mem = _open(root, index_cfg, {"backend": "memory", "hot_size": 2})
    try:
        ids = {f: mem.add(f, infer=False).added[0].id for f in FACTS}
        for q, n in (("Oslo", 3), ("dog Rex", 2), ("breakfast coffee", 1)):
            for _ in range(n):
                mem.search(q, limit=1)
        hot = mem.hot_memories()
        assert [r.id for r in hot] == [ids[FACTS[2]], ids[FACTS[1]]]
        assert [r.access_count for r in hot] == [3, 2]
        before = _hits("hot")
        assert mem.hot_memories() == hot and _hits("hot") - before == 1
        shown = summary(mem, "default")["hot"]
        assert [(h["id"], h["access_count"]) for h in shown] == [(r.id, r.access_count) for r in hot]
        _other_process(root, index_cfg, {"backend": "memory"}, f"m.delete({ids[FACTS[2]]!r})")
        assert [r.id for r in mem.hot_memories()] == [ids[FACTS[1]], ids[FACTS[3]]]
    finally:
        mem.close()


def test_cache_settings_are_checked(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=r"\[cache\] backend must be 'memory', 'redis' or 'off'"):
        _open(tmp_path / "a", None, {"backend": "memcached"})
    monkeypatch.setenv("MEMFOLD_CACHE__BACKEND", "redis")
    with pytest.raises(ConfigError, match=r"\[cache\] url"):
        Memory(root=tmp_path / "b", embedder=HashEmbedder())
    monkeypatch.setenv("MEMFOLD_CACHE__URL", "redis://127.0.0.1:1/0")
    m = Memory(root=tmp_path / "b", embedder=HashEmbedder())  # unreachable Redis: works without the cache
    try:
        assert isinstance(m.index.cache, TieredCache) and isinstance(m.index.cache.remote, RedisCache)
        m.add("I like green tea", infer=False)
        assert [h.record.content for h in m.search("tea")] == ["I like green tea"]
    finally:
        m.close()
    monkeypatch.delenv("MEMFOLD_CACHE__BACKEND")
    with pytest.raises(ConfigError, match="max_entries"):
        _open(tmp_path / "c", None, {"max_entries": 0})


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        return super().embed(texts)


def test_a_repeated_query_skips_the_model_and_writes_still_embed(tmp_path):
    counting = CountingEmbedder()
    with Memory(settings=_settings(tmp_path / "ws", None, {"backend": "memory"}), embedder=counting) as mem:
        mem.add("I like green tea", infer=False)
        first = _answer(mem, "green tea")
        n = len(counting.texts)
        assert _answer(mem, "green tea") == first and len(counting.texts) == n  # the vector came from the cache
        mem.add("Green tea is best at 80 degrees", infer=False)
        assert counting.texts[-1] == "Green tea is best at 80 degrees"  # texts to store always go to the model
        assert len(_answer(mem, "green tea")) == 2


def test_reads_inside_a_write_transaction_are_not_cached(tmp_path):
    with _open(tmp_path / "ws", None, {"backend": "memory"}) as mem:
        mem.add("I like green tea", infer=False)
        before = summary()["cache"]["lookups"]
        with mem.index.transaction():
            assert mem.index.change_counter() is None
            assert mem.index.keyword_search("default", ["tea"], 5) == mem.index.inner.keyword_search("default", ["tea"], 5)
        assert summary()["cache"]["lookups"] == before
        assert mem.index.change_counter() is not None


def test_on_sqlite_a_write_to_another_namespace_keeps_the_cache(tmp_path):
    root = tmp_path / "ws"
    with _open(root, None, {"backend": "memory"}) as mem, _open(root, None, {"backend": "off"}) as plain:
        for user in ("alice", "bob"):
            for fact in FACTS[:3]:
                mem.add(fact, user, infer=False)
        first = _answer(mem, "green tea", "alice")
        _other_process(root, None, {"backend": "memory"}, f"m.add({FACTS[4]!r}, 'bob', infer=False)")
        before = _hits("answer")
        assert _answer(mem, "green tea", "alice") == first == _answer(plain, "green tea", "alice")
        assert _hits("answer") - before == 1  # bob's write left alice's entries valid
        _other_process(root, None, {"backend": "memory"}, f"m.add({FACTS[4]!r}, 'alice', infer=False)")
        before = _hits()
        after = _answer(mem, "green tea", "alice")
        assert _hits() == before and after == _answer(plain, "green tea", "alice") != first


def test_a_value_this_version_cannot_read_is_a_miss(tmp_path, redis_server):
    import redis

    root = tmp_path / "ws"
    with _open(root, None, {"backend": "redis", "url": redis_server.url}) as mem, \
            _open(root, None, {"backend": "off"}) as plain:
        for fact in FACTS:
            mem.add(fact, infer=False)
        _answer(mem, "green tea")
        client = redis.Redis.from_url(redis_server.url)
        keys = client.keys("memfold:v1:*")
        assert keys
        for k in keys:
            client.set(k, b"\x00not json")  # garbage under every key (another program, another version)
        with _open(root, None, {"backend": "redis", "url": redis_server.url}) as fresh:  # reads Redis, not its own
            assert _answer(fresh, "green tea") == _answer(plain, "green tea")
        client.close()


def _full(mem: Memory, q: str, now) -> list[tuple]:
    """Everything a hit carries that access statistics can change: order, score, the record's statistics."""
    return [(h.record.id, h.score, h.similarity, h.keyword_score, h.vector_score, h.relevance,
             h.record.access_count, h.record.last_accessed_at) for h in mem.search(q, now=now, record_access=False)]


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_prepared_answer_is_scored_with_the_access_statistics_of_now(tmp_path, index_cfg, backend, request):
    """Accesses move no change counter but enter the score (time decay from the last access) and the
    hits' records: a repeated search answered from its prepared answer equals the index's answer
    after accesses by another process and by this one."""
    from datetime import timedelta

    from memfold.models import utcnow

    cache = {"backend": backend}
    if backend == "redis":
        cache["url"] = request.getfixturevalue("redis_server").url
    root = tmp_path / "ws"
    index = dict(index_cfg or {}, access_delay_ms=0) if index_cfg else None  # accesses visible to other handles at once
    pol = dict(ONE_KEYWORD_SEARCH, score_weight_time=1.0, decay_tau_days=1.0, min_score=0.0)  # recency decides
    mem = Memory(settings=_settings(root, index, cache), embedder=HashEmbedder(), policy=pol)
    plain = Memory(settings=_settings(root, index, {"backend": "off"}), embedder=HashEmbedder(), policy=pol)
    later = utcnow() + timedelta(days=30)  # every memory's time term near 0 unless accessed at `later`
    queries = ["tea", "I", "Oslo dog"]
    try:
        for fact in FACTS:
            mem.add(fact, infer=False)
        first = {q: _full(mem, q, later) for q in queries}
        assert first == {q: _full(plain, q, later) for q in queries}
        before = _hits("answer")
        assert {q: _full(mem, q, later) for q in queries} == first and _hits("answer") - before == len(queries)
        # another process searches at `later`: its hits' accesses lift them in every answer holding them
        _other_process(root, index, cache, f"import datetime\nm.search('milk', now=datetime.datetime.fromisoformat("
                       f"{later.isoformat()!r}))")
        before = _hits("answer")
        moved = {q: _full(mem, q, later) for q in queries}
        assert _hits("answer") - before == len(queries)  # answered from the prepared answers, scored again
        assert moved == {q: _full(plain, q, later) for q in queries} and moved != first
        assert [h[0] for h in moved["I"]] != [h[0] for h in first["I"]]  # the order changed, not just counts
        # this process's own accesses (PostgreSQL: queued, then written)
        mem.search("green tea", now=later + timedelta(hours=1))
        flush = getattr(mem.index, "flush_access", None)
        if callable(flush):
            flush()
        own = {q: _full(mem, q, later + timedelta(hours=1)) for q in queries}
        assert own == {q: _full(plain, q, later + timedelta(hours=1)) for q in queries}
        assert own["I"][0][6] >= 1 and [h[0] for h in own["I"]] != [h[0] for h in moved["I"]]
    finally:
        mem.close()
        plain.close()


def test_own_queued_accesses_count_in_a_prepared_answer_at_once(tmp_path, pg_dsn):
    """PostgreSQL writes access statistics behind the search (``access_delay_ms``): a repeated search of
    this process, answered from its prepared answer, shows its own earlier accesses still queued."""
    root = tmp_path / "ws"
    index = {"backend": "postgres", "dsn": pg_dsn, "access_delay_ms": 60_000}  # nothing written meanwhile
    with Memory(settings=_settings(root, index, {"backend": "memory"}), embedder=HashEmbedder(),
                policy=ONE_KEYWORD_SEARCH) as mem:
        for fact in FACTS:
            mem.add(fact, infer=False)
        counts = []
        before = _hits("answer")
        for _ in range(3):
            counts.append({h.record.id: h.record.access_count for h in mem.search("tea")})
        assert _hits("answer") - before == 2
        assert len(mem.index.inner._access) > 0  # still queued, not in the table
        ids = counts[0].keys()
        assert all(counts[n][i] == n for n in range(3) for i in ids)


def test_in_process_search_results_are_kept_as_they_are_and_counted(tmp_path):
    """The in-process cache keeps keyword and vector results as tuples under plain keys (nothing hashed
    or encoded): a hit is the index's answer, the caller's list is its own (changing it changes no
    later hit), and every entry counts the size its writer gave it against ``max_bytes``."""
    mem = _open(tmp_path / "ws", None, {"backend": "memory"})
    try:
        for fact in FACTS:
            mem.add(fact, infer=False)
        ix, inner = mem.index, mem.index.inner
        vec = mem.embedder.embed_query(["tea in the morning"])[0]
        for search, arg in ((ix.keyword_search, ["tea", "morning"]), (ix.vector_search, vec)):
            before = _hits()
            first = search("default", arg, 5)
            assert first and _hits() == before  # a miss, kept
            first.append(("changed by the caller", 9.9))
            again = search("default", arg, 5)
            assert _hits() == before + 1 and isinstance(again, list)  # a hit
            truth = (inner.keyword_search if search == ix.keyword_search else inner.vector_search)("default", arg, 5)
            assert again == truth
        cache = ix.cache
        kept = [(k, v) for k, (_, v, _) in cache._data.items() if isinstance(k, tuple)]
        assert len(kept) == 2 and all(isinstance(v, tuple) for _, v in kept)
        assert cache.nbytes >= 2 * 256 + vec.nbytes  # sizes as given: the vector key's bytes counted
    finally:
        mem.close()
    small = LocalCache(max_entries=10, max_bytes=1000)
    small.set(("a",), (1, 2), 60, nbytes=600)
    small.set(("b",), (3,), 60, nbytes=600)  # over max_bytes: the least recently used leaves
    assert small.get(("a",)) is None and small.get(("b",)) == (3,) and small.nbytes == 600
    small.set(("c",), (4,), 60, nbytes=2000)  # larger than the whole budget: not kept
    assert small.get(("c",)) is None and len(small) == 1
