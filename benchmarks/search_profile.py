"""Where a memfold search's time goes, stage by stage: the query embedding, then keyword search,
vector search, fusion, reading the candidate rows, the relevance floor, and the rest (the scoring
loop, policy and file checks, metrics). Each stage is timed by a wrapper around the function that
does it, in the thread's CPU time (``time.thread_time``: what the stage costs, whatever other
processes do to the wall clock) and in wall time; every query is asked once (distinct queries: no
cache hits).

    nice -n 10 python benchmarks/search_profile.py --n 2000 --root /tmp/sp-2k --queries 600

``--root`` keeps the store between runs (it is built once, with the bundled embedder).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.engine.read import read
from memfold.eval.bench import synthetic_queries, synthetic_texts
from memfold.providers.embedder import UseEmbedder


def _timed(fn: Any, label: str, acc: dict[str, list[tuple[float, float]]]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[label].append((time.thread_time() - c0, time.perf_counter() - w0))
    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--root", type=Path, required=True)
    args = ap.parse_args()
    emb = UseEmbedder()
    fresh = not (args.root / "index.db").exists()
    mf = Memory(root=args.root, embedder=emb)
    if fresh:
        texts = synthetic_texts(args.n)
        for i in range(0, args.n, 1000):
            mf.add([{"role": "user", "content": t} for t in texts[i: i + 1000]], "bench", infer=False)
    queries = list(dict.fromkeys(q for seed in range(60) for q in synthetic_queries(200, seed=seed)))
    queries = queries[: args.queries + 1]
    mf.search(queries[0], "bench", limit=10, record_access=False)  # the model and the structures loaded

    acc: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name, label in (("query_vector", "query embedding"), ("fuse", "fusion"), ("terms", "query terms"),
                        ("collapse_turn_copies", "collapse of copies"), ("with_word_match", "word match")):
        setattr(read, name, _timed(getattr(read, name), label, acc))
    floor = read.Retriever._above_floor
    read.Retriever._above_floor = staticmethod(_timed(floor, "relevance floor", acc))  # type: ignore[method-assign]
    store = mf.retriever._store("bench")
    for name, label in (("keyword_search", "keyword search"), ("vector_search", "vector search"),
                        ("get", "read candidate rows"), ("get_shared", "read candidate rows"),
                        ("terms_held", "relevance floor: terms from the index")):
        if hasattr(store.index, name):
            setattr(store.index, name, _timed(getattr(store.index, name), label, acc))
    store.sync = _timed(store.sync, "file check (sync)", acc)  # type: ignore[method-assign]
    total: list[tuple[float, float]] = []
    for q in queries[1:]:
        c0, w0 = time.thread_time(), time.perf_counter()
        mf.search(q, "bench", limit=10, record_access=False)
        total.append((time.thread_time() - c0, time.perf_counter() - w0))
    mf.close()

    def mean_ms(xs: list[tuple[float, float]], i: int) -> float:
        return round(sum(x[i] for x in xs) / len(total) * 1000, 3)  # per search

    stages = {k: {"cpu_ms": mean_ms(v, 0), "wall_ms": mean_ms(v, 1)} for k, v in acc.items()}
    rest = {i: mean_ms(total, i) - sum(s["cpu_ms" if i == 0 else "wall_ms"] for s in stages.values()) for i in (0, 1)}
    stages["rest (scoring loop, policy, metrics, cache keys)"] = {"cpu_ms": round(rest[0], 3),
                                                                  "wall_ms": round(rest[1], 3)}
    report = {"n": args.n, "queries": len(total), "load_avg": os.getloadavg(),
              "search_cpu_ms": {"mean": mean_ms(total, 0),
                                "p50": round(statistics.median(x[0] for x in total) * 1000, 3)},
              "search_wall_ms_p50": round(statistics.median(x[1] for x in total) * 1000, 3),
              "stages_per_search": stages}
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
