"""memfold vs mem0 on the same synthetic memories, the same embedder, in one process.

Both stores get the bundled USE embedder (mem0's ``embedding_model`` is replaced by an adapter
around the very same object), mem0 stores into FAISS (or local Qdrant) and adds with
``infer=False`` so no LLM is called. Reported: ingest throughput (one ``add`` with a list of
messages per batch, and one message per ``add``), search latency p50/p95/p99 with top-10, and
memfold/mem0 ratios.

mem0 is not a dependency of memfold; run this in an environment that has both:

    python -m venv /tmp/mem0venv
    /tmp/mem0venv/bin/pip install mem0ai faiss-cpu -e .
    MEM0_TELEMETRY=false /tmp/mem0venv/bin/python benchmarks/mem0_compare.py --n 2000 5000 10000 --out mem0.json

``--floor`` asks a fourth contender in the same rotation: memfold on the same store with every
optional stage of its search off (``search_floor.FLOOR_POLICY``: keyword feedback, speaker mask and bonus,
question penalty, time cues, relevance floor) and no query-result cache: what the hybrid search
itself costs (two candidate lists, fusion, the candidates' rows, rescoring), beside mem0's
vector-only search.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "false")  # no posthog calls from this process
os.environ.setdefault("OPENAI_API_KEY", "unused-with-infer-false")  # mem0 builds its default LLM client eagerly

from dataclasses import replace  # noqa: E402

from search_floor import FLOOR_POLICY  # noqa: E402  (beside this script: the floor's policy)

from memfold import Memory  # noqa: E402
from memfold.config import CacheSettings, load_settings  # noqa: E402
from memfold.eval.bench import percentiles, synthetic_queries, synthetic_texts  # noqa: E402
from memfold.providers.embedder import UseEmbedder, embed_query  # noqa: E402

BATCH = 1000


class SameEmbedder:
    """mem0's embedder interface over memfold's USE instance (one model, both stores)."""

    def __init__(self, inner: UseEmbedder):
        self.inner = inner
        self.config = None

    def embed(self, text, memory_action=None):  # noqa: ANN001 - mem0's signature
        return self.inner.embed([text])[0].tolist()

    def embed_batch(self, texts, memory_action="add"):  # noqa: ANN001
        return [v.tolist() for v in self.inner.embed(list(texts))]


def time_ingest(name: str, add_batch, add_one, texts: list[str], n: int, n_single: int) -> dict:  # noqa: ANN001
    t0 = time.perf_counter()
    for i in range(0, n, BATCH):
        add_batch(texts[i: min(i + BATCH, n)])
    batch_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for t in texts[n: n + n_single]:
        add_one(t)
    single_s = time.perf_counter() - t0
    return {"store": name, "ingest_batch_per_s": round(n / batch_s, 1),
            "ingest_single_per_s": round(n_single / single_s, 1)}


def time_searches(searches: dict[str, Any], queries: list[str]) -> dict[str, dict[str, float]]:
    """Each query asked of every contender in turn, the order rotating from query to query: all of
    them see the same load over the run (on a shared machine, phases one after the other do not)."""
    names = list(searches)
    for fn in searches.values():
        fn(queries[0])
    lat: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(queries):
        for name in names[i % len(names):] + names[: i % len(names)]:
            c0, t0 = time.process_time(), time.perf_counter()
            searches[name](q)
            lat[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    # the process's CPU time (all its threads: FAISS's too) moves much less with other processes' load
    # than the wall clock does
    return {name: {**percentiles(xs), "cpu_p50": round(statistics.median(cpu[name]) * 1000, 3),
                   "cpu_mean": round(statistics.mean(cpu[name]) * 1000, 3)} for name, xs in lat.items()}


def compare(n: int, args: argparse.Namespace, emb: UseEmbedder, Mem0) -> dict:  # noqa: ANN001 - mem0's class
    """One size: both stores loaded with the same texts, then the same queries asked of memfold, of
    mem0 and of the embedder alone (what both searches spend before their index), interleaved."""
    texts = synthetic_texts(n + args.single)
    queries = synthetic_queries(args.queries)
    tmp = Path(tempfile.mkdtemp(prefix="mem0-compare-"))
    try:
        mf = Memory(root=tmp / "memfold", embedder=emb)
        mf_res = time_ingest(
            "memfold",
            lambda chunk: mf.add([{"role": "user", "content": t} for t in chunk], "bench", infer=False),
            lambda t: mf.add([{"role": "user", "content": t}], "bench", infer=False), texts, n, args.single)
        store_cfg = {"collection_name": "bench", "path": str(tmp / "mem0-store"), "embedding_model_dims": emb.dim}
        if args.vector_store == "qdrant":
            store_cfg["on_disk"] = True
        m0 = Mem0.from_config({"vector_store": {"provider": args.vector_store, "config": store_cfg},
                               "history_db_path": str(tmp / "mem0-history.db")})
        m0.embedding_model = SameEmbedder(emb)
        if args.fast_mem0_load:  # its FAISS store writes itself to disk after every insert: once, after the load
            store, save = m0.vector_store, m0.vector_store._save
            store._save = lambda: None
        m0_res = time_ingest(
            f"mem0 ({args.vector_store})",
            lambda chunk: m0.add([{"role": "user", "content": t} for t in chunk], user_id="bench", infer=False),
            lambda t: m0.add([{"role": "user", "content": t}], user_id="bench", infer=False), texts, n, args.single)
        if args.fast_mem0_load:
            store._save = save
            save()
            m0_res["ingest_note"] = "not comparable: --fast-mem0-load skipped mem0's per-insert saves"
        contenders = {"memfold": lambda q: mf.search(q, "bench", limit=10, record_access=False),
                      "mem0": lambda q: m0.search(q, top_k=10, filters={"user_id": "bench"}),
                      "embedding": lambda q: embed_query(emb, [q])}
        floor = None
        if args.floor:  # the same store, its own process-local structures, no cache, no optional stage
            floor = Memory(root=tmp / "memfold", embedder=emb, policy=FLOOR_POLICY,
                           settings=replace(load_settings(tmp / "memfold"), cache=CacheSettings(backend="off")))
            contenders["memfold floor"] = lambda q: floor.search(q, "bench", limit=10, record_access=False)
        lat = time_searches(contenders, queries)
        mf.close()
        if floor is not None:
            floor.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    mf_res["search_ms"], m0_res["search_ms"], embed_ms = lat["memfold"], lat["mem0"], lat["embedding"]
    print(json.dumps([mf_res, m0_res]), file=sys.stderr, flush=True)
    ratios = {
        "ingest_batch (memfold/mem0, higher is better)":
            round(mf_res["ingest_batch_per_s"] / m0_res["ingest_batch_per_s"], 2),
        "ingest_single (memfold/mem0, higher is better)":
            round(mf_res["ingest_single_per_s"] / m0_res["ingest_single_per_s"], 2),
        "search_p50 (mem0/memfold, higher is better)":
            round(m0_res["search_ms"]["p50"] / max(mf_res["search_ms"]["p50"], 1e-6), 2),
    }
    out = {"n": n, "embedder": emb.name, "cpu_count": os.cpu_count(), "load_avg": os.getloadavg(),
           "query_embedding_ms": embed_ms, "memfold": mf_res, "mem0": m0_res, "ratios": ratios}
    if "memfold floor" in lat:
        out["memfold_floor_search_ms"] = lat["memfold floor"]
        ratios["search_p50 (mem0/memfold floor, higher is better)"] = \
            round(m0_res["search_ms"]["p50"] / max(lat["memfold floor"]["p50"], 1e-6), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000], help="one or more store sizes, run in turn")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--single", type=int, default=200)
    ap.add_argument("--vector-store", choices=("faiss", "qdrant"), default="faiss")
    ap.add_argument("--out", type=Path, default=Path("mem0_compare.json"))
    ap.add_argument("--floor", action="store_true",
                    help="also ask memfold with every optional search stage off and no cache (FLOOR_POLICY)")
    ap.add_argument("--fast-mem0-load", action="store_true",
                    help="load mem0's FAISS store without its save after every insert (its search is unchanged; "
                         "its ingest rate is then not comparable): a 10k run in minutes, not half an hour")
    args = ap.parse_args()

    from mem0 import Memory as Mem0  # imported here: a missing mem0 should fail with its own message

    emb = UseEmbedder()
    reports = [compare(n, args, emb, Mem0) for n in args.n]
    report = reports[0] if len(reports) == 1 else {"runs": reports}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    print("| n | query embedding p50 | memfold search p50 / p95 / p99 | mem0 search p50 / p95 / p99 | mem0/memfold p50 "
          "| CPU mean: embedding / memfold / mem0 |")
    print("|---|---|---|---|---|---|")
    for r in reports:
        mf, m0, e = r["memfold"]["search_ms"], r["mem0"]["search_ms"], r["query_embedding_ms"]
        print(f"| {r['n']:,} | {e['p50']:.2f} | {mf['p50']:.2f} / {mf['p95']:.2f} / "
              f"{mf['p99']:.2f} | {m0['p50']:.2f} / {m0['p95']:.2f} / {m0['p99']:.2f} | "
              f"{r['ratios']['search_p50 (mem0/memfold, higher is better)']:.2f} "
              f"| {e['cpu_mean']:.2f} / {mf['cpu_mean']:.2f} / {m0['cpu_mean']:.2f} |")
    floors = [r for r in reports if "memfold_floor_search_ms" in r]
    if floors:
        print("\n| n | memfold floor p50 / CPU mean | mem0 p50 / CPU mean | mem0/floor p50 |\n|---|---|---|---|")
        for r in floors:
            f, m0 = r["memfold_floor_search_ms"], r["mem0"]["search_ms"]
            print(f"| {r['n']:,} | {f['p50']:.2f} / {f['cpu_mean']:.2f} | {m0['p50']:.2f} / {m0['cpu_mean']:.2f} "
                  f"| {r['ratios']['search_p50 (mem0/memfold floor, higher is better)']:.2f} |")


if __name__ == "__main__":
    main()
