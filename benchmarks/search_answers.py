"""A memfold search after the query embedding, A/B between two trees: the query vectors are computed
first (the model's time left out), then every query is asked once of a fresh ``Memory`` (its
in-process caches empty) and its thread CPU time measured; the answers (ids, scores, relevance,
similarity) are written to ``--out`` so that two trees' files can be compared byte for byte.

    PYTHONPATH=/work/main/src python benchmarks/search_answers.py --root /tmp/sp-2k --out main.json
    PYTHONPATH=src python benchmarks/search_answers.py --root /tmp/sp-2k --out branch.json
    cmp main.json branch.json

``--root``: a store ``search_profile.py`` built (namespace ``bench``). ``--access`` records accesses
(the store changes: give each tree its own copy)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import memfold
from memfold import Memory
from memfold.engine.read import read
from memfold.eval.bench import synthetic_queries
from memfold.providers.embedder import UseEmbedder

NOW = "2026-11-27T08:00:00+00:00"  # recency measured from a fixed moment: scores comparable across runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=800)
    ap.add_argument("--access", action="store_true", help="search with record_access=True")
    args = ap.parse_args()
    emb = UseEmbedder()
    queries = list(dict.fromkeys(q for seed in range(60) for q in synthetic_queries(200, seed=seed)))
    queries = queries[: args.queries + 1]
    vectors: dict[tuple[str, float], Any] = {}
    model = read.query_vector

    def known(embedder: Any, query: str, weight: float) -> Any:
        got = vectors.get((query, weight))
        if got is None:
            got = vectors[(query, weight)] = model(embedder, query, weight)
        return got

    read.query_vector = known  # type: ignore[assignment]
    with Memory(root=args.root, embedder=emb) as mf:  # every query's vector, computed once
        for q in queries:
            mf.search(q, "bench", limit=10, record_access=False, now=NOW)
    cpu: list[float] = []
    answers = []
    with Memory(root=args.root, embedder=emb) as mf:
        mf.search(queries[0], "bench", limit=10, record_access=False, now=NOW)
        for q in queries[1:]:
            c0 = time.thread_time()
            hits = mf.search(q, "bench", limit=10, record_access=args.access, now=NOW)
            cpu.append(time.thread_time() - c0)
            answers.append([(h.record.id, h.score, h.relevance, h.similarity) for h in hits])
    args.out.write_text(json.dumps(answers), encoding="utf-8")
    print(json.dumps({"memfold": memfold.__file__, "queries": len(cpu), "load_avg": os.getloadavg(),
                      "cpu_ms_mean": round(statistics.mean(cpu) * 1000, 3),
                      "cpu_ms_p50": round(statistics.median(cpu) * 1000, 3)}))


if __name__ == "__main__":
    main()
