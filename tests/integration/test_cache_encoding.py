"""The query-result cache stores a search's (id, score) lists in a compact binary form (``MFS1``,
``cache/index.py``) where they are shared (Redis, and the process's own tier in front of it; the
in-process ``memory`` backend keeps them as tuples, ``test_cache.py``): a hit gives exactly the
index's answer (scores to the bit), an entry of the earlier JSON form is still read, anything else is
a miss."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from memfold import Memory
from memfold.cache.index import decode_scored, encode_scored
from memfold.config import load_settings

from ..support.hash_embedder import HashEmbedder

FACTS = ["I like green tea in the morning", "My dog is called Rex", "I live in Oslo", "Rex likes tea too",
         "Coffee is what I drink at breakfast", "Tea with milk makes me sleepy", "Oslo winters are dark"]
QUERIES = ["green tea", "dog Rex", "Oslo", "breakfast coffee", "what does Rex drink?"]
# one time for every search: the recency term (whole seconds) moved scores when two searches straddled a second
AT = datetime(2026, 11, 27, 12, 0, 0, tzinfo=timezone.utc)


def _open(root: Path, backend: str, url: str = "") -> Memory:
    return Memory(settings=load_settings(root, cache={"backend": backend, "url": url}), embedder=HashEmbedder())


def _answer(mem: Memory, q: str) -> list[tuple]:
    return [(h.record.id, h.score, h.similarity, h.keyword_score, h.vector_score, h.relevance)
            for h in mem.search(q, "u", record_access=False, now=AT)]


def _scored_entries(mem: Memory) -> dict[str, bytes]:
    data = mem.index.cache.local._data  # TieredCache's own tier (LocalCache): key -> (expiry, value, size)
    return {k: v for k, (_, v, _) in data.items() if ":kw:" in k or ":vec:" in k}


def test_hits_give_the_index_answer_to_the_bit(tmp_path: Path, redis_server) -> None:  # noqa: ANN001
    root = tmp_path / "ws"
    with _open(root, "redis", redis_server.url) as mem, _open(root, "off") as plain:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        for q in QUERIES:
            want = _answer(plain, q)
            assert _answer(mem, q) == want  # a miss: computed and stored
            assert _answer(mem, q) == want  # a hit: decoded
        entries = _scored_entries(mem)
        assert entries and all(v.startswith(b"MFS1") for v in entries.values())
        for v in entries.values():  # the stored scores are the index's floats, exactly
            got = decode_scored(v)
            assert got is not None and encode_scored(got) == v


def test_an_entry_of_the_json_form_is_still_read(tmp_path: Path, redis_server) -> None:  # noqa: ANN001
    root = tmp_path / "ws"
    with _open(root, "redis", redis_server.url) as mem, _open(root, "off") as plain:
        mem.add([{"role": "user", "content": f} for f in FACTS], "u", infer=False)
        want = {q: _answer(plain, q) for q in QUERIES}
        for q in QUERIES:
            _answer(mem, q)
        for k, v in _scored_entries(mem).items():  # as a process of the version before wrote them
            mem.index.cache.set(k, json.dumps(decode_scored(v)).encode("utf-8"), 3600)
        assert all(_answer(mem, q) == want[q] for q in QUERIES)
        assert all(not v.startswith(b"MFS1") for v in _scored_entries(mem).values())  # read as hits, not rewritten


def test_what_is_not_an_entry_is_a_miss() -> None:
    pairs = [("m-1", 0.25), ("m-2", -1.5e-7), ("m-3", 3.0)]
    good = encode_scored(pairs)
    assert decode_scored(good) == pairs
    assert decode_scored(encode_scored([])) == []
    for bad in (b"", b"\x00not json", b"MFS1", good[:-3] + b"\n\n\n", good[:12], b"MFS1\xff\xff\xff\xff", b"{}"):
        assert decode_scored(bad) is None, bad
    odd = [("a\nb", 1.0), ("c", 2.0)]  # an id with a line break: stored as JSON
    assert decode_scored(encode_scored(odd)) == odd
