"""The query-aware adjustments of the read path: speaker named by the query, question turns,
the last line of a conversation-excerpt query, and the date in words in a turn's context."""

from __future__ import annotations

import numpy as np

from memfold.engine.read import adjustment, is_question, query_vector
from memfold.models import MemoryRecord, MemoryType, utcnow
from memfold.policy import Policy
from memfold.text.terms import terms


def _rec(content: str, speaker: str | None = None) -> MemoryRecord:
    now = utcnow()
    return MemoryRecord(id="x", user_id="u", memory_type=MemoryType.EVENT, content=content, created_at=now,
                        updated_at=now, structured_data={"speaker": speaker} if speaker else {})


def test_adjustment_values() -> None:
    pol = Policy()
    q = set(terms("Where did James go camping?", query=True))
    assert adjustment(_rec("We went camping.", "James"), q, pol) == 0.2  # the name is stemmed like the query
    assert adjustment(_rec("Where did you camp?", "Caroline"), q, pol) == -0.1
    assert adjustment(_rec("Where did you camp？", "James"), q, pol) == 0.2 - 0.1
    off = Policy(score_bonus_speaker=0.0, score_penalty_question=0.0)
    assert adjustment(_rec("Where did you camp?", "James"), q, off) == 0.0
    assert is_question("好吗？") and not is_question("fine.")


def test_query_vector_mixes_in_the_last_line(embedder) -> None:
    one = query_vector(embedder, "what about the trip", 0.5)
    assert np.allclose(one, embedder.embed(["what about the trip"])[0])
    conv = "<A>: we talked about pottery\n<B>: and the beach trip\n"
    mixed = query_vector(embedder, conv, 0.5)
    whole, last = embedder.embed([conv])[0], embedder.embed(["<B>: and the beach trip"])[0]
    expect = whole + 0.5 * last
    assert np.allclose(mixed, expect / np.linalg.norm(expect), atol=1e-5)
    assert np.allclose(query_vector(embedder, conv, 0.0), whole)


def test_speaker_named_in_query_ranks_first(mem) -> None:
    turns = [{"role": "user", "name": "Jordan", "content": "Morgan, the lake trip was lovely.", "turn_id": "D1:1"},
             {"role": "user", "name": "Morgan", "content": "I kayaked across the lake at dawn.", "turn_id": "D1:2"}]
    mem.add(turns[:1], "s", infer=False)  # separate calls: no neighbour context
    mem.add(turns[1:], "s", infer=False)
    hits = mem.search("What did Morgan do at the lake?", "s", limit=2, record_access=False)
    assert hits[0].record.source_ids == ("D1:2",)


def test_turn_context_has_the_date_in_words(mem) -> None:
    mem.add([{"role": "user", "content": "We moved house.", "timestamp": "2023-05-08T13:56:00+00:00"}], "d",
            infer=False)
    rec = mem.get_all("d")[0]
    assert rec.context.startswith("2023-05-08 May 2023")
    assert mem.search("what happened in May 2023", "d", limit=1, record_access=False)[0].record.id == rec.id
