"""Cross-validation of tuned constants (issue 16's tuning rule).

A ranking constant is chosen on some data and must be judged on other data. Every benchmark is
split into folds by its natural unit: leave-one-conversation-out on LoCoMo (5 conversations),
two folds on MADial and LongMemEval (dialogues / questions alternately). For each fold of a set,
the value is chosen that maximises the *sum over all sets* of the mean score, with that set's
held-out fold left out; the set's cross-validated number is its score on the held-out folds at the
values chosen without them. The in-sample number is the score at the value chosen on everything.

A constant survives when its cross-validated sum beats the neutral value (the value that turns
the adjustment off, or a plain half-and-half fusion) and costs no set more than ``max_loss``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LEAVE_ONE_OUT = "leave-one-out"
TWO_FOLD = "two-fold"


def fold_ids(groups: Sequence[str], scheme: str) -> list[int]:
    """The fold of each probe: one per distinct group (leave-one-out), or distinct groups dealt
    alternately, in sorted order, into two folds (two-fold)."""
    distinct = sorted(set(groups))
    if scheme == LEAVE_ONE_OUT:
        index = {g: i for i, g in enumerate(distinct)}
    elif scheme == TWO_FOLD:
        index = {g: i % 2 for i, g in enumerate(distinct)}
    else:
        raise ValueError(f"unknown cross-validation scheme {scheme!r}")
    return [index[g] for g in groups]


@dataclass
class SetScores:
    """One benchmark's per-probe scores under every candidate value (same probe order for each)."""

    name: str
    folds: list[int]
    scores: dict[Any, np.ndarray]  # value -> per-probe score

    def mean(self, value: Any, mask: np.ndarray | None = None) -> float:
        s = self.scores[value]
        if mask is not None:
            s = s[mask]
        return float(s.mean()) if len(s) else 0.0


def _best(values: Sequence[Any], objective: Mapping[Any, float]) -> Any:
    """The value with the highest objective; ties go to the earliest (list the neutral value first)."""
    best = values[0]
    for v in values[1:]:
        if objective[v] > objective[best] + 1e-12:
            best = v
    return best


def cross_validate(sets: Sequence[SetScores], values: Sequence[Any]) -> dict[str, Any]:
    """In-sample and cross-validated scores of choosing among ``values`` by the sum over ``sets``."""
    full = {s.name: {v: s.mean(v) for v in values} for s in sets}
    chosen = _best(values, {v: sum(full[s.name][v] for s in sets) for v in values})
    cv: dict[str, float] = {}
    picks: dict[str, list[Any]] = {}
    for s in sets:
        folds = np.asarray(s.folds)
        held = np.zeros(len(folds), dtype=np.float64)
        picks[s.name] = []
        others = {v: sum(full[t.name][v] for t in sets if t.name != s.name) for v in values}
        for f in sorted(set(s.folds)):
            out = folds == f
            pick = _best(values, {v: s.mean(v, ~out) + others[v] for v in values})
            picks[s.name].append(pick)
            held[out] = s.scores[pick][out]
        cv[s.name] = float(held.mean()) if len(held) else 0.0
    return {
        "values": list(values),
        "by_value": {str(v): {n: round(x[v], 4) for n, x in full.items()} for v in values},
        "chosen": chosen,
        "in_sample": {s.name: round(full[s.name][chosen], 4) for s in sets},
        "cross_validated": {n: round(x, 4) for n, x in cv.items()},
        "fold_choices": picks,
    }


def survives(result: Mapping[str, Any], neutral: Any, max_loss: float = 0.01) -> bool:
    """Whether tuning beats the neutral value on data it did not see: a higher cross-validated sum,
    and no set more than ``max_loss`` below its neutral score."""
    base = result["by_value"][str(neutral)]
    cv = result["cross_validated"]
    return sum(cv.values()) > sum(base.values()) + 1e-9 and all(cv[n] >= base[n] - max_loss for n in cv)
