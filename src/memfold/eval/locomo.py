"""The LoCoMo evidence-recall protocol (``memfold eval locomo``).

Each conversation is ingested into its own namespace, session by session in order, every turn
stamped with its session's date and carrying its ``dia_id``. Every question is asked as written;
a retrieved memory counts for each turn id it was derived from. Overall numbers cover categories
1–4 (multi-hop, temporal, open-domain, single-hop); category 5 (adversarial) is reported apart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..engine.write.conversations import locomo_sessions
from ..errors import InvalidInputError
from ..facade.memory import Memory
from ..providers.embedder import Embedder
from .harness import (
    DEFAULT_KS,
    Clock,
    NoProgress,
    Probe,
    Progress,
    ask_all,
    eval_memory,
    existing_file,
    methods,
    namespace_for,
    require_empty,
)
from .metrics import QuestionResult, normalise_evidence, summarise

MAIN_CATEGORIES = ("1", "2", "3", "4")
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}


def load_locomo(path: str | Path) -> list[dict[str, Any]]:
    """The conversations of a LoCoMo JSON file (a list of ``{sample_id, conversation, qa}``)."""
    p = existing_file(path, "LoCoMo", "locomo_dev.json")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{p} is not a JSON file: {exc}") from exc
    if isinstance(data, dict) and "conversation" in data:
        data = [data]
    if not isinstance(data, list) or not data or not all(
            isinstance(d, dict) and isinstance(d.get("conversation"), dict) and isinstance(d.get("qa"), list)
            for d in data):
        raise InvalidInputError(f"{p} is not in the LoCoMo format: expected a list of "
                                f"{{sample_id, conversation, qa}} objects")
    return data


def turn_ids(sessions: Sequence[Sequence[dict[str, Any]]]) -> set[str]:
    return {str(m["turn_id"]) for s in sessions for m in s if m.get("turn_id")}


def ingest_locomo(mem: Memory, path: str | Path, *, infer: bool = True,
                  progress: Progress | None = None) -> tuple[list[Probe], int]:
    """Ingest every conversation of ``path`` into ``mem`` (a namespace each); returns the scorable
    questions (every category, 5 included) and the number of memories stored."""
    progress = progress or NoProgress()
    prepared = []
    for i, c in enumerate(load_locomo(path)):
        sessions = locomo_sessions(c["conversation"])
        prepared.append((namespace_for(c.get("sample_id") or f"conv-{i}", "locomo"), sessions, c["qa"]))
    n_memories = 0
    progress.start("ingesting turns", sum(len(s) for _, ss, _ in prepared for s in ss))
    for ns, sessions, _ in prepared:
        require_empty(mem, ns)
        for s in sessions:
            mem.add(s, ns, infer=infer)
            progress.advance(len(s))
        n_memories += mem.index.count(ns)
    probes = []
    for ns, sessions, qa in prepared:
        known = turn_ids(sessions)
        for q in qa:
            question = str(q.get("question") or "").strip()
            gold = normalise_evidence(q.get("evidence") or [], known)
            if question and gold:
                probes.append(Probe(ns, ns, question, tuple(gold), str(q.get("category", "?"))))
    return probes, n_memories


def run_locomo(path: str | Path, ks: Sequence[int] = DEFAULT_KS, *, baselines: bool = False,
               root: str | Path | None = None, embedder: Embedder | None = None,
               policy: dict[str, Any] | None = None, infer: bool = True,
               progress: Progress | None = None, vector_cache: str | Path | None = None) -> dict[str, Any]:
    """Run the protocol; returns the report (see ``summarise``), with ``baselines`` when asked."""
    progress = progress or NoProgress()
    load_locomo(path)  # a bad file fails before a workspace is made
    clock = Clock()
    results: dict[str, list[QuestionResult]] = {m: [] for m in methods(baselines)}
    with eval_memory(root, embedder=embedder, policy=policy, vector_cache=vector_cache) as mem:
        probes, n_memories = ingest_locomo(mem, path, infer=infer, progress=progress)
        ask_all(mem, probes, results, ks, progress, "asking questions")
        embedder_name = mem.embedder.name
        fusion = mem.policy().fusion_keyword_weight
    report: dict[str, Any] = {"dataset": f"locomo:{Path(path).name}", **summarise(results["memfold"], ks, MAIN_CATEGORIES)}
    report.update(conversations=len({p.group for p in probes}), memories=n_memories, embedder=embedder_name,
                  fusion_keyword_weight=fusion, infer=infer, category_names=CATEGORY_NAMES)
    if baselines:
        report["baselines"] = {m: summarise(r, ks, MAIN_CATEGORIES) for m, r in results.items() if m != "memfold"}
    report["seconds"] = clock.seconds()
    return report
