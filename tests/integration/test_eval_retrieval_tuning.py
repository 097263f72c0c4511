"""The query-aware adjustments of the read path: speaker named by the query, question turns,
the last line of a conversation-excerpt query, and the date in words in a turn's context."""

from __future__ import annotations

import numpy as np

from memfold import Memory
from memfold.engine.read.read import adjustment, is_question, query_vector
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
    # default bonus 0.3 (0.2 until cross-validation chose 0.3, docs/benchmarks.md), penalty 0.1
    assert adjustment(_rec("We went camping.", "James"), q, pol) == 0.3  # the name is stemmed like the query
    assert adjustment(_rec("Where did you camp?", "Caroline"), q, pol) == -0.1
    assert adjustment(_rec("Where did you camp？", "James"), q, pol) == 0.3 - 0.1
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


def _speaker_ranking(root, embedder, **policy) -> list[tuple[str, ...]]:
    """Another speaker's turn that names Morgan and the lake beats Morgan's own turn on words and
    meaning alone; only the speaker bonus lifts Morgan's turn above it."""
    m = Memory(root=root, embedder=embedder, policy=policy)
    fillers = ["The weather report said rain all week.", "My sister bought a new car.", "We cooked pasta for dinner."]
    for i, text in enumerate(fillers):
        m.add([{"role": "user", "name": "Sam", "content": text, "turn_id": f"D0:{i}"}], "s", infer=False)
    # separate calls: no neighbour context
    m.add([{"role": "user", "name": "Jordan", "content": "Morgan loved the lake.", "turn_id": "D1:1"}], "s",
          infer=False)
    m.add([{"role": "user", "name": "Morgan", "content": "I kayaked across the lake at dawn.", "turn_id": "D1:2"}],
          "s", infer=False)
    hits = m.search("What did Morgan do at the lake?", "s", limit=2, record_access=False)
    m.close()
    return [h.record.source_ids for h in hits]


def test_speaker_named_in_query_ranks_first(tmp_path, embedder) -> None:
    assert _speaker_ranking(tmp_path / "on", embedder) == [("D1:2",), ("D1:1",)]
    # the same data without the bonus ranks the other way round: the bonus is what decides
    assert _speaker_ranking(tmp_path / "off", embedder, score_bonus_speaker=0.0) == [("D1:1",), ("D1:2",)]


def test_turn_context_has_the_date_in_words(mem) -> None:
    mem.add([{"role": "user", "content": "We moved house.", "timestamp": "2023-05-08T13:56:00+00:00"}], "d",
            infer=False)
    rec = mem.get_all("d")[0]
    assert rec.context.startswith("2023-05-08 May 2023")
    assert mem.search("what happened in May 2023", "d", limit=1, record_access=False)[0].record.id == rec.id
