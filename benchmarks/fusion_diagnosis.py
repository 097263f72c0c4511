"""Where the fusion loses gold memories (issue 16, item 3): for every gold memory a search misses
at k, its rank on the keyword side, on the vector side and in the final list, and whether it was
a candidate at all (the first ``max(2k, candidate_pool_min)`` of a side); then what any weighting
of the two sides could do: the recall of plain weighted fusion at every keyword weight 0, 0.05 …
1 (best fixed weight) and with the best weight chosen per question after the fact (an oracle: an
upper bound for any per-query fusion weight, e.g. one set by each side's confidence).

    nice -n 10 python benchmarks/fusion_diagnosis.py --vector-cache /tmp/vc --sets madial-zh,madial-en

Ranks are over the whole namespace (keyword: memories holding a query term). The oracle and
the weight sweep fuse the two candidate lists exactly as ``engine/read.py`` does, without the
adjustments after it (speaker, question, time bonus, feedback terms): on MADial those are inert
(excerpt queries get no feedback; all memories share importance and age), so its "fusion alone"
row reproduces the real search's recall."""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from tune import DATA, sets

from memfold.engine.memory import Memory
from memfold.engine.read import fuse, query_vector
from memfold.eval.harness import Probe, eval_memory
from memfold.text.terms import terms

DEPTH = 1000  # candidates asked per side: every memory of a MADial user or a LoCoMo conversation
WEIGHTS = [round(i / 20, 2) for i in range(21)]


def _rank(ids: list[str], sources: dict[str, tuple[str, ...]], gold: str) -> int | None:
    return next((i + 1 for i, m in enumerate(ids) if gold in sources.get(m, ())), None)


def _recall(order: list[str], sources: dict[str, tuple[str, ...]], gold: tuple[str, ...], k: int) -> float:
    found = {s for m in order[:k] for s in sources.get(m, ())}
    return len(set(gold) & found) / len(gold)


def _bucket(rank: int | None, k: int) -> str:
    """Where a missed memory ended: just below the cut (k+1 … 2k), further (… 4k), or lower / not returned."""
    if rank is None or rank > 4 * k:
        return f"below {4 * k} or not returned"
    return f"{k + 1}-{2 * k}" if rank <= 2 * k else f"{2 * k + 1}-{4 * k}"


def _median(ranks: list[int]) -> float | None:
    return float(statistics.median(ranks)) if ranks else None


def diagnose(mem: Memory, probes: list[Probe], k: int) -> dict[str, Any]:
    missed: list[dict[str, Any]] = []
    by_weight = np.zeros((len(probes), len(WEIGHTS)))
    real = []
    for n, p in enumerate(probes):
        pol = mem.policy(p.namespace)
        want = max(2 * k, pol.candidate_pool_min)
        qterms = terms(p.query, query=True)
        keyword = mem.index.keyword_search(p.namespace, qterms, DEPTH) if qterms else []
        vector = mem.index.vector_search(p.namespace, query_vector(mem.embedder, p.query, pol.query_last_line_weight),
                                         DEPTH)
        ids = list(dict.fromkeys([m for m, _ in keyword] + [m for m, _ in vector]))
        sources = {r.id: tuple(r.source_ids) for r in mem.index.get(p.namespace, ids)}
        for j, w in enumerate(WEIGHTS):
            fused = fuse(keyword[:want], vector[:want], w)
            by_weight[n, j] = _recall(sorted(fused, key=lambda m: (-fused[m][0], m)), sources, p.gold, k)
        hits = mem.search(p.query, p.namespace, limit=k, record_access=False, now=p.now)
        deep = [h.record.id for h in mem.search(p.query, p.namespace, limit=50, record_access=False, now=p.now)]
        real.append(_recall([h.record.id for h in hits], sources, p.gold, k))
        found = {s for h in hits for s in h.record.source_ids}
        for g in p.gold:
            if g in found:
                continue
            kr, vr = _rank([m for m, _ in keyword], sources, g), _rank([m for m, _ in vector], sources, g)
            in_k, in_v = kr is not None and kr <= want, vr is not None and vr <= want
            where = ("both sides' candidates" if in_k and in_v else "keyword candidates only" if in_k
                     else "vector candidates only" if in_v else "not a candidate")
            missed.append({"probe": p.group, "gold": g, "keyword_rank": kr, "vector_rank": vr,
                           "final_rank": _rank(deep, sources, g), "where": where})
    at = WEIGHTS.index(round(mem.policy("default").fusion_keyword_weight, 2))
    mean = by_weight.mean(axis=0)
    return {
        "probes": len(probes), "gold": sum(len(p.gold) for p in probes), "recall": float(np.mean(real)),
        "missed": len(missed), "where": dict(Counter(m["where"] for m in missed)),
        "final_rank_of_missed": dict(Counter(_bucket(m["final_rank"], k) for m in missed)),
        "missed_in_a_sides_top_k": {side: sum(1 for m in missed if m[side] is not None and m[side] <= k)
                                    for side in ("keyword_rank", "vector_rank")},
        "median_rank_of_missed": {side: _median([m[side] for m in missed if m[side] is not None])
                                  for side in ("keyword_rank", "vector_rank", "final_rank")},
        "fusion_alone_at_default_weight": float(mean[at]),
        "best_fixed_weight": WEIGHTS[int(mean.argmax())], "fusion_at_best_fixed_weight": float(mean.max()),
        "oracle_weight_per_query": float(by_weight.max(axis=1).mean()),
        "keyword_alone": float(mean[-1]), "vector_alone": float(mean[0]),
        "missed_memories": missed,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--vector-cache", default=None, help="folder of cached vectors (strongly advised)")
    ap.add_argument("--sets", default="madial-zh,madial-en", help="any of locomo, madial-zh, madial-en")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON report (every missed memory) here")
    args = ap.parse_args()
    report: dict[str, Any] = {}
    for name, ingest, _scheme, k, metric in sets(args.data, None):
        if name not in args.sets.split(",") or metric != "recall":
            continue
        with eval_memory(None, vector_cache=args.vector_cache) as mem:
            report[name] = r = diagnose(mem, ingest(mem), k)
        print(f"\n{name}: {r['probes']} probes, {r['gold']} gold memories, R@{k} {r['recall']:.4f}, "
              f"{r['missed']} missed at k = {k}")
        for where, count in sorted(r["where"].items(), key=lambda x: -x[1]):
            print(f"  {where:>24}: {count}")
        print("  final rank of a missed memory: " + ", ".join(f"{b} {n}" for b, n in sorted(r["final_rank_of_missed"].items())))
        print("  missed although in a side's top k: " + ", ".join(f"{s} {n}" for s, n in r["missed_in_a_sides_top_k"].items()))
        print("  median rank of a missed memory: " + ", ".join(f"{s} {v}" for s, v in r["median_rank_of_missed"].items()))
        print(f"  weighted fusion alone: keyword only {r['keyword_alone']:.4f}, vector only {r['vector_alone']:.4f}, "
              f"default weight {r['fusion_alone_at_default_weight']:.4f}, best fixed weight "
              f"{r['best_fixed_weight']} {r['fusion_at_best_fixed_weight']:.4f}, "
              f"best weight per query (oracle) {r['oracle_weight_per_query']:.4f}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
