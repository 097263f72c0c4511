"""The timed part of ``memfold bench`` (search with the query embedded, search with the query vector
cached, ``build_context``) on a namespace built once and kept, so that two versions of the code can
be timed on the same rows in one session, one after the other or in turns.

    python benchmarks/pg_search_ab.py --dsn postgresql://postgres@127.0.0.1:55442/b10k --root /tmp/ws10k \\
        --n 10000 [--queries 200] [--rounds 1] [--stages] [--json OUT] [--answers OUT]

The first run ingests ``--n`` of the bench's synthetic texts into ``--root`` and the PostgreSQL
index at ``--dsn`` (user ``bench``); later runs find them there and only search. With ``--bulk`` the
first run ingests into the embedded (SQLite) index at ``--root`` instead, copies it into the empty
PostgreSQL database without the HNSW index (``memfold migrate``: no re-embedding) and builds that
once (``maintenance_work_mem`` 2 GB): 100k rows in ~9 minutes on 2 cores instead of ~25 (every HNSW
insert on its own). Each round asks
a new set of the bench's synthetic queries (a new seed per round: the first search of a query
embeds it), then the same again (the vector cached), then ``build_context`` with each. With
``--stages`` the index calls and the query embedding are timed one by one (wall time per search).
Run another checkout of the code with ``PYTHONPATH=<its src>`` on the same root and DSN to compare."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.config import load_settings
from memfold.engine.read import read
from memfold.eval.bench import BATCH, QueryCachingEmbedder, synthetic_queries, synthetic_texts
from memfold.providers.embedder import make_embedder

USER = "bench"


def pct(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": round(statistics.median(xs) * 1000, 3), "p95": round(xs[int(0.95 * (len(xs) - 1))] * 1000, 3)}


def server_cpu(pid: int) -> float:
    """CPU seconds used so far by a local PostgreSQL: the postmaster ``pid`` and its children (Linux)."""
    if not pid:
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == pid or int(fields[1]) == pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


class Clock:
    """Wall time per call, and the client's and the server's CPU time over a phase."""

    def __init__(self, server_pid: int):
        self.server_pid = server_pid
        self.walls: list[float] = []
        self.cpu = self.srv = 0.0

    def __enter__(self) -> "Clock":
        self.cpu0, self.srv0 = time.process_time(), server_cpu(self.server_pid)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cpu += time.process_time() - self.cpu0
        self.srv += server_cpu(self.server_pid) - self.srv0

    def report(self) -> dict[str, float]:
        n = max(1, len(self.walls))
        out = pct(self.walls)
        out["client_cpu_ms"] = round(self.cpu / n * 1000, 3)
        if self.server_pid:
            out["server_cpu_ms"] = round(self.srv / n * 1000, 3)
        return out


def _timed(fn: Any, label: str, acc: dict[str, float]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[label] += time.perf_counter() - t0
    return wrapper


def bulk_build(root: Path, dsn: str, n: int) -> None:
    """``n`` synthetic texts into the embedded index at ``root``, copied into the empty PostgreSQL
    index at ``dsn`` with its HNSW index built once after the copy (nothing done when it holds rows)."""
    import psycopg

    from memfold.facade.admin import migrate
    from memfold.index.postgres import PostgresIndex
    from memfold.index.transfer import SqliteSource

    settings = load_settings(root, index={"backend": "sqlite"}, cache={"backend": "off"})
    with Memory(settings=settings, embedder=make_embedder(settings.embedder)) as mem:
        have = mem.index.count(USER)
        texts = synthetic_texts(n)
        t0 = time.perf_counter()
        for i in range(have - have % BATCH, n, BATCH):
            mem.add([{"role": "user", "content": t} for t in texts[i: i + BATCH]], USER, infer=False)
            print(f"ingested {i + BATCH} into the embedded index ({time.perf_counter() - t0:.0f} s)", file=sys.stderr,
                  flush=True)
    with SqliteSource.open(root / "index.db") as src:
        PostgresIndex(dsn, dim=src.dim, embedder_name=src.embedder).close()  # the schema
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT count(*) FROM user_memories").fetchone()[0]:
            return
        got = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'user_memories_embedding'").fetchone()
        if got:
            conn.execute("DROP INDEX user_memories_embedding")
    t0 = time.perf_counter()
    migrate(load_settings(root), "postgres", dsn)
    print(f"copied into PostgreSQL ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    if got:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET maintenance_work_mem = '2GB'")
            t0 = time.perf_counter()
            conn.execute(got[0])
            conn.execute("VACUUM ANALYZE user_memories")
            print(f"HNSW index built ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=11, help="query seed of the first round")
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--server-pid", type=int, default=0,
                    help="the local server's postmaster pid: its CPU time per call is reported too")
    ap.add_argument("--label", default=os.path.dirname(os.path.dirname(read.__file__)))
    ap.add_argument("--json", default="")
    ap.add_argument("--bulk", action="store_true", help="build through the embedded index and one HNSW build")
    ap.add_argument("--answers", default="", help="after the timing, write each query's answer (ids, scores, at "
                    "a fixed time) here, one JSON line per query: two codes' files compare answer by answer")
    args = ap.parse_args()
    if args.bulk:
        bulk_build(args.root, args.dsn, args.n)
    settings = load_settings(args.root, index={"backend": "postgres", "dsn": args.dsn}, cache={"backend": "off"})
    emb = QueryCachingEmbedder(make_embedder(settings.embedder))
    with Memory(settings=settings, embedder=emb) as mem:
        have = mem.index.count(USER)
        if have < args.n - args.n // 100:  # built (the near-duplicate check may have merged a few texts)
            texts = synthetic_texts(args.n)
            t0 = time.perf_counter()
            for i in range(have - have % BATCH, args.n, BATCH):
                mem.add([{"role": "user", "content": t} for t in texts[i: i + BATCH]], USER, infer=False)
                print(f"ingested {i + BATCH} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        acc: dict[str, float] = defaultdict(float)
        if args.stages:
            read.query_vector = _timed(read.query_vector, "query embedding", acc)
            store = mem.retriever._store(USER)
            for name in ("keyword_search", "vector_search", "get", "terms_held"):
                if hasattr(store.index, name):
                    setattr(store.index, name, _timed(getattr(store.index, name), name, acc))
            store.sync = _timed(store.sync, "sync", acc)  # type: ignore[method-assign]
        mem.search("warm up", USER, limit=10, record_access=False)
        mem.build_context("warm up", USER)
        embedded, cached, context = Clock(args.server_pid), Clock(args.server_pid), Clock(args.server_pid)
        staged: dict[str, float] = {}
        for r in range(args.rounds):
            queries = synthetic_queries(args.queries, seed=args.seed + r)
            for clock, call in ((embedded, "search"), (cached, "search"), (context, "context")):
                with clock:
                    for q in queries:
                        t0 = time.perf_counter()
                        if call == "search":
                            mem.search(q, USER, limit=10, record_access=False)
                        else:
                            mem.build_context(q, USER)
                        clock.walls.append(time.perf_counter() - t0)
                if clock is embedded:
                    staged = dict(acc)
        rows = mem.index.count(USER)
        if args.answers:
            at = datetime(2026, 11, 27, tzinfo=timezone.utc)  # the recency term does not move between codes
            with open(args.answers, "w") as f:
                for r in range(args.rounds):
                    for q in synthetic_queries(args.queries, seed=args.seed + r):
                        hits = mem.retriever.search(q, USER, limit=10, record_access=False, now=at)
                        f.write(json.dumps({"query": q, "hits": [[h.record.id, h.score, h.similarity, h.keyword_score,
                                                                  h.vector_score, h.relevance] for h in hits]},
                                           ensure_ascii=False) + "\n")
    out = {"code": args.label, "n": rows, "queries": len(embedded.walls), "search_ms": embedded.report(),
           "search_no_embed_ms": cached.report(), "build_context_ms": context.report(),
           "load_avg": [round(x, 2) for x in os.getloadavg()]}
    if args.stages:  # the first pass of each round (query embedded), per search
        out["stages_ms_per_search"] = {k: round(v / len(embedded.walls) * 1000, 3) for k, v in staged.items()}
    print(json.dumps(out))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
