"""Evidence normalisation and metric aggregation, checked against hand-computed values."""

from __future__ import annotations

import pytest

from memfold.errors import InvalidInputError
from memfold.eval.bench import percentiles, synthetic_queries, synthetic_texts
from memfold.eval.harness import namespace_for, parse_ks
from memfold.eval.metrics import QuestionResult, normalise_evidence, summarise
from memfold.text.terms import terms
from memfold.workspace.userspace import check_user_id


def test_normalise_evidence_splits_fixes_and_drops() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D1:3"}
    assert normalise_evidence(["D8:6; D9:17"], known) == ["D8:6", "D9:17"]
    assert normalise_evidence(["D:11:26", "D", "D10:19", "D1:3", "D1:3"], known) == ["D11:26", "D1:3"]
    assert normalise_evidence([], known) == []
    assert normalise_evidence(["D2:1"]) == ["D2:1"]  # no conversation given: nothing to resolve against


def _q(cat: str, gold: tuple[str, ...], found: dict[int, set[str]], tokens: dict[int, int]) -> QuestionResult:
    return QuestionResult(cat, gold, {k: frozenset(v) for k, v in found.items()}, tokens)


def test_summarise_by_hand() -> None:
    results = [
        _q("1", ("a", "b"), {1: {"a"}, 5: {"a", "b", "x"}}, {1: 10, 5: 50}),   # R@1 .5, R@5 1
        _q("4", ("c",), {1: {"x"}, 5: {"c"}}, {1: 20, 5: 70}),                # R@1 0,  R@5 1
        _q("4", ("d", "e", "f"), {1: {"d"}, 5: {"d"}}, {1: 30, 5: 90}),       # R@1 1/3, R@5 1/3
        _q("5", ("g",), {1: {"g"}, 5: {"g"}}, {1: 5, 5: 5}),                  # apart
        _q("2", (), {1: set(), 5: set()}, {1: 0, 5: 0}),                     # no gold: skipped
    ]
    s = summarise(results, (1, 5), ("1", "2", "3", "4"))
    assert s["n_questions"] == 3
    assert s["recall"] == {"1": round((0.5 + 0 + 1 / 3) / 3, 4), "5": round((1 + 1 + 1 / 3) / 3, 4)}
    assert s["hit"] == {"1": round(2 / 3, 4), "5": 1.0}
    assert s["tokens"] == {"1": 20.0, "5": 70.0}
    cats = s["by_category"]
    assert list(cats) == ["1", "4", "5"]
    assert cats["4"]["n_questions"] == 2 and cats["4"]["recall"]["1"] == round(1 / 6, 4)
    assert cats["5"]["recall"] == {"1": 1.0, "5": 1.0}


def test_parse_ks_and_namespaces() -> None:
    assert parse_ks("10, 1,5,5") == (1, 5, 10)
    for bad in ("", "0,5", "a,b"):
        with pytest.raises(InvalidInputError, match="--k"):
            parse_ks(bad)
    with pytest.raises(InvalidInputError, match="--n"):
        parse_ks("-3", "--n")
    for name in ("conv-26", "a b/c", "x..y", 7):
        check_user_id(namespace_for(name, "locomo"))


def test_percentiles_nearest_rank() -> None:
    p = percentiles([i / 1000 for i in range(1, 101)])  # 1..100 ms
    assert (p["p50"], p["p95"], p["p99"]) == (50.0, 95.0, 99.0)
    assert p["mean"] == 50.5


def test_synthetic_data_is_bilingual_and_deterministic() -> None:
    texts = synthetic_texts(50)
    assert texts == synthetic_texts(50) and len(set(texts)) == 50
    assert any("一起" in t for t in texts) and any(" with " in t for t in texts)
    assert len(synthetic_queries(7)) == 7


def test_terms_split_latin_from_cjk() -> None:
    assert terms("用Python写代码") == ["用", "python", "写代", "代码"]
    assert terms("Bart在圣诞节跳舞")[:3] == ["bart", "在圣", "圣诞"]
