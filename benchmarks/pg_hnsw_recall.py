"""The nearest-rows query of a PostgreSQL search alone: its time and its recall against an exact
search, per ``hnsw.ef_search`` (and ``hnsw.iterative_scan``), on a namespace ``pg_search_ab.py``
built, with the bench's synthetic queries embedded as a search embeds them.

    python benchmarks/pg_hnsw_recall.py --dsn postgresql://postgres@127.0.0.1:55432/b100k --root /tmp/ws100k \\
        [--queries 200] [--ef 40,64,100] [--limit 20] [--rounds 3] [--explain]

Exact = cosine against every active vector of the namespace, in numpy (float32; ties at the cut
count as found). Time = wall time of the statement as a search sends it (loopback round trip
included), the ``ef`` values taking turns query by query; with ``--explain`` also the server's
``EXPLAIN (ANALYZE, BUFFERS)`` execution time and buffers of one query per ``ef``."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from memfold.config import load_settings
from memfold.engine.read.read import query_vector
from memfold.eval.bench import synthetic_queries
from memfold.index.postgres import _NEAREST
from memfold.providers.embedder import make_embedder

USER = "bench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--ef", default="20,40,64,100")
    ap.add_argument("--iterative", default="strict_order")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--explain", action="store_true")
    args = ap.parse_args()
    settings = load_settings(args.root)
    emb = make_embedder(settings.embedder)
    queries = synthetic_queries(args.queries, seed=args.seed)
    qv = np.stack([query_vector(emb, q, 0.0) for q in queries]).astype(np.float32)
    efs = [int(x) for x in args.ef.split(",")]
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(f"SET hnsw.iterative_scan = {args.iterative}")
        rows = conn.execute("SELECT id, embedding FROM user_memories WHERE user_id = %s AND is_active "
                            "AND embedding IS NOT NULL", (USER,)).fetchall()
        ids = np.array([r[0] for r in rows])
        mat = np.stack([np.asarray(r[1].to_numpy() if hasattr(r[1], "to_numpy") else r[1], dtype=np.float32) for r in rows])
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        sims = qv @ mat.T
        exact = []
        for row in sims:
            cut = np.partition(row, len(row) - args.limit)[len(row) - args.limit]
            exact.append(set(ids[row >= cut - 1e-6]))
        times: dict[int, list[float]] = {e: [] for e in efs}
        found: dict[int, list[float]] = {e: [] for e in efs}
        for _ in range(args.rounds):
            for i, v in enumerate(qv):
                for e in efs:
                    conn.execute(f"SET hnsw.ef_search = {e}")
                    t0 = time.perf_counter()
                    got = conn.execute(_NEAREST, {"v": v, "user": USER, "limit": args.limit}).fetchall()
                    times[e].append(time.perf_counter() - t0)
                    if len(found[e]) < len(qv):
                        found[e].append(len({r[0] for r in got} & exact[i]) / args.limit)
        out = {"rows": len(ids), "queries": len(qv), "limit": args.limit, "iterative_scan": args.iterative,
               "load_avg": [round(x, 2) for x in os.getloadavg()], "ef": {}}
        for e in efs:
            ts = sorted(times[e])
            out["ef"][e] = {"p50_ms": round(statistics.median(ts) * 1000, 3),
                            "p95_ms": round(ts[int(0.95 * (len(ts) - 1))] * 1000, 3),
                            f"recall@{args.limit}": round(float(np.mean(found[e])), 4)}
            if args.explain:
                conn.execute(f"SET hnsw.ef_search = {e}")
                plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + _NEAREST,
                                    {"v": qv[0], "user": USER, "limit": args.limit}).fetchall()
                out["ef"][e]["explain"] = [r[0] for r in plan]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
