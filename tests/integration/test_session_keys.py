"""Session keys (engine/read/rank_sessions.py, ``session_key_weight``): a question matching a session as a
whole brings in a turn of it that shares no word with the question and is not a candidate otherwise."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memfold import Memory
from memfold.engine.read import rank_sessions

from ..support.hash_embedder import HashEmbedder

QUESTION = "what happened when we went camping at the lake?"
EVIDENCE = "It rained the whole second night and the tent leaked"  # no word of the question
TRIP = [EVIDENCE, "We went camping at the lake with the kids",
        "The lake was too cold for swimming but camping there was fun"]
BAKING = ["I bake sourdough bread every Sunday", "the oven needs a new thermostat", "rye flour is hard to find"]
# one word of the question each, each its own session: they fill the small candidate pool
ASIDES = ["a used camping stove is for sale at the garage", "the lake road is closed for repairs this month",
          "my neighbour sells camping chairs and old bikes", "the city lake park has a new playground",
          "camping gear prices went up again this spring", "the lake view flat downstairs was sold",
          "a camping magazine arrived with the post today", "the lake ferry timetable changed on Monday",
          "buying a camping lantern online was cheap", "the lake festival moved to August this year",
          "camping permits now cost ten euros"]
POLICY = {"score_weight_similarity": 1.0, "score_weight_time": 0.0, "score_weight_importance": 0.0,
          "min_score": 0.0, "candidate_pool_min": 1, "keyword_feedback_weight": 0.0}


def day(n: int, texts: list[str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": t, "timestamp": f"2024-03-{n:02d}T10:00:00+00:00"} for t in texts]


def fill(m: Memory, user: str) -> None:
    m.add(day(1, TRIP), user, infer=False)  # one session: three turns of one time stamp
    m.add(day(2, BAKING), user, infer=False)
    for i, text in enumerate(ASIDES):
        m.add(day(3 + i, [text]), user, infer=False)


def found(m: Memory, user: str) -> list[str]:
    return [h.record.content for h in m.search(QUESTION, user, limit=4, record_access=False)]


def _scenario(root: Path, user: str) -> None:
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, "session_key_weight": 0.0}) as m:
        fill(m, user)
        off = found(m, user)
        assert EVIDENCE not in off and len(off) == 4  # not a candidate: no reranking reaches it
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, "session_key_weight": 1.0}) as m:
        on = found(m, user)
        assert on[:2] == TRIP[2:0:-1]  # the trip's turns first: they gain the session's match too
        assert EVIDENCE in on[:3]  # pulled in by its session, above the one-word asides


def test_key_session_key_weight(root: Path):
    """the turns of the sessions that best match the query are lifted and pulled in (0 = off)"""
    _scenario(root, "u")


def test_session_keys_on_postgres(root: Path, pg_dsn: str, pg_server, monkeypatch: pytest.MonkeyPatch):
    """the same through the PostgreSQL backend (its change counter keys the cache)"""
    monkeypatch.setenv("MEMFOLD_INDEX__BACKEND", "postgres")
    monkeypatch.setenv("MEMFOLD_INDEX__DSN", pg_dsn)
    _scenario(root, f"sess-{os.getpid()}-{time.time_ns()}")


def test_session_id_groups_turns_of_several_adds(root: Path):
    """turns added one call at a time with one session id are one session (a chat session's turns);
    a write to the namespace rebuilds the keys at the next search"""
    later = "Our neighbours lent us a dry sleeping bag"  # no word of the question either
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, "session_key_weight": 1.0}) as m:
        for i, text in enumerate(TRIP[1:]):  # separate calls, separate time stamps, one session id
            m.add(day(1 + i, [text]), "u", infer=False, session_id="trip")
        m.add(day(5, BAKING), "u", infer=False)
        for i, text in enumerate(ASIDES):
            m.add(day(6 + i, [text]), "u", infer=False)
        assert later not in found(m, "u")
        m.add(day(3, [later]), "u", infer=False, session_id="trip")
        assert later in found(m, "u")[:3]  # keyed with its session: the keys were rebuilt
        m.add(day(4, [EVIDENCE]), "u", infer=False, session_id="other")
        assert EVIDENCE not in found(m, "u")  # another session: nothing pulls it


def test_cache_is_bounded(root: Path, monkeypatch: pytest.MonkeyPatch):
    """the keys of the least recently searched namespace go when the turns kept pass the bound; a
    namespace larger than the bound is not keyed (its search is the plain one)"""
    monkeypatch.setattr(rank_sessions, "CACHE", rank_sessions.KeyCache(max_rows=len(TRIP + BAKING + ASIDES) + 1))
    reads: list[str] = []
    real = rank_sessions.build
    monkeypatch.setattr(rank_sessions, "build", lambda store, user, *a: reads.append(user) or real(store, user, *a))
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, "session_key_weight": 1.0}) as m:
        fill(m, "a")
        fill(m, "b")
        assert EVIDENCE in found(m, "a")
        assert rank_sessions.CACHE.rows() == len(TRIP + BAKING + ASIDES)
        assert EVIDENCE in found(m, "b")  # "a" makes room for "b"
        assert rank_sessions.CACHE.rows() == len(TRIP + BAKING + ASIDES)
        assert EVIDENCE in found(m, "b") and reads == ["a", "b"]  # kept: not read again
        m.add(day(28, ["one more turn", "and another"]), "a", infer=False)
        assert EVIDENCE not in found(m, "a")  # now too large to key: not lifted
        assert EVIDENCE not in found(m, "a") and reads == ["a", "b", "a"]  # "too large" is kept too
        assert rank_sessions.CACHE.rows() == len(TRIP + BAKING + ASIDES)
