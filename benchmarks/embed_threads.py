"""Embedding throughput of the bundled embedder with a given number of worker threads
(each embeds whole batches on one BLAS thread).

    python benchmarks/embed_threads.py --threads 1
    python benchmarks/embed_threads.py --threads 2
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from memfold.providers.embedder import UseEmbedder

WORDS = "apple river stone cloud violin tiger copper lantern meadow rocket 咖啡 拿铁 项目 截止".split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=0, help="worker threads (0 = all cores)")
    ap.add_argument("--n", type=int, default=1000, help="texts in the batch call")
    args = ap.parse_args()
    rng = random.Random(0)
    texts = [" ".join(rng.choices(WORDS, k=12)) for _ in range(args.n)]
    emb = UseEmbedder(threads=args.threads)
    emb.embed(["warm up"])
    t0 = time.perf_counter()
    emb.embed(texts)
    batch = args.n / (time.perf_counter() - t0)
    singles = []
    for text in texts[:100]:
        t0 = time.perf_counter()
        emb.embed([text])
        singles.append(time.perf_counter() - t0)
    print(f"threads={emb.threads} batch {batch:.0f} texts/s, single p50 {statistics.median(singles) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
