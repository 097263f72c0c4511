"""The LongMemEval turn-level retrieval protocol (``memfold eval longmemeval``).

Each question gets its own namespace; its haystack sessions are added in order, every turn
stamped with its session's date (``"2023/05/20 (Sat) 02:21"``) and carrying the id
``<session id>_<index + 1>``. Gold = the user turns marked ``has_answer``; the query is the
question as written. recall_all@k is 1 when every gold turn is among the source ids of the top-k
memories, recall_any@k when one is; both are reported overall and by ``question_type``."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..engine.read.read import is_question
from ..errors import InvalidInputError
from ..facade.memory import Memory
from ..models import EPISODIC, SearchHit
from ..providers.embedder import Embedder
from .harness import (
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
from .metrics import QuestionResult

LME_KS = (5, 10, 20)
_DATE_FORMATS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d")


def parse_lme_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` → an aware datetime (UTC)."""
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(str(text).strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise InvalidInputError(f"unrecognised LongMemEval date {text!r} (expected e.g. '2023/05/20 (Sat) 02:21')")


def load_longmemeval(path: str | Path) -> list[dict[str, Any]]:
    """The questions of a LongMemEval JSON file (``.json`` or ``.json.gz``)."""
    p = existing_file(path, "LongMemEval", "longmemeval_s_dev.json.gz")
    try:
        raw = p.read_bytes()
        text = gzip.decompress(raw).decode("utf-8") if raw[:2] == b"\x1f\x8b" else raw.decode("utf-8")
        data = json.loads(text)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{p} is not a (gzip'd) JSON file: {exc}") from exc
    keys = ("question_id", "question", "haystack_session_ids", "haystack_dates", "haystack_sessions")
    if not isinstance(data, list) or not data or not all(isinstance(q, dict) and all(k in q for k in keys)
                                                         for q in data):
        raise InvalidInputError(f"{p} is not in the LongMemEval format: expected a list of "
                                f"{{{', '.join(keys)}}} objects")
    for q in data:
        if not (len(q["haystack_session_ids"]) == len(q["haystack_dates"]) == len(q["haystack_sessions"])):
            raise InvalidInputError(f"{p}: question {q['question_id']} has haystack lists of different lengths")
    return data


def session_messages(session_id: str, date: str, turns: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """A haystack session as messages for ``Memory.add``, and the ids of its gold (``has_answer``) user turns."""
    when = parse_lme_date(date).isoformat()
    msgs, gold = [], []
    for i, t in enumerate(turns):
        role = str(t.get("role") or "user")
        tid = f"{session_id}_{i + 1}"
        msgs.append({"role": role, "content": str(t.get("content") or ""), "turn_id": tid, "timestamp": when})
        if role == "user" and t.get("has_answer"):
            gold.append(tid)
    return msgs, gold


def _summary(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict[str, Any]:
    n = len(results)

    def mean(values: list[float]) -> float:
        return round(sum(values) / n, 4) if n else 0.0

    return {
        "n_questions": n,
        "recall_all": {str(k): mean([1.0 if r.recall(k) >= 1.0 else 0.0 for r in results]) for k in ks},
        "recall_any": {str(k): mean([r.hit(k) for r in results]) for k in ks},
        "tokens": {str(k): mean([float(r.tokens.get(k, 0)) for r in results]) for k in ks},
    }


def summarise_lme(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict[str, Any]:
    scored = [r for r in results if r.gold]
    out = _summary(scored, ks)
    types = sorted({r.category for r in scored})
    out["by_type"] = {t: _summary([r for r in scored if r.category == t], ks) for t in types}
    return out


def ingest_longmemeval(mem: Memory, path: str | Path, *, infer: bool = True, limit: int | None = None,
                       progress: Progress | None = None) -> tuple[list[Probe], int, int]:
    """Ingest the haystack of each of the first ``limit`` questions into its own namespace; returns
    the scorable questions (group = question id), the memories stored and the turns read."""
    progress = progress or NoProgress()
    prepared = []
    for q in load_longmemeval(path)[: limit or None]:
        ns = namespace_for(q["question_id"], "lme")
        require_empty(mem, ns)
        sessions, gold = [], []
        for sid, date, turns in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
            msgs, g = session_messages(str(sid), str(date), turns)
            sessions.append(msgs)
            gold.extend(g)
        prepared.append((q, ns, sessions, gold))
    n_memories = n_turns = 0
    progress.start("ingesting sessions", sum(len(s) for _, _, s, _ in prepared))
    for _, ns, sessions, _ in prepared:
        for msgs in sessions:
            mem.add(msgs, ns, infer=infer)
            n_turns += len(msgs)
            progress.advance()
        n_memories += mem.index.count(ns)
    probes = [Probe(str(q["question_id"]), ns, str(q.get("question") or "").strip(), tuple(gold),
                    str(q.get("question_type") or "?"),
                    parse_lme_date(str(q["question_date"])) if q.get("question_date") else None)
              for q, ns, _, gold in prepared if gold and str(q.get("question") or "").strip()]
    return probes, n_memories, n_turns


# what sits above a missed gold turn: non-gold entries by kind (a stored turn or a memory extracted
# from one) and by session (a session that holds a gold turn, or another)
ABOVE_KINDS = ("same_session_turn", "same_session_extract", "other_turn", "other_extract")


def session_of(turn_id: str) -> str:
    """The session of a turn id of this protocol (``<session id>_<index + 1>``)."""
    return turn_id.rsplit("_", 1)[0]


def miss_places(mem: Memory, p: Probe, k: int) -> dict[str, Any]:
    """Where the gold turns that a search for ``k`` misses are (the search asked again, its scored
    candidates kept): ``place``, each missed gold turn's place among the candidates in rank order (None:
    not a candidate of that search); when every missed one is a candidate, ``above``: the non-gold
    entries placed above the lowest of them, by ``ABOVE_KINDS``, and ``asks``, those of them that are
    turns asking a question; ``to_free``: how many entries above it would have to go for every gold turn
    to be in the first ``k`` (≤ 0: the relevance floor, not the ranking, dropped it)."""
    pool: list[SearchHit] = []
    hits = mem.retriever.search(p.query, p.namespace, limit=k, record_access=False, now=p.now, pool=pool)
    found = {s for h in hits for s in h.record.source_ids}
    missing = [g for g in p.gold if g not in found]
    place = {g: next((i + 1 for i, h in enumerate(pool) if g in h.record.source_ids), None) for g in missing}
    out: dict[str, Any] = {"place": place}
    places = [x for x in place.values() if x is not None]
    if not missing or len(places) < len(missing):
        return out
    lowest = max(places)
    gold, gold_sessions = set(p.gold), {session_of(g) for g in p.gold}
    above = dict.fromkeys((*ABOVE_KINDS, "asks"), 0)
    for h in pool[: lowest - 1]:
        r = h.record
        if gold.intersection(r.source_ids):
            continue
        where = "same_session" if gold_sessions.intersection(session_of(s) for s in r.source_ids) else "other"
        above[f"{where}_{'turn' if r.file == EPISODIC else 'extract'}"] += 1
        above["asks"] += r.file == EPISODIC and is_question(r.content)
    out.update(above=above, to_free=lowest - k)
    return out


def miss_summary(rows: Sequence[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """Per k, over the questions missed: how many have a gold turn that is not a candidate, and how many
    would be whole if every non-gold entry of one kind above their lowest gold turn were gone (an upper
    bound for demoting that kind: ``same_session`` = its turns and extracts, ``asks`` = asking turns)."""
    out: dict[str, Any] = {}
    for k in map(str, ks):
        missed = [q["places"][k] for q in rows if q["missing"][k]]
        placed = [m for m in missed if "above" in m]

        def fixable(kinds: Sequence[str]) -> int:
            return sum(sum(m["above"][c] for c in kinds) >= m["to_free"] for m in placed)

        out[k] = {"missed": len(missed), "not_a_candidate": len(missed) - len(placed),
                  "whole_without": {**{c: fixable([c]) for c in (*ABOVE_KINDS, "asks")},
                                    "same_session": fixable(ABOVE_KINDS[:2]), "other": fixable(ABOVE_KINDS[2:])}}
    return out


def per_question(probes: Sequence[Probe], results: Sequence[QuestionResult], ks: Sequence[int],
                 mem: Memory | None = None) -> list[dict[str, Any]]:
    """Each question's outcome (for finding where recall is lost): its id, type, text and gold turns,
    and per k whether every gold turn was returned (``all``) and which were not (``missing``); with
    ``mem`` (the memories searched), also where the missed ones are (``places``: ``miss_places``)."""
    rows: list[dict[str, Any]] = [{"id": p.group, "type": p.category, "question": p.query, "gold": list(p.gold),
             "all": {str(k): int(r.recall(k) >= 1.0) for k in ks},
             "missing": {str(k): [g for g in p.gold if g not in r.found[k]] for k in ks}}
            for p, r in zip(probes, results, strict=True)]
    if mem is not None:
        for p, row in zip(probes, rows, strict=True):
            row["places"] = {str(k): miss_places(mem, p, k) if row["missing"][str(k)] else {"place": {}} for k in ks}
    return rows


def run_longmemeval(path: str | Path, ks: Sequence[int] = LME_KS, *, baselines: bool = False,
                    root: str | Path | None = None, embedder: Embedder | None = None,
                    policy: dict[str, Any] | None = None, infer: bool = True, limit: int | None = None,
                    vector_cache: str | Path | None = None, progress: Progress | None = None,
                    questions: bool = False) -> dict[str, Any]:
    """Run the protocol on the first ``limit`` questions (all when None); returns the report, with
    the seconds spent ingesting and in all; with ``questions``, each question's outcome under
    memfold's ranking too (``per_question``)."""
    progress = progress or NoProgress()
    load_longmemeval(path)  # a bad file fails before a workspace is made
    clock = Clock()
    results: dict[str, list[QuestionResult]] = {m: [] for m in methods(baselines)}
    with eval_memory(root, embedder=embedder, policy=policy, vector_cache=vector_cache) as mem:
        probes, n_memories, n_turns = ingest_longmemeval(mem, path, infer=infer, limit=limit, progress=progress)
        ingest_seconds = clock.seconds()
        ask_all(mem, probes, results, ks, progress, "asking questions")
        rows = per_question(probes, results["memfold"], ks, mem) if questions else []
        embedder_name = mem.embedder.name
        fusion = mem.policy().fusion_keyword_weight
    report: dict[str, Any] = {"dataset": f"longmemeval:{Path(path).name}", **summarise_lme(results["memfold"], ks)}
    report.update(questions=len(probes), turns=n_turns, memories=n_memories, embedder=embedder_name,
                  fusion_keyword_weight=fusion, infer=infer)
    if baselines:
        report["baselines"] = {m: summarise_lme(r, ks) for m, r in results.items() if m != "memfold"}
    if questions:
        report["per_question"] = rows
        report["misses"] = miss_summary(rows, ks)
    report["ingest_seconds"] = ingest_seconds
    report["seconds"] = clock.seconds()
    return report
