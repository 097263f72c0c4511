"""Recall and precision of the deterministic extraction (no LLM) on a labelled corpus.

``benchmarks/data/extraction_corpus.jsonl`` holds one JSON object a line: ``text`` (one user
message), ``lang`` (``en`` | ``zh``), ``type`` (the memory type it should become, or null when it
must not become a memory: questions, small talk, assistant-style text, requests, passing remarks)
and ``topic`` (family, habit, plan, health, work, place, like, commitment, explicit; question,
chitchat, assistant, request, transient).

Each message goes through ``memfold.text.extraction.extract`` exactly as a user turn of a
conversation does. A message counts for type T when one of its extracted memories has type T:

- recall(T) = messages labelled T with a memory of type T / messages labelled T;
- precision(T) = messages labelled T among those with a memory of type T;
- caught = labelled messages with any memory (what reaches MEMORY.md, typed right or not);
- false memories = unlabelled messages with any memory;
- command words left = memories that still start with "remember that", "记住", … .

    python benchmarks/extraction_corpus.py                  # the table (Markdown)
    python benchmarks/extraction_corpus.py --misses         # and every message scored wrong
    python benchmarks/extraction_corpus.py --json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfold.text.extraction import extract

CORPUS = Path(__file__).resolve().parent / "data" / "extraction_corpus.jsonl"
TYPES = ("fact", "preference", "pattern", "event", "todo")
_COMMAND_WORDS = re.compile(r"^(?:please\s+)?(?:remember|note|keep in mind|fyi|don'?t forget)\b|"
                            r"^(?:请|帮我)?(?:记住|记一下|记下|记着|别忘了)", re.I)


@dataclass(frozen=True)
class Item:
    text: str
    lang: str
    label: str | None
    topic: str


@dataclass
class Scored:
    item: Item
    types: frozenset[str]
    contents: tuple[str, ...]

    @property
    def right(self) -> bool:
        return (self.item.label in self.types) if self.item.label else not self.types


@dataclass
class Report:
    scored: list[Scored] = field(default_factory=list)

    def subset(self, lang: str | None) -> list[Scored]:
        return [s for s in self.scored if lang is None or s.item.lang == lang]

    def recall(self, t: str, lang: str | None = None) -> tuple[int, int]:
        items = [s for s in self.subset(lang) if s.item.label == t]
        return sum(t in s.types for s in items), len(items)

    def precision(self, t: str, lang: str | None = None) -> tuple[int, int]:
        got = [s for s in self.subset(lang) if t in s.types]
        return sum(s.item.label == t for s in got), len(got)

    def overall(self, lang: str | None = None) -> dict[str, tuple[int, int]]:
        pos = [s for s in self.subset(lang) if s.item.label]
        neg = [s for s in self.subset(lang) if not s.item.label]
        predicted = [(s, t) for s in self.subset(lang) for t in s.types]
        return {"recall": (sum(s.item.label in s.types for s in pos), len(pos)),
                "precision": (sum(s.item.label == t for s, t in predicted), len(predicted)),
                "caught": (sum(bool(s.types) for s in pos), len(pos)),
                "false memories": (sum(bool(s.types) for s in neg), len(neg))}

    def command_words_left(self) -> list[str]:
        return [c for s in self.scored for c in s.contents if _COMMAND_WORDS.search(c)]


def load(path: Path = CORPUS) -> list[Item]:
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        label = row.get("type")
        if label is not None and label not in TYPES:
            raise ValueError(f"{path}:{n}: unknown type {label!r}")
        items.append(Item(row["text"], row["lang"], label, row.get("topic", "")))
    return items


def score(items: Iterable[Item]) -> Report:
    report = Report()
    for it in items:
        found = extract(it.text)
        report.scored.append(Scored(it, frozenset(e.memory_type.value for e in found), tuple(e.content for e in found)))
    return report


def _ratio(pair: tuple[int, int]) -> str:
    hit, n = pair
    return f"{hit / n:.2f} ({hit}/{n})" if n else "–"


def table(report: Report) -> str:
    rows = ["| type | recall en | recall zh | recall | precision en | precision zh | precision |",
            "|---|---|---|---|---|---|---|"]
    for t in TYPES:
        rows.append(f"| {t} | {_ratio(report.recall(t, 'en'))} | {_ratio(report.recall(t, 'zh'))} | "
                    f"{_ratio(report.recall(t))} | {_ratio(report.precision(t, 'en'))} | "
                    f"{_ratio(report.precision(t, 'zh'))} | {_ratio(report.precision(t))} |")
    en, zh, both = report.overall("en"), report.overall("zh"), report.overall()
    for key in ("recall", "precision", "caught", "false memories"):
        rows.append(f"| **{key}** | {_ratio(en[key])} | {_ratio(zh[key])} | {_ratio(both[key])} | | | |"
                    if key != "precision" else
                    f"| **precision** | | | | {_ratio(en[key])} | {_ratio(zh[key])} | {_ratio(both[key])} |")
    return "\n".join(rows)


def as_json(report: Report) -> dict[str, Any]:
    def r(pair: tuple[int, int]) -> float | None:
        return round(pair[0] / pair[1], 4) if pair[1] else None

    return {"types": {t: {"recall": r(report.recall(t)), "precision": r(report.precision(t)),
                          "labelled": report.recall(t)[1]} for t in TYPES},
            "overall": {k: r(v) for k, v in report.overall().items()},
            "by_language": {lang: {k: r(v) for k, v in report.overall(lang).items()} for lang in ("en", "zh")},
            "command_words_left": report.command_words_left()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ap.add_argument("--misses", action="store_true", help="also list every message scored wrong")
    args = ap.parse_args(argv)
    report = score(load(args.corpus))
    if args.json:
        print(json.dumps(as_json(report), ensure_ascii=False, indent=2))
    else:
        print(table(report))
        left = report.command_words_left()
        print(f"\ncommand words left in stored memories: {len(left)}")
        for c in left:
            print(f"  {c}")
    if args.misses:
        print("\nscored wrong (label → types extracted):")
        for s in report.scored:
            if not s.right or len(s.types) > 1:
                print(f"  [{s.item.lang} {s.item.topic}] {s.item.label or 'none'} → "
                      f"{','.join(sorted(s.types)) or 'nothing'}: {s.item.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
