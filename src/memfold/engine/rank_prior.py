"""The prior of the read path's score, gated by the match (issue 16, session 6).

A hit's score is ``score_weight_similarity`` × similarity plus two priors that do not depend on the
query: ``score_weight_time`` × recency and ``score_weight_importance`` × importance. A memory that
barely matches the query can therefore outrank one that matches it well: on LongMemEval the
commitments that rule extraction keeps from follow-up turns ("I'll definitely check out some of
these artists and albums", a todo of importance 0.7 against a turn's 0.3, stored the day of the
session) fill the top 10 of "how many albums did I buy?" with similarities near 0, and push the
long opening turn that names the albums to rank 11–20 (docs/benchmarks.md, "Issue 16, session 6").

A policy key, 0 = off (the priors count in full, as before):

- ``score_prior_gate``: the two priors are scaled by min(1, similarity / gate) (0 below a
  similarity of 0). A memory whose fused similarity reaches the gate keeps its full priors; one
  below it keeps that share of them, so importance and recency order the memories that match and
  cannot lift the ones that do not."""

from __future__ import annotations

from ..policy import Policy


def prior_share(similarity: float, pol: Policy) -> float:
    """The share (0–1) of the time and importance priors a memory of this similarity keeps."""
    gate = pol.score_prior_gate
    if gate <= 0:
        return 1.0
    return min(1.0, max(0.0, similarity / gate))
