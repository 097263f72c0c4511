"""The priors gated by the match (engine/rank_prior.py, ``score_prior_gate``): a memory that barely
matches the query cannot ride its importance above one that matches it well; 0 = off, unchanged."""

from __future__ import annotations

from pathlib import Path

from memfold import Memory
from memfold.engine.rank_prior import prior_share
from memfold.policy import Policy

from ..support.hash_embedder import HashEmbedder

QUESTION = "when are my violin lessons?"
EVIDENCE = "my violin lessons are on Tuesday evenings at five"
# the low-information follow-up: one word of the question, stored as an important commitment
ASIDE = "I'll definitely check out some violin videos"
OTHER = "the grocery list has milk, bread and apples"
POLICY = {"score_weight_similarity": 0.6, "score_weight_time": 0.0, "score_weight_importance": 0.5,
          "min_score": 0.0, "keyword_feedback_weight": 0.0}


def fill(m: Memory) -> None:
    m.add(EVIDENCE, "u", infer=False, importance=0.0)
    m.add(ASIDE, "u", infer=False, importance=1.0)
    m.add(OTHER, "u", infer=False, importance=1.0)


def ranked(m: Memory) -> list[tuple[str, float]]:
    return [(h.record.content, h.score) for h in m.search(QUESTION, "u", limit=3, record_access=False)]


def unchanged(m: Memory) -> bool:
    """every hit scored as before the gate: similarity and importance weighed in full"""
    return all(h.score == 0.6 * h.similarity + 0.0 + 0.5 * h.record.importance
               for h in m.search(QUESTION, "u", limit=3, record_access=False))


def test_key_score_prior_gate(root: Path):
    """the time and importance priors scaled by min(1, similarity / gate) (0 = off)"""
    with Memory(root=root, embedder=HashEmbedder(), policy=POLICY) as m:
        fill(m)
        default = ranked(m)
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, "score_prior_gate": 0.0}) as m:
        off = ranked(m)
        assert unchanged(m)
    with Memory(root=root, embedder=HashEmbedder(), policy={**POLICY, "score_prior_gate": 1.0}) as m:
        on = ranked(m)
    assert off == default  # off: the same hits with the same scores, bit for bit
    assert off[0][0] == ASIDE  # importance lifts the one-word match above the evidence
    assert on[0][0] == EVIDENCE  # gated: the aside keeps only the share of its priors its match earns
    assert {c for c, _ in on} == {c for c, _ in off}  # a reordering: nothing added or dropped


def test_prior_share_bounds():
    off, on = Policy(), Policy(score_prior_gate=0.2)
    assert prior_share(-0.3, off) == prior_share(0.0, off) == 1.0
    assert prior_share(-0.3, on) == 0.0 and prior_share(0.1, on) == 0.5 and prior_share(0.9, on) == 1.0
