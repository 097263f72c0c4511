"""Soak: one ``Memory`` kept open through mixed calls (add, search, update, delete, forget, notes,
sessions, context building) in Chinese and English from several threads, the way an agent or a
server uses it for days. The data stops growing after the first phase (every add is balanced by a
delete), so everything the process holds must stop growing too: each namespace's search structures
stay proportional to its live rows, and the whole object graph of the ``Memory`` does not grow from
the first half of the steady phase to the second.

Sized to what it must show, not to days: the structures' fold and compaction thresholds, the
sessions' fold threshold and the hot cache's bound are lowered so that every mechanism that keeps
something bounded runs many times within the test (with the defaults they run only past 1,024 dead
rows or 2,000 cached entries), and each fails this test when it is switched off. The long run (RSS
over 100,000 calls) is ``benchmarks/soak.py``."""

from __future__ import annotations

import random
import threading
from collections import deque

import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import NotFoundError
from memfold.eval.fresh_words import FreshWords
from memfold.index.keywords import KeywordIndex
from memfold.index.vectors import VectorMatrix
from memfold.text.terms import terms

from ..support.footprint import deep_size

USERS = ("soak_en", "soak_zh")
BASE_ROWS = 80  # live memories per user once the first phase is over
THREADS = 4
OPS_PER_THREAD = 160  # per half of the steady phase: 2 halves x 4 threads x 160 = 1,280 calls
CACHE_ENTRIES = 64  # the hot cache's bound: filled within the first half

LANG = {"soak_en": "en", "soak_zh": "zh"}

def _live_terms(mem: Memory, user: str) -> int:
    vocab: set[str] = set()
    for r in mem.get_all(user):
        vocab.update(terms(r.content))
    return len(vocab)


def _check_structures(mem: Memory) -> None:
    fp = mem.index.search_footprint()
    for user in USERS:
        live = mem.index.stats(user)["active"]
        v, k = fp[user]["vectors"], fp[user]["keywords"]
        assert v["live"] <= live and k["live"] <= live, (user, live, fp[user])
        # dead rows and slots are bounded by the live ones plus the compaction threshold
        assert v["rows"] <= 2 * live + VectorMatrix.COMPACT_MIN_DEAD + 1, (user, live, v)
        assert v["ids"] <= v["rows"] and v["row_capacity"] <= 2 * v["rows"] + 256, (user, v)
        assert k["slots"] <= 2 * live + KeywordIndex.COMPACT_MIN_DEAD + 1, (user, live, k)
        assert k["slot_capacity"] <= 2 * k["slots"] + 256, (user, k)
        assert k["df_capacity"] <= 2 * k["vocab"] + 64, (user, k)
        assert k["delta_postings"] <= KeywordIndex.FOLD_MIN_POSTINGS + 200, (user, k)
        assert k["kept_bytes"] <= KeywordIndex.MEMO_SHARE * KeywordIndex.POSTING_BYTES * k["postings"], (user, k)
        # the vocabulary: the live rows' terms plus those of rows changed since the last fold
        assert k["vocab"] <= _live_terms(mem, user) + 2 * KeywordIndex.FOLD_MIN_POSTINGS, (user, k)


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KeywordIndex, "FOLD_MIN_POSTINGS", 200)
    monkeypatch.setattr(KeywordIndex, "COMPACT_MIN_DEAD", 12)
    monkeypatch.setattr(VectorMatrix, "COMPACT_MIN_DEAD", 12)


