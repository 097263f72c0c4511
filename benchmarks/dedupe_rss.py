"""Memory of a write with very many messages: 40,000 one-word messages (the request that once took a
server to 7 GB through the near-duplicate check's n × n matrix).

    python benchmarks/dedupe_rss.py [--messages 40000] [--root DIR]

1. One ``add`` with all of them is refused before any work (over the messages-per-call bound):
   the error and the RSS before and after.
2. The same messages sent as ``memfold ingest`` sends them (calls of at most the bound): the time
   and the peak RSS of the process (``ru_maxrss``).
3. The near-duplicate planner alone on all of them as one call's candidates (vectors of the bundled
   embedder's size): its peak allocation (``tracemalloc``) next to what an n × n matrix would take."""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from memfold import Memory
from memfold.engine.write import dedupe
from memfold.engine.write.conversations import batches
from memfold.errors import LimitExceededError
from memfold.limits import MAX_MESSAGES
from memfold.models import EPISODIC, MemoryRecord, MemoryType, utcnow

WORDS = ("apple river stone cloud piano garden rocket violet summer harbor candle forest lemon silver tiger "
         "window ocean pencil marble castle bridge copper desert falcon glacier hammer island jungle kettle").split()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=40_000)
    ap.add_argument("--root", default=None)
    args = ap.parse_args()
    n = args.messages
    msgs = [{"role": "user", "content": f"{WORDS[i % len(WORDS)]}{i}"} for i in range(n)]
    root = args.root or tempfile.mkdtemp(prefix="memfold-dedupe-rss-")
    with Memory(root=root) as mem:
        mem.add("warm up the model", "bench")
        before = rss_mb()
        t0 = time.perf_counter()
        try:
            mem.add(msgs, "bench", infer=False)
            print("1. one call: accepted (no bound?)")
        except LimitExceededError as exc:
            print(f"1. one call of {n:,} messages: refused in {1000 * (time.perf_counter() - t0):.1f} ms "
                  f"(field {exc.field!r}: {exc}); RSS {before:.0f} -> {rss_mb():.0f} MB")
        t0 = time.perf_counter()
        calls = stored = 0
        for batch in batches([msgs]):
            stored += len(mem.add(batch, "bench", infer=False).added)
            calls += 1
        print(f"2. in {calls} calls of at most {MAX_MESSAGES:,}: {stored:,} turns stored in "
              f"{time.perf_counter() - t0:.0f} s; RSS now {rss_mb():.0f} MB, peak of the process {peak_mb():.0f} MB")
        dim = mem.embedder.dim
    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    now = utcnow()
    cands = [dedupe.Candidate(MemoryRecord(id=f"c{i}", user_id="bench", memory_type=MemoryType.EVENT,
                                           content=m["content"], created_at=now, updated_at=now, file=EPISODIC),
                              dedupe.Origin.TURN) for i, m in enumerate(msgs)]
    near = dedupe.Neighbours([[] for _ in range(n)], {}, 0.9)
    tracemalloc.start()
    t0 = time.perf_counter()
    plan = dedupe.plan(cands, vecs, near, dedupe.RuleDecider())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"3. the planner on {n:,} candidates of dimension {dim}: {len(plan.store):,} kept in "
          f"{time.perf_counter() - t0:.0f} s, peak allocation {peak / 2**20:.0f} MB (the vectors: "
          f"{vecs.nbytes / 2**20:.0f} MB; an n x n matrix of float32 would be {n * n * 4 / 2**30:.1f} GB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
