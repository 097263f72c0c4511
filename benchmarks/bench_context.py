"""Latency of ``build_context`` (SPEC §6) at 10k and 100k memories: p50 / p95 / mean.

    python benchmarks/bench_context.py                    # 10k and 100k, 50 queries each
    python benchmarks/bench_context.py --sizes 10000 --queries 20 --out /tmp/ctx.json

Setup (not timed): a workspace in a temporary folder; N typed memories written through the
store (MEMORY.md + the SQLite index) with their vectors precomputed — a pool of distinct
sentences is embedded once with the bundled embedder and each memory takes a pool vector
plus a little noise, so that seeding 100k memories takes seconds, not an hour of embedding.
A session holds 12 messages and a summary; the agent has a full pin list.

Timed: ``session.context(query)`` end to end — query embedding, keyword + vector search,
rescoring, access statistics, grouping, capacity cap, token counting and fitting. Also timed
separately: the query embedding alone and the same call with memory off (no retrieval)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memfold import Memory, MemoryType
from memfold.engine.storage import records as rec
from memfold.engine.storage.store import file_for
from memfold.models import MemoryRecord, utcnow
from memfold.providers.embedder import embed_query

FOODS = ["green tea", "oat milk", "sourdough", "ramen", "dark chocolate", "espresso", "dumplings", "kimchi",
         "porridge", "mango", "sushi", "tacos", "pho", "hummus", "paella", "croissants"]
MEALS = ["breakfast", "lunch", "dinner", "a snack", "late nights", "weekends", "travel days", "work days"]
RELATIONS = ["sister", "brother", "manager", "dentist", "neighbour", "daughter", "son", "best friend", "coach"]
NAMES = ["Alice", "Bob", "Chen Wei", "Dana", "Emeka", "Farah", "Goro", "Hana", "Ivan", "Julia", "Kofi", "Lina",
         "Marco", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomoko"]
PLACES = ["Kyoto", "Lisbon", "the climbing gym", "Berlin", "the dentist", "the lake house", "Oslo", "the office"]
TASKS = ["renew the passport", "file the tax return", "book the flights", "call the bank", "fix the bike",
         "back up the laptop", "pay the rent", "water the plants", "update the resume"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TOOLS = ["git bisect", "rsync -a", "docker compose up", "pg_dump", "make test", "kubectl rollout restart"]


def _sentence(rng: random.Random) -> tuple[MemoryType, str]:
    kind = rng.randrange(7)
    if kind == 0:
        return MemoryType.PREFERENCE, f"I prefer {rng.choice(FOODS)} for {rng.choice(MEALS)}"
    if kind == 1:
        return MemoryType.FACT, f"My {rng.choice(RELATIONS)}'s name is {rng.choice(NAMES)}"
    if kind == 2:
        return MemoryType.PATTERN, f"{rng.choice(NAMES)} usually goes to {rng.choice(PLACES)} on {rng.choice(DAYS)}s"
    if kind == 3:
        return (MemoryType.EVENT, f"On {rng.choice(DAYS)} {rng.randint(1, 28)} May I visited {rng.choice(PLACES)} "
                                  f"with {rng.choice(NAMES)}")
    if kind == 4:
        return MemoryType.TODO, f"I need to {rng.choice(TASKS)} before {rng.choice(DAYS)}"
    if kind == 5:
        return MemoryType.SKILL, f"To {rng.choice(TASKS)} faster, script it with {rng.choice(TOOLS)}"
    return MemoryType.NOTE, f"Note about {rng.choice(PLACES)}: {rng.choice(NAMES)} recommended {rng.choice(FOODS)}"


def _queries(rng: random.Random, n: int) -> list[str]:
    forms = [lambda: f"What do I like to eat for {rng.choice(MEALS)}?",
             lambda: f"What is my {rng.choice(RELATIONS)} called?",
             lambda: f"When does {rng.choice(NAMES)} go to {rng.choice(PLACES)}?",
             lambda: f"What do I still need to do before {rng.choice(DAYS)}?",
             lambda: f"How can I {rng.choice(TASKS)} quickly?",
             lambda: f"Who did I visit {rng.choice(PLACES)} with?"]
    return [rng.choice(forms)() for _ in range(n)]


def seed(m: Memory, n: int, pool_size: int, rng: random.Random, batch: int = 5000) -> float:
    """Write ``n`` memories for user 'default'; returns seconds spent."""
    t0 = time.perf_counter()
    pool: dict[str, MemoryType] = {}
    while len(pool) < pool_size:
        t, s = _sentence(rng)
        pool.setdefault(s, t)
    texts = list(pool)
    vecs = m.embedder.embed(texts)
    nrng = np.random.default_rng(7)
    st = m._store("default")  # noqa: SLF001 - a benchmark seeds the store directly, vectors precomputed
    now = utcnow()
    for start in range(0, n, batch):
        recs, rows = [], []
        for i in range(start, min(n, start + batch)):
            j = i % len(texts)
            when = now - timedelta(days=int(rng.random() * 400))
            r = MemoryRecord(id=rec.new_id(), user_id="default", memory_type=pool[texts[j]],
                             content=f"{texts[j]} (#{i})", created_at=when, updated_at=when,
                             importance=round(rng.uniform(0.2, 0.9), 2), agent_id="bench")
            recs.append(r.with_(file=file_for(r)))
            v = vecs[j] + nrng.normal(0, 0.02, vecs.shape[1]).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        st.append(recs, np.vstack(rows), [])
    return time.perf_counter() - t0


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _summary(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(_pct(ms, 0.5), 2), "p95_ms": round(_pct(ms, 0.95), 2),
            "mean_ms": round(statistics.fmean(ms), 2), "min_ms": round(min(ms), 2), "max_ms": round(max(ms), 2)}


def run_size(n: int, queries: int, pool: int, rng: random.Random) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memfold-bench-") as tmp:
        m = Memory(root=Path(tmp) / "ws")
        try:
            seed_s = seed(m, n, pool, rng)
            s = m.session("bench", agent_id="bench")
            for i in range(12):
                s.add_message("user" if i % 2 == 0 else "assistant",
                              f"Turn {i}: let us plan the week, with errands and meals for {rng.choice(NAMES)}.")
            off = m.session("bench", agent_id="bench", memory_enabled=False)
            qs = _queries(rng, queries)
            for q in qs[:3]:  # warm-up: caches, vector matrix, tokenizer
                s.context(q)
            full, no_mem, embed = [], [], []
            last = None
            for q in qs:
                t = time.perf_counter()
                last = s.context(q)
                full.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                embed_query(m.embedder, [q])
                embed.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                off.context(q)
                no_mem.append((time.perf_counter() - t) * 1000)
            assert last is not None
            return {"memories": m.index.count("default"), "queries": len(qs), "seed_seconds": round(seed_s, 1),
                    "build_context": _summary(full), "query_embedding": _summary(embed),
                    "memory_off": _summary(no_mem), "context_tokens": last.tokens,
                    "memory_chars": last.memory_chars, "embedder": m.embedder.name}
        finally:
            m.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--pool", type=int, default=1500, help="distinct sentences embedded for the synthetic memories")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    results = []
    for n in args.sizes:
        print(f"seeding {n} memories …", file=sys.stderr, flush=True)
        results.append(run_size(n, args.queries, args.pool, rng))
    head = f"{'memories':>9} {'queries':>7} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} │ " \
           f"{'embed p50':>9} {'off p50':>8} {'tokens':>7}"
    print("build_context latency (session.context(query), memory on)")
    print(head)
    print("─" * len(head))
    for r in results:
        b = r["build_context"]
        print(f"{r['memories']:>9} {r['queries']:>7} {b['p50_ms']:>8.1f} {b['p95_ms']:>8.1f} {b['mean_ms']:>8.1f} │ "
              f"{r['query_embedding']['p50_ms']:>9.1f} {r['memory_off']['p50_ms']:>8.1f} {r['context_tokens']:>7}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"benchmark": "build_context", "results": results}, indent=2) + "\n",
                            encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
