"""Ranking recency is the time since a memory was last used, not since it was written: of two
equally fitting memories, the one read yesterday ranks above the one written last month and never
read since, even when the first was written a year ago. Held on the first search and on a repeat
of the same search (answered by rescoring the prepared candidates)."""

from __future__ import annotations

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
