"""The query's vector on a worker thread while the search does its keyword side
(``engine/query_ahead.py``): the same hits as embedding inline, one worker thread however many
searches, a busy worker never makes a search wait, errors reach the caller, the setting turns it off."""

from __future__ import annotations

import multiprocessing
import random
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from memfold import Memory
from memfold.engine.query_ahead import WORKER, embed_ahead

from ..support.hash_embedder import HashEmbedder

NOW = datetime(2026, 11, 27, tzinfo=timezone.utc)
WORDS = ("cat dog violin lesson chess club ramen Berlin hospital nurse garden coffee latte running "
         "studies studied Melanie Caroline pottery camping 拿铁 咖啡 小提琴").split()
QUERIES = ["violin lesson", "who studied in the garden?", "拿铁咖啡", "running club Berlin", "xyzzy",
           "When did Melanie go camping?", "Caroline: I went to a pottery class\nMelanie: what did you make?"]


def _texts(n: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for _ in range(n)]


def _hits(m: Memory, query: str) -> list[tuple[str, float, float, float, float]]:
    return [(h.record.id, h.score, h.relevance, h.keyword_score, h.vector_score)
            for h in m.search(query, "u", record_access=False, now=NOW)]


def _mem(root: Path, ahead: bool = True, embedder: HashEmbedder | None = None) -> Memory:
    m = Memory(root=root, embedder=embedder or HashEmbedder())
    m.retriever.query_ahead = ahead  # what [embedder] query_ahead sets
    return m


def _fill(root: Path) -> None:
    with Memory(root=root, embedder=HashEmbedder()) as m:
        m.add([{"role": "user", "content": t} for t in _texts(400)], "u", infer=False)
        m.delete(m.search("chess club", "u", limit=1, record_access=False)[0].record.id, "u")  # one archived row


def test_ahead_gives_the_hits_of_the_inline_embedding(tmp_path: Path) -> None:
    _fill(tmp_path / "ws")
    ahead = _mem(tmp_path / "ws")  # each its own cache: no shared hits
    inline = _mem(tmp_path / "ws", ahead=False)
    try:
        before = WORKER.jobs_on_worker
        for q in QUERIES:
            got, want = _hits(ahead, q), _hits(inline, q)
            assert got == want, q
            assert got or q == "xyzzy"
            kw = dict(include_archived=True, now=NOW, record_access=False)
            assert ([h.record.id for h in ahead.search(q, "u", **kw)]
                    == [h.record.id for h in inline.search(q, "u", **kw)])
        assert WORKER.jobs_on_worker > before  # the worker did embed these queries
    finally:
        ahead.close()
        inline.close()


def test_the_bundled_model_gives_the_same_vector_on_the_worker(tmp_path: Path) -> None:
    from memfold.engine.read import query_vector
    from memfold.providers.embedder import UseEmbedder

    emb = UseEmbedder()
    for q in QUERIES:
        here = query_vector(emb, q, 0.5)
        there = embed_ahead(lambda q=q: query_vector(emb, q, 0.5)).result()
        assert np.array_equal(here, there), q


def test_one_worker_thread_for_thousands_of_searches(tmp_path: Path) -> None:
    _fill(tmp_path / "ws")
    rng = random.Random(1)
    with _mem(tmp_path / "ws") as m, _mem(tmp_path / "ws") as other:
        m.search("warm up", "u", record_access=False)
        threads_before = threading.active_count()
        for i in range(2000):
            q = " ".join(rng.choice(WORDS) for _ in range(3)) + f" {i}"  # distinct: no cache hits
            (m if i % 2 else other).search(q, "u", record_access=False)
        assert WORKER.threads() == 1
        named = [t for t in threading.enumerate() if t.name == "memfold-query-ahead"]
        assert len(named) == 1
        assert threading.active_count() <= threads_before


def test_a_busy_worker_leaves_the_search_to_its_caller(tmp_path: Path) -> None:
    _fill(tmp_path / "ws")
    release = threading.Event()
    held = embed_ahead(lambda: release.wait(30))  # another search's model pass, still running
    assert held.on_worker
    try:
        with _mem(tmp_path / "ws") as m:
            inline_before = WORKER.jobs_inline
            got = _hits(m, "violin lesson")  # must not wait for the held job
            assert got and WORKER.jobs_inline == inline_before + 1
            assert got == _hits(_mem(tmp_path / "ws", ahead=False), "violin lesson")
    finally:
        release.set()
    assert held.result() is True
    assert embed_ahead(lambda: 7).on_worker  # free again


def test_concurrent_searches_agree_with_one_at_a_time(tmp_path: Path) -> None:
    _fill(tmp_path / "ws")
    with _mem(tmp_path / "ws", ahead=False) as m:
        want = {q: _hits(m, q) for q in QUERIES}
    with _mem(tmp_path / "ws") as m:
        got: dict[tuple[int, str], list] = {}

        def run(t: int) -> None:
            for q in QUERIES * 5:
                got[(t, q)] = _hits(m, q)

        ts = [threading.Thread(target=run, args=(t,)) for t in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert all(got[(t, q)] == want[q] for t in range(4) for q in QUERIES)


class FailingEmbedder(HashEmbedder):
    fail = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("the embedder is down")
        return super().embed(texts)


def test_an_embedder_error_reaches_the_caller_and_the_worker_survives(tmp_path: Path) -> None:
    emb = FailingEmbedder()
    with _mem(tmp_path / "ws", embedder=emb) as m:
        m.add([{"role": "user", "content": t} for t in _texts(50)], "u", infer=False)
        emb.fail = True
        for _ in range(3):
            with pytest.raises(RuntimeError, match="the embedder is down"):
                m.search("violin lesson again", "u", record_access=False)
        emb.fail = False
        assert m.search("violin lesson again", "u", record_access=False)
    assert embed_ahead(lambda: 1).on_worker and WORKER.threads() == 1


def test_the_setting_turns_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(root=tmp_path / "a", embedder=HashEmbedder()) as m:  # off by default
        assert m.retriever.query_ahead is False
        m.add([{"role": "user", "content": "violin lesson on Monday"}], "u", infer=False)
        before = WORKER.jobs_on_worker
        assert m.search("violin", "u", record_access=False)
        assert WORKER.jobs_on_worker == before
    monkeypatch.setenv("MEMFOLD_EMBEDDER__QUERY_AHEAD", "true")
    with Memory(root=tmp_path / "b", embedder=HashEmbedder()) as m:
        assert m.retriever.query_ahead is True
        m.add([{"role": "user", "content": "violin lesson on Monday"}], "u", infer=False)
        before = WORKER.jobs_on_worker
        assert m.search("violin", "u", record_access=False)
        assert WORKER.jobs_on_worker == before + 1


def _child(conn) -> None:  # noqa: ANN001
    before = WORKER.jobs_on_worker
    conn.send((embed_ahead(lambda: 41 + 1).result(), WORKER.jobs_on_worker - before))


def test_a_forked_child_gets_its_own_worker() -> None:
    release = threading.Event()
    held = embed_ahead(lambda: release.wait(30))  # the parent's worker is busy when the child is forked
    try:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_child, args=(child,))
        p.start()
        assert parent.poll(30)
        assert parent.recv() == (42, 1)  # done on a worker of its own
        p.join(30)
    finally:
        release.set()
        held.result()
