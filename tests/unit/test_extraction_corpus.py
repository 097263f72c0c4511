"""The rule extraction holds its measured recall and precision on the labelled corpora of
``benchmarks/data`` (``benchmarks/extraction_corpus.py``; the table is in docs/extraction.md):
recall ≥ 0.85 and precision ≥ 0.90 for every memory type on the main corpus and overall on the
held-out one, no command words left in what is stored, and nearly nothing from the messages that
must not become memories."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("extraction_corpus")
    finally:
        sys.path.remove(str(BENCHMARKS))


def _ratio(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1]


def test_the_corpus_is_what_it_says() -> None:
    bench = _bench()
    items = bench.load()
    labelled = [i for i in items if i.label]
    assert len(labelled) >= 150 and sum(i.lang == "zh" for i in labelled) >= len(labelled) * 0.45
    assert sum(not i.label for i in items) >= 100
    assert {i.label for i in labelled} == set(bench.TYPES)
    assert len({i.text for i in items}) == len(items)


def test_recall_and_precision_by_type_on_the_corpus() -> None:
    bench = _bench()
    report = bench.score(bench.load())
    for t in bench.TYPES:
        assert _ratio(report.recall(t)) >= 0.85, (t, report.recall(t))
        assert _ratio(report.precision(t)) >= 0.90, (t, report.precision(t))
    for lang in ("en", "zh"):
        overall = report.overall(lang)
        assert _ratio(overall["recall"]) >= 0.85 and _ratio(overall["precision"]) >= 0.90, (lang, overall)
        assert _ratio(overall["false memories"]) <= 0.05, (lang, overall)
    assert report.command_words_left() == []


def test_recall_and_precision_on_the_held_out_corpus() -> None:
    bench = _bench()
    report = bench.score(bench.load(BENCHMARKS / "data" / "extraction_heldout.jsonl"))
    overall = report.overall()
    assert _ratio(overall["recall"]) >= 0.85 and _ratio(overall["precision"]) >= 0.90, overall
    assert _ratio(overall["false memories"]) <= 0.05, overall
    assert report.command_words_left() == []
