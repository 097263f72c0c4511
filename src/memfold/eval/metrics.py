"""Evidence-recall metrics: recall@k, hit@k and tokens returned at k, overall and per category."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.I)


def normalise_evidence(raw: Iterable[object], known: set[str] | None = None) -> list[str]:
    """Gold turn ids of a LoCoMo question: ``"D8:6; D9:17"`` → two ids, ``"D:11:26"`` → ``D11:26``;
    ids that do not resolve to a turn of the conversation (``known``) are dropped; order kept, no repeats."""
    out: dict[str, None] = {}
    for item in raw:
        for m in _ID.finditer(str(item)):
            tid = f"D{int(m.group(1))}:{int(m.group(2))}"
            if known is None or tid in known:
                out.setdefault(tid, None)
    return list(out)


@dataclass(frozen=True)
class QuestionResult:
    """One question: its gold ids, and for each k the source ids and token count of the top-k memories."""

    category: str
    gold: tuple[str, ...]
    found: Mapping[int, frozenset[str]]  # k -> ids carried by the top-k memories
    tokens: Mapping[int, int] = field(default_factory=dict)  # k -> tokens of the top-k memories' text

    def recall(self, k: int) -> float:
        return len(set(self.gold) & self.found[k]) / len(self.gold)

    def hit(self, k: int) -> float:
        return 1.0 if set(self.gold) & self.found[k] else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _block(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict[str, object]:
    return {
        "n_questions": len(results),
        "recall": {str(k): round(_mean([r.recall(k) for r in results]), 4) for k in ks},
        "hit": {str(k): round(_mean([r.hit(k) for r in results]), 4) for k in ks},
        "tokens": {str(k): round(_mean([float(r.tokens.get(k, 0)) for r in results]), 1) for k in ks},
    }


def summarise(results: Sequence[QuestionResult], ks: Sequence[int],
              main_categories: Sequence[str] | None = None) -> dict[str, object]:
    """Overall metrics over ``main_categories`` (all when None), plus ``by_category`` for every category.

    Questions without gold ids are skipped (they cannot be scored)."""
    scored = [r for r in results if r.gold]
    main = [r for r in scored if main_categories is None or r.category in main_categories]
    out = _block(main, ks)
    cats = sorted({r.category for r in scored}, key=lambda c: (len(c), c))
    out["by_category"] = {c: _block([r for r in scored if r.category == c], ks) for c in cats}
    return out
