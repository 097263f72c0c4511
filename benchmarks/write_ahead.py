"""Acknowledgement latency of ``add`` with and without write-ahead mode, same run, same texts.

    .venv/bin/python benchmarks/write_ahead.py [--n 300] [--backend sqlite|postgres] [--dsn DSN]

Adds ``--n`` single facts one call at a time into a fresh workspace, first in the normal mode
(the model embeds inside ``add``), then with ``[index] write_ahead = true`` (``add`` returns once
the memory is in its file and the index; the worker embeds behind it). Prints add p50/p99 in ms
for both, and for write-ahead the seconds until every vector was stored after the last add
(``VectorWorker.flush``). The bundled model is loaded before the clock starts."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time

from memfold import Memory
from memfold.config import load_settings
from memfold.eval.fresh_words import FreshWords
from memfold.providers.embedder import make_embedder


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))] * 1000, 2) if xs else 0.0


def run(n: int, write_ahead: bool, backend: str, dsn: str) -> dict[str, float]:
    root = tempfile.mkdtemp(prefix="memfold-wa-")
    index = {"backend": backend, "write_ahead": write_ahead, "write_ahead_delay_ms": 50}
    if backend == "postgres":
        index["dsn"] = dsn
    settings = load_settings(root, index=index)
    emb = make_embedder(settings.embedder)
    emb.embed(["warm up"])
    words = FreshWords(seed=3)
    facts = [words.fact("en" if i % 2 else "zh") for i in range(n)]
    user = f"wa{os.getpid()}{int(write_ahead)}"
    lat = []
    try:
        with Memory(settings=settings, embedder=emb) as mem:
            mem.add("warm up the namespace", user)
            for f in facts:
                t0 = time.perf_counter()
                mem.add(f, user)
                lat.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            if mem.vector_worker is not None:
                mem.vector_worker.flush(timeout=600)
            follow = time.perf_counter() - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"add_p50_ms": pct(lat, 50), "add_p99_ms": pct(lat, 99), "vectors_follow_s": round(follow, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--backend", default="sqlite")
    ap.add_argument("--dsn", default=os.environ.get("MEMFOLD_INDEX__DSN", ""))
    args = ap.parse_args()
    load = os.getloadavg()
    normal = run(args.n, False, args.backend, args.dsn)
    ahead = run(args.n, True, args.backend, args.dsn)
    print(f"{args.backend}, {args.n} single adds, load average {load[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"normal      add p50 {normal['add_p50_ms']:7.2f} ms  p99 {normal['add_p99_ms']:7.2f} ms")
    print(f"write-ahead add p50 {ahead['add_p50_ms']:7.2f} ms  p99 {ahead['add_p99_ms']:7.2f} ms  "
          f"vectors stored {ahead['vectors_follow_s']:.3f} s after the last add")


if __name__ == "__main__":
    main()
