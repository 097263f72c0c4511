"""The near-duplicate planner of one ``add`` takes memory linear in its candidates: it compares them
with each other a block at a time, never as an n × n matrix, and decides as before."""

from __future__ import annotations

import tracemalloc

import numpy as np

from memfold import Memory
from memfold.engine.write import dedupe
from memfold.engine.write.dedupe import Candidate, Neighbours, Origin, RuleDecider
from memfold.models import EPISODIC, MemoryRecord, MemoryType, utcnow


def _candidates(n: int, dim: int = 64) -> tuple[list[Candidate], np.ndarray]:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs[n // 2] = vecs[1]  # one repeated turn in the middle of the call
    now = utcnow()
    cands = [Candidate(MemoryRecord(id=f"c{i}", user_id="u", memory_type=MemoryType.EVENT,
                                    content="same words" if i in (1, n // 2) else f"turn {i}", created_at=now,
                                    updated_at=now, file=EPISODIC),
                       Origin.TURN) for i in range(n)]
    return cands, vecs


def test_the_planner_does_not_build_an_n_by_n_matrix() -> None:
    n = 6_000  # n × n float32 would be 144 MB
    cands, vecs = _candidates(n)
    near = Neighbours([[] for _ in range(n)], {}, 0.95)
    tracemalloc.start()
    try:
        plan = dedupe.plan(cands, vecs, near, RuleDecider())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    cells = dedupe.BLOCK * n  # one block of comparisons: BLOCK × n
    assert peak < vecs.nbytes * 3 + cells * 5 + 8_000_000, peak  # vectors copied, one block; never n × n (144 MB)
    assert peak < n * n * 4 // 4
    # the repeated turn was folded into the first one; every other turn is stored
    assert len(plan.store) == n - 1
    first = next(c.record for c in plan.store if c.record.id == "c1")
    assert "c" + str(n // 2) not in {c.record.id for c in plan.store} and first.content == "same words"


def test_blocks_decide_as_one_matrix_did(mem: Memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The same call planned in blocks of 16 and in one block: the same memories stored."""
    said = ["I planted tulips along the northern fence today", "My sister Ana moved to Porto last spring",
            "I prefer green tea in the morning", "The car needs new tyres before winter"]
    msgs = [{"role": "user", "content": said[i % 4] if i % 5 == 0 else f"note {i}: {said[i % 4]}"}
            for i in range(60)]
    got = {}
    for block, user in ((16, "small"), (100_000, "one")):
        monkeypatch.setattr(dedupe, "BLOCK", block)
        res = mem.add(msgs, user_id=user, infer=False)
        got[user] = sorted((r.content, r.file) for r in res.added)
    assert got["small"] == got["one"] and len(got["one"]) < len(msgs)
