"""Ranking recency is the time since a memory was last used, not since it was written: of two
equally fitting memories, the one read yesterday ranks above the one written last month and never
read since, even when the first was written a year ago. Held on the first search and on a repeat
of the same search (answered by rescoring the prepared candidates)."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

from memfold import Memory
from memfold.models import utcnow


def _row(rid: str, content: str, created_days: float, accessed_days: float | None) -> dict:
    now = utcnow()
    created = (now - timedelta(days=created_days)).isoformat()
    accessed = None if accessed_days is None else (now - timedelta(days=accessed_days)).isoformat()
    return {"id": rid, "user_id": "alice", "memory_type": "preference", "content": content, "created_at": created,
            "updated_at": created, "importance": 0.5, "confidence": 1.0, "access_count": 0 if accessed is None else 7,
            "last_accessed_at": accessed, "is_active": True, "structured_data": {}, "source_ids": [],
            "agent_id": None, "source_session_id": None, "superseded_by": None, "file": "MEMORY.md", "context": ""}


def test_recency_counts_from_the_last_access(root: Path, embedder):
    with Memory(root=root, embedder=embedder) as m:
        m.import_records([
            _row("oldbutused", "I drink green tea in the morning", created_days=400, accessed_days=1),
            _row("newunused", "I drink green tea in the evening", created_days=30, accessed_days=None),
        ])
        for attempt in ("first search", "the same search again (rescored)"):
            hits = m.search("green tea", "alice", limit=2, record_access=False)
            assert [h.record.id for h in hits] == ["oldbutused", "newunused"], attempt
            assert hits[0].score > hits[1].score, attempt
        before = {h.record.id: h.score for h in hits}

        # reading the unused one now lifts it by its recency term (0.2 x (1 - e^-1) with the default
        # weight and a 30-day decay); the search after it sees the access
        m.index.record_access("alice", ["newunused"], utcnow())
        after = {h.record.id: h.score for h in m.search("green tea", "alice", limit=2, record_access=False)}
        assert after["newunused"] - before["newunused"] > 0.1
        assert abs(after["oldbutused"] - before["oldbutused"]) < 0.01


def test_a_memory_never_accessed_counts_as_a_year_unused_not_as_new(root: Path, embedder):
    """No search has returned it yet: its recency term is that of a memory last used 365 days ago,
    whatever its age: a memory written today and never read gets no more from recency than one written
    last year, and less than one read 20 days ago (written two years ago)."""
    from memfold.engine.read import NEVER_ACCESSED_DAYS

    assert NEVER_ACCESSED_DAYS == 365
    with Memory(root=root, embedder=embedder, background=False) as m:
        m.import_records([
            _row("usedlately", "I drink green tea in the morning", created_days=730, accessed_days=20),
            _row("writtentoday", "I drink green tea in the evening", created_days=0, accessed_days=None),
            _row("writtenlongago", "I drink green tea at noon", created_days=300, accessed_days=None),
        ])
        hits = m.search("green tea", "alice", limit=3, record_access=False)
        recency = {h.record.id: h.score - 0.6 * h.similarity - 0.2 * 0.5 for h in hits}  # the default weights
        assert abs(recency["writtentoday"] - recency["writtenlongago"]) < 1e-6  # the same: never accessed
        assert recency["writtentoday"] < 1e-5  # 0.2 x e^(-365/30)
        assert abs(recency["usedlately"] - 0.2 * math.exp(-20 / 30)) < 1e-3