def test_soak_mixed_calls_from_threads_stay_bounded(root, embedder, small_thresholds):
    mem = Memory(settings=load_settings(root, cache={"max_entries": CACHE_ENTRIES}), embedder=embedder,
                 policy={"session_summary_message_threshold": 6, "session_summary_keep_count": 2,
                         "session_relevant_history_limit": 3})
    owned: dict[str, deque[str]] = {u: deque() for u in USERS}  # ids this test may delete, oldest first
    owned_lock = threading.Lock()
    errors: list[BaseException] = []
    counts: dict[str, int] = {}

    # ---- phase 1: the data grows to BASE_ROWS live memories per user --------------------------
    w0 = FreshWords(0)
    for u in USERS:
        mem.init(u, language="zh" if u == "soak_zh" else "en")
        for _ in range(BASE_ROWS):
            owned[u].extend(r.id for r in mem.add(w0.fact(LANG[u]), user_id=u, infer=False).added)

    # sessions stay open for the whole test, as in a chat server: one per thread and user
    open_sessions = [{u: mem.session(f"s{t}-{u}", user_id=u, agent_id=f"agent{t % 2}") for u in USERS}
                     for t in range(THREADS)]

    def worker(n: int, seed: int) -> None:
        rng, words = random.Random(seed), FreshWords(seed)
        sessions = open_sessions[seed % THREADS]
        try:
            for i in range(n):
                u = USERS[i % 2]
                op = rng.random()
                if op < 0.30:  # add a fact with new words, then delete the oldest: the data stays the same size
                    got = mem.add(words.fact(LANG[u]), user_id=u, agent_id=f"agent{seed % 2}")
                    with owned_lock:
                        owned[u].extend(r.id for r in got.added)
                        victim = owned[u].popleft() if len(owned[u]) > BASE_ROWS else None
                    if victim:
                        try:
                            mem.delete(victim, user_id=u)
                        except NotFoundError:
                            pass
                elif op < 0.55:
                    mem.search(words.query(LANG[u]), user_id=u, limit=5)
                elif op < 0.63:  # new words for a memory: re-embedded, re-termed
                    with owned_lock:
                        mid = rng.choice(owned[u]) if owned[u] else None
                    if mid:
                        try:
                            mem.update(mid, user_id=u, content=words.fact(LANG[u]))
                        except NotFoundError:
                            pass
                elif op < 0.68:  # forget: what matches some words (dry run), then one memory by its id
                    mem.forget(words.query(LANG[u]), user_id=u, dry_run=True)
                    got = mem.add(words.fact(LANG[u]), user_id=u, infer=False).added
                    if got:
                        mem.forget(got[0].id, user_id=u)
                elif op < 0.88:  # a conversation: folded into summaries, extracted into memories
                    s = sessions[u]
                    s.add_message("user", words.fact(LANG[u]))
                    s.add_message("assistant", "好的，我记住了" if u == "soak_zh" else "Noted.")
                    s.build_context(words.query(LANG[u]))
                elif op < 0.90:
                    mem.add_note(words.fact(LANG[u]), user_id=u)
                else:
                    mem.retrieve(words.query(LANG[u]), user_id=u, limit=5)
                counts[f"{seed}"] = i + 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def steady_half(seed0: int) -> None:
        threads = [threading.Thread(target=worker, args=(OPS_PER_THREAD, seed0 + t)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    # trim what conversations and notes added in phase 1's wake, so both halves start from equal data
    def trim() -> dict[str, int]:
        for u in USERS:
            extra = [r for r in mem.get_all(u) if r.id not in set(owned[u])]
            for r in extra:
                mem.delete(r.id, user_id=u)
        return {u: mem.index.stats(u)["active"] for u in USERS}

    def sizes() -> dict[str, int]:
        """Bytes held by the open sessions, by the search structures, and by the rest of the Memory."""
        search = mem.index.inner._search
        return {"sessions": deep_size(open_sessions, skip=(embedder, mem, mem.index)),
                "search structures": deep_size(search),
                "rest of the Memory": deep_size(mem, skip=(embedder, search, mem.index.cache, mem.index.answers)),
                "hot cache": mem.index.cache.nbytes, "prepared answers": deep_size(mem.index.answers)}

    steady_half(100)
    live_1 = trim()
    _check_structures(mem)
    size_1 = sizes()

    steady_half(200)
    live_2 = trim()
    _check_structures(mem)
    size_2 = sizes()

    assert len(counts) == 2 * THREADS and set(counts.values()) == {OPS_PER_THREAD}  # every worker ran to its end
    for u in USERS:
        # about the same data in both halves: each add is balanced by a delete, but which adds merge
        # into a near-duplicate (and so leave one row fewer) varies from run to run
        assert abs(live_1[u] - live_2[u]) <= BASE_ROWS // 5, (live_1, live_2)
    # the same data after 640 more calls: the process holds no more than before. The search
    # structures grow by doubling their capacity and keep deleted rows until they are as many as the
    # live ones, so each may be up to four times its live data (both checked against the data by
    # _check_structures): one half may end just after a compaction and the other just before one;
    # everything else must be flat.
    assert size_2["search structures"] <= 4 * size_1["search structures"] + 64 * 1024, (size_1, size_2)
    assert size_2["sessions"] <= 1.1 * size_1["sessions"] + 16 * 1024, (size_1, size_2)
    # (5 %: a leak of ~120 bytes per search shows within the ~170 searches of a half)
    assert size_2["rest of the Memory"] <= 1.05 * size_1["rest of the Memory"] + 8 * 1024, (size_1, size_2)
    # the hot cache fills up to its bound (entries and bytes), whatever the number of distinct queries
    assert len(mem.index.cache) <= mem.index.cache.max_entries and size_2["hot cache"] <= mem.index.cache.max_bytes
    assert len(mem.index.answers) <= mem.index.answers.max_entries == CACHE_ENTRIES  # prepared answers: bounded too
    mem.close()
