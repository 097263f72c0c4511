"""What recording live metrics costs, against what a search costs (issue: < 2 % of a search).

1. The cost of one recording: ``observe`` into the operation histogram and ``inc`` of a cache
   counter, in a tight loop, in this process's memory and (in a subprocess) with
   ``PROMETHEUS_MULTIPROC_DIR`` set (values in mmap'd files, as several server workers do).
2. A search's p50 through ``Memory.search`` (bundled embedder, SQLite, ``--n`` memories, query
   embedding included, in-process cache on; distinct queries, so every one misses the cache).
3. The recordings one search makes: the search, its query embedding and three cache lookups
   (query vector, keyword and vector results).

    python benchmarks/metrics_overhead.py [--n 2000] [--queries 300] [--json OUT]

Prints the share of a search that recording costs; report it with the load average it prints."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LOOP = """
import time
from memfold.metrics import registry
N = {n}
t = time.perf_counter()
for _ in range(N):
    registry.observe("search", 0.003)
t_obs = (time.perf_counter() - t) / N
t = time.perf_counter()
for _ in range(N):
    registry.record_cache("query", "hit")
t_inc = (time.perf_counter() - t) / N
print(t_obs * 1e6, t_inc * 1e6)
"""


def recording_cost(n: int, multiproc: bool) -> tuple[float, float]:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as folder:
        if multiproc:
            env["PROMETHEUS_MULTIPROC_DIR"] = folder
        else:
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        out = subprocess.run([sys.executable, "-c", LOOP.format(n=n)], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
    return float(out[0]), float(out[1])


def search_p50(n: int, queries: int) -> float:
    from memfold import Memory
    from memfold.eval.fresh_words import FreshWords

    with tempfile.TemporaryDirectory() as root, Memory(root=root) as mem:
        gen = FreshWords(seed=7)
        for start in range(0, n, 250):
            mem.add([{"role": "user", "content": gen.fact("zh" if i % 2 else "en")}
                     for i in range(start, min(n, start + 250))], infer=False)
        qs = [gen.query("zh" if i % 2 else "en") for i in range(queries)]
        for q in qs[:20]:
            mem.search(q)
        times = []
        for q in qs:
            t = time.perf_counter()
            mem.search(q)
            times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    one = recording_cost(200_000, False)
    multi = recording_cost(50_000, True)
    p50 = search_p50(args.n, args.queries)
    per_search = {"process": 2 * one[0] + 3 * one[1], "multiprocess": 2 * multi[0] + 3 * multi[1]}
    res = {"observe_us": round(one[0], 3), "inc_us": round(one[1], 3), "observe_us_multiproc": round(multi[0], 3),
           "inc_us_multiproc": round(multi[1], 3), "search_p50_us": round(p50, 1), "n": args.n,
           "share_of_search_pct": {k: round(100 * v / p50, 3) for k, v in per_search.items()},
           "load_avg": os.getloadavg()}
    print(f"one observe: {one[0]:.2f} µs, one counter inc: {one[1]:.2f} µs "
          f"(PROMETHEUS_MULTIPROC_DIR: {multi[0]:.2f} / {multi[1]:.2f} µs)")
    print(f"search p50 at n={args.n}: {p50 / 1000:.2f} ms; a search records 2 observations (search, embedding) "
          "+ 3 increments (cache lookups)")
    for k, v in res["share_of_search_pct"].items():
        print(f"recording share of a search ({k}): {v:.3f} %")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
