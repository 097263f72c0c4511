"""The best positions of a score array, best first, equal scores by position, without sorting the
whole array (the keyword index ranks scores over up to a whole 100k namespace)."""

from __future__ import annotations

import numpy as np

# above this many candidates per wanted row, the best rows are looked for among those at or above a
# floor taken from a sample of the scores (common terms' posting lists match most of a big namespace)
SAMPLE_PER_ROW = 64


def best_positions(vals: np.ndarray, limit: int, keep: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``limit`` best ``vals``, best first, equal values by position. The ``limit``-th
    best of a strided sample bounds the ``limit``-th best of all from below, so only the values at or
    above it are ranked: a few hundred instead of tens of thousands. (``argpartition`` alone chose
    among values tied at the cut by its own pivots, differently for different inputs.) ``keep``: the
    ascending positions known to hold the ``limit`` best (and every value tied with the last of them)."""
    if keep is None and len(vals) > SAMPLE_PER_ROW * limit:
        sample = vals[:: len(vals) // (SAMPLE_PER_ROW * limit // 2)]
        keep = np.flatnonzero(vals >= np.partition(sample, len(sample) - limit)[len(sample) - limit])
    elif keep is None:
        keep = np.arange(len(vals))
    if len(keep) > limit:  # every value tied with the limit-th best stays in
        sub = vals[keep]
        keep = keep[sub >= np.partition(sub, len(sub) - limit)[len(sub) - limit]]
    return keep[np.lexsort((keep, -vals[keep]))[:limit]]


def best_positive(scores: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the ``limit`` best positive ``scores``, best first, equal scores by position: what
    ``best_positions`` gives over the positive scores' positions, without listing them all first (a
    search of common terms scores most of a big namespace). The ``limit``-th best of a strided sample
    of the whole array, when positive, bounds the ``limit``-th best from below: the positions at or
    above it are the only ones ranked. Otherwise (fewer positive values than the sample needs) the
    positive positions are listed and ranked."""
    if len(scores) > SAMPLE_PER_ROW * limit:
        sample = scores[:: len(scores) // (SAMPLE_PER_ROW * limit // 2)]
        floor = np.partition(sample, len(sample) - limit)[len(sample) - limit]
        if floor > 0:
            return best_positions(scores, limit, np.flatnonzero(scores >= floor))
    cand = np.flatnonzero(scores > 0)
    return cand[best_positions(scores[cand], limit)] if len(cand) > limit else cand[np.lexsort((cand, -scores[cand]))]
