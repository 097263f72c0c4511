"""What each optional stage of a search costs, in one process: memfold's defaults, then the keyword
feedback off, then the speaker mask off too, then every optional stage off (``FLOOR_POLICY``, which
``mem0_compare.py --floor`` uses too), each asked every query in turn on the same store (distinct
queries, the model run between two searches as in ``mem0_compare.py``). Printed: the thread's CPU
per search after the embedding (the embedding alone is timed beside them). Run it once with the
cache on (the default) and once with ``MEMFOLD_CACHE__BACKEND=off``.

    python benchmarks/search_floor.py --root /tmp/sf-2k --n 2000 --queries 2000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from memfold import Memory
from memfold.eval.bench import synthetic_queries, synthetic_texts
from memfold.providers.embedder import UseEmbedder, embed_query

# the search with every optional ranking stage off (each a policy key; 0 = off): what is left is the
# hybrid search itself (also ``mem0_compare.py --floor``)
FLOOR_POLICY = {"keyword_feedback_weight": 0.0, "query_speaker_mask": 0.0, "score_bonus_speaker": 0.0,
                "score_penalty_question": 0.0, "score_bonus_time": 0.0, "min_score": 0.0,
                "query_last_line_weight": 0.0}
VARIANTS = {"defaults": {}, "feedback off": {"keyword_feedback_weight": 0.0},
            "feedback and speaker mask off": {"keyword_feedback_weight": 0.0, "query_speaker_mask": 0.0},
            "every optional stage off": FLOOR_POLICY}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="the store (built once with --n synthetic memories)")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=2000)
    args = ap.parse_args()
    emb = UseEmbedder()
    if not (args.root / "index.db").exists():
        with Memory(root=args.root, embedder=emb) as mem:
            texts = synthetic_texts(args.n)
            for i in range(0, args.n, 1000):
                mem.add([{"role": "user", "content": t} for t in texts[i: i + 1000]], "bench", infer=False)
    mems = {name: Memory(root=args.root, embedder=emb, policy=pol) for name, pol in VARIANTS.items()}
    queries = list(dict.fromkeys(q for seed in range(400) for q in synthetic_queries(200, seed=seed)))
    queries = queries[: args.queries + 1]
    for mem in mems.values():  # the model and each handle's structures loaded
        mem.search(queries[0], "bench", limit=10, record_access=False)
    cpu: dict[str, list[float]] = {name: [] for name in [*mems, "embedding"]}
    for q in queries[1:]:
        c = time.thread_time()
        embed_query(emb, [q])
        cpu["embedding"].append(time.thread_time() - c)
        for name, mem in mems.items():
            embed_query(emb, [q + " ."])  # the model between two searches, as in mem0_compare.py
            c = time.thread_time()
            mem.search(q, "bench", limit=10, record_access=False)
            cpu[name].append(time.thread_time() - c)
    embed = statistics.mean(cpu["embedding"])
    report = {"n": args.n, "queries": len(queries) - 1, "cache": os.environ.get("MEMFOLD_CACHE__BACKEND", "memory"),
              "load_avg": os.getloadavg(), "embedding_cpu_ms": round(embed * 1000, 3),
              "after_embedding_cpu_ms": {name: round((statistics.mean(xs) - embed) * 1000, 3)
                                         for name, xs in cpu.items() if name != "embedding"}}
    for mem in mems.values():
        mem.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
