"""Cross-validation of tuned constants: folds, choice by the sum over sets, held-out scoring."""

from __future__ import annotations

import numpy as np
import pytest

from memfold.eval.crossval import LEAVE_ONE_OUT, TWO_FOLD, SetScores, cross_validate, fold_ids, survives


def test_fold_ids() -> None:
    assert fold_ids(["c2", "c1", "c2", "c3"], LEAVE_ONE_OUT) == [1, 0, 1, 2]
    assert fold_ids(["d0", "d1", "d2", "d3", "d1"], TWO_FOLD) == [0, 1, 0, 1, 1]
    with pytest.raises(ValueError):
        fold_ids(["a"], "k-fold")


def test_a_value_that_only_fits_one_fold_does_not_survive() -> None:
    # value 1 is perfect on fold 0 and useless on fold 1; neutral 0 is 0.5 everywhere.
    # In sample, 1 wins (0.55 > 0.5); held out, the fold-1 choice (made on fold 0) scores 0 there.
    a = SetScores("a", [0, 0, 1, 1], {0: np.array([0.5, 0.5, 0.5, 0.5]), 1: np.array([1.0, 1.0, 0.1, 0.1])})
    res = cross_validate([a], [0, 1])
    assert res["chosen"] == 1 and res["in_sample"] == {"a": 0.55}
    assert res["fold_choices"] == {"a": [0, 1]}  # without fold 0, 0 is better; without fold 1, 1 is
    assert res["cross_validated"] == {"a": round((0.5 + 0.5 + 0.1 + 0.1) / 4, 4)}
    assert not survives(res, 0)


def test_a_value_that_helps_everywhere_survives_and_the_sum_decides() -> None:
    a = SetScores("a", [0, 1, 0, 1], {0: np.full(4, 0.5), 1: np.full(4, 0.7)})
    b = SetScores("b", [0, 1], {0: np.full(2, 0.5), 1: np.full(2, 0.495)})  # costs b 0.005: allowed
    res = cross_validate([a, b], [0, 1])
    assert res["chosen"] == 1 and res["cross_validated"] == {"a": 0.7, "b": 0.495}
    assert survives(res, 0)
    assert not survives(res, 0, max_loss=0.001)  # the same loss on b is too much under a stricter rule
    tie = SetScores("t", [0, 1], {0: np.full(2, 0.5), 1: np.full(2, 0.5)})
    assert cross_validate([tie], [0, 1])["chosen"] == 0  # ties go to the first (neutral) value
