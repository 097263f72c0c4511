"""Which keyword search for the PostgreSQL index? Measures, on the same rows of one PostgreSQL:

- ``bm25-terms``   what PostgresIndex does: the Python terms (words + CJK bigrams) in a TEXT[]
                   with a GIN index, ranked by FTS5's BM25 (same scores as the SQLite index);
- ``tsrank-terms`` a tsvector built with the 'simple' config over the same Python terms, GIN
                   index, ranked by ts_rank (term frequency, no IDF);
- ``trigram-word`` pg_trgm over the raw text: ``query <% content`` (GIN gin_trgm_ops, threshold 0.1),
                   ranked by word_similarity(query, content);
- ``trigram-sim``  pg_trgm similarity(content, query) over every row of the namespace (no filter).

Corpora: every LoCoMo turn (English; query = the question, gold = its evidence turns) and every
MADial-Bench zh memory (Chinese; query = the dialogue so far, gold = its relevant memories), one
namespace per conversation / user. Recall@k = share of gold items in the top k, averaged.
No embedder is involved (vectors are a constant), so the numbers isolate the keyword part.

    python benchmarks/pg_keyword.py DSN [--locomo FILE] [--madial DIR] [--json OUT]

DSN: an empty database or a schema (``options=-csearch_path=bench,public``); tables are created there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

from memfold.engine.write.conversations import locomo_sessions
from memfold.eval.locomo import load_locomo
from memfold.eval.madial import load_madial
from memfold.eval.metrics import normalise_evidence
from memfold.index.base import IndexItem
from memfold.index.postgres import PostgresIndex
from memfold.models import MemoryRecord, MemoryType, utcnow
from memfold.text.terms import fts_document, terms

KS = (5, 10)
METHODS = ("bm25-terms", "tsrank-terms", "trigram-word", "trigram-sim")
_TSRANK = ("SELECT id FROM user_memories WHERE user_id = %s AND tsv @@ to_tsquery('simple', %s) "
           "ORDER BY ts_rank(tsv, to_tsquery('simple', %s)) DESC, n LIMIT %s")
_TRGM = ("SELECT id FROM user_memories WHERE user_id = %s AND %s <%% content "
         "ORDER BY word_similarity(%s, content) DESC, n LIMIT %s")
_TRGM_SIM = "SELECT id FROM user_memories WHERE user_id = %s ORDER BY similarity(content, %s) DESC, n LIMIT %s"


def corpus_locomo(path: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, set[str]]]]:
    rows, questions = [], []
    for i, c in enumerate(load_locomo(path)):
        ns = f"locomo-{i}"
        sessions = locomo_sessions(c["conversation"])
        known = set()
        for s in sessions:
            for m in s:
                if m.get("turn_id") and m["content"].strip():
                    rows.append((ns, f"{ns}:{m['turn_id']}", m["content"]))
                    known.add(str(m["turn_id"]))
        for q in c["qa"]:
            gold = normalise_evidence(q.get("evidence") or [], known)
            if str(q.get("question") or "").strip() and gold and str(q.get("category")) != "5":
                questions.append((ns, q["question"], {f"{ns}:{g}" for g in gold}))
    return rows, questions


def corpus_madial(folder: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, set[str]]]]:
    memories, dialogues = load_madial(folder)
    rows = [(f"madial-{m.user}", f"madial:{m.id}", m.text) for m in memories]
    return rows, [(f"madial-{d.user}", d.query, {f"madial:{g}" for g in d.gold}) for d in dialogues]


def load(ix: PostgresIndex, rows: list[tuple[str, str, str]]) -> None:
    vec = np.zeros(ix.dim, dtype=np.float32)
    vec[0] = 1.0
    now = utcnow()
    for start in range(0, len(rows), 500):
        ix.upsert([IndexItem(MemoryRecord(id=mid, user_id=ns, memory_type=MemoryType.EVENT, content=text,
                                          created_at=now, updated_at=now, file=""), vec, fts_document(text))
                   for ns, mid, text in rows[start:start + 500]])


def prepare_alternatives(ix: PostgresIndex) -> None:
    with ix._cur(write=True) as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")  # public: beside pgvector
        cur.execute("ALTER TABLE user_memories ADD COLUMN IF NOT EXISTS tsv tsvector")
        cur.execute("UPDATE user_memories SET tsv = to_tsvector('simple', array_to_string(terms, ' '))")
        cur.execute("CREATE INDEX IF NOT EXISTS bench_tsv ON user_memories USING gin (tsv)")
        cur.execute("CREATE INDEX IF NOT EXISTS bench_trgm ON user_memories USING gin (content gin_trgm_ops)")
        cur.execute("ANALYZE user_memories")
    with ix._cur() as cur:
        cur.execute("VACUUM user_memories")  # merge GIN pending lists of the new tsv/trgm indexes


def rank(ix: PostgresIndex, method: str, ns: str, query: str, k: int) -> list[str]:
    if method == "bm25-terms":
        return [m for m, _ in ix.keyword_search(ns, terms(query, query=True), k)]
    with ix._cur() as cur:
        if method == "tsrank-terms":
            q = " | ".join("'" + t.replace("'", "''") + "'" for t in dict.fromkeys(terms(query, query=True)))
            if not q:
                return []
            cur.execute(_TSRANK, (ns, q, q, k))
        elif method == "trigram-word":
            cur.execute("SET pg_trgm.word_similarity_threshold = 0.1")
            cur.execute(_TRGM, (ns, query, query, k))
        else:
            cur.execute(_TRGM_SIM, (ns, query, k))
        return [r[0] for r in cur.fetchall()]


def measure(ix: PostgresIndex, questions: list[tuple[str, str, set[str]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for method in METHODS:
        recall = {k: [] for k in KS}
        ms = []
        for ns, query, gold in questions:
            t = time.perf_counter()
            top = rank(ix, method, ns, query, max(KS))
            ms.append((time.perf_counter() - t) * 1000)
            for k in KS:
                recall[k].append(len(gold & set(top[:k])) / len(gold))
        out[method] = {**{f"recall@{k}": round(statistics.fmean(v), 4) for k, v in recall.items()},
                       "p50_ms": round(statistics.median(ms), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dsn")
    ap.add_argument("--locomo", default="../shared/data/locomo/locomo_dev.json")
    ap.add_argument("--madial", default="../shared/data/madial/zh")
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    ix = PostgresIndex(args.dsn, dim=8, embedder_name="bench-keyword")
    if ix.count("madial-x", active_only=False) or ix.user_ids():
        sys.exit("the target already holds rows: give an empty database or schema")
    report: dict[str, Any] = {}
    data = {"locomo (en)": corpus_locomo(args.locomo), "madial zh": corpus_madial(args.madial)}
    for name, (rows, _) in data.items():
        load(ix, rows)
    prepare_alternatives(ix)
    for name, (rows, questions) in data.items():
        report[name] = {"rows": len(rows), "queries": len(questions), **measure(ix, questions)}
    ix.close()
    print(f"{'corpus':14} {'method':13} {'recall@5':>9} {'recall@10':>9} {'p50 ms':>7} {'p99 ms':>7}")
    for name, r in report.items():
        for m in METHODS:
            x = r[m]
            print(f"{name:14} {m:13} {x['recall@5']:9.3f} {x['recall@10']:9.3f} {x['p50_ms']:7.2f} {x['p99_ms']:7.2f}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()
