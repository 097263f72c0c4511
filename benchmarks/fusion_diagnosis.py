"""Where the fusion loses gold memories (issue 16, item 3): for every gold memory a search misses
at k, its rank on the keyword side, on the vector side and in the final list, and whether it was
a candidate at all (the first ``max(2k, candidate_pool_min)`` of a side); then what any weighting
of the two sides could do: the recall of plain weighted fusion at every keyword weight 0, 0.05 …
1 (best fixed weight) and with the best weight chosen per question after the fact (an oracle: an
upper bound for any per-query fusion weight, e.g. one set by each side's confidence).

    nice -n 10 python benchmarks/fusion_diagnosis.py --vector-cache /tmp/vc --sets madial-zh,madial-en

Ranks are over the whole namespace (keyword: memories holding a query term). The oracle and
the weight sweep fuse the two candidate lists exactly as ``engine/read/read.py`` does, without the
adjustments after it (speaker, question, time bonus, feedback terms): on MADial those are inert
(excerpt queries get no feedback; all memories share importance and age), so its "fusion alone"
row reproduces the real search's recall.

The ceiling of re-ranking (issue 16, session 8): for EVERY gold memory (or LongMemEval gold turn),
its rank on each side and in memfold's final list (``gold_memories``), and three oracles at the
set's k. The pool oracle: the recall if the final top k were filled perfectly from the union of each
side's top N (N = 20, 50, 100, 200; 20 is the real pool at k = 5 and 10), scored by the protocol's
own definition (R@k: the share of a question's gold found; LongMemEval's recall_all@k: 1 when every
gold turn is found), so a question with more gold than k memories can hold counts as such. The
same oracle over memfold's own final list (top 20 and 50 of a search asked for 50). And the gold
ranked below ``UNREACHABLE`` on both sides: no re-ranking of these two signals can reach them.

    nice -n 10 python benchmarks/fusion_diagnosis.py --vector-cache /work/vc --search-sweep
        --sets locomo,madial-zh,madial-en,longmemeval    # (one command line)

``--search-sweep`` also asks the real search (every adjustment included) at fusion weights 0, 0.1 … 1:
its best fixed weight and the best weight per question after the fact.

The vector side is embedded as the real search embeds it (the speakers the query names masked when
``query_speaker_mask`` is on, the excerpt's last line added), the keyword side is plain BM25 over the
query's terms (the real search adds feedback terms to it afterwards)."""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from tune import DATA, sets

from memfold.engine.read.rank_speakers import may_name_someone, vector_side_query
from memfold.engine.read.read import fuse, query_vector
from memfold.eval.harness import Probe, eval_memory, use_policy
from memfold.facade.memory import Memory
from memfold.text.terms import terms

DEPTH = 3000  # candidates asked per side: every memory of a MADial user, a LoCoMo conversation, a LongMemEval haystack
WEIGHTS = [round(i / 20, 2) for i in range(21)]
POOLS = (20, 50, 100, 200)  # each side's top N pooled for the oracle
FINAL_POOLS = (20, 50)  # memfold's own final list cut at N (a search asked for FINAL_DEPTH)
FINAL_DEPTH = 50
UNREACHABLE = 200  # a gold ranked below this on both sides is out of any re-ranking's reach
SWEEP = tuple(round(i / 10, 1) for i in range(11))  # fusion weights of --search-sweep


def _rank(ids: list[str], sources: dict[str, tuple[str, ...]], gold: str) -> int | None:
    return next((i + 1 for i, m in enumerate(ids) if gold in sources.get(m, ())), None)


def _score(found: set[str], gold: tuple[str, ...], metric: str) -> float:
    """The protocol's score of one question: R@k (share of gold found) or recall_all (all or nothing)."""
    got = len(set(gold) & found)
    return float(got == len(set(gold))) if metric == "all" else got / len(set(gold))


def best_cover(pool: list[str], sources: dict[str, tuple[str, ...]], gold: tuple[str, ...], k: int
               ) -> tuple[set[str], bool]:
    """The gold ids ``k`` memories of ``pool`` can hold at best, and whether that is exact. A memory
    holds the gold among its source ids; up to ``k`` memories holding gold are picked greedily by how
    many gold ids they add (exact when they fit in k or each holds one gold id; else the greedy cover,
    a lower bound, flagged not exact when it is below the simple upper bound: the k largest covers)."""
    want = set(gold)
    holding = [(m, set(sources.get(m, ())) & want) for m in dict.fromkeys(pool)]
    holding = [(m, g) for m, g in holding if g]
    everything = set().union(*(g for _, g in holding)) if holding else set()
    if len(holding) <= k:
        return everything, True
    got: set[str] = set()
    for _ in range(k):
        m, g = max(holding, key=lambda x: len(x[1] - got))
        if not g - got:
            break
        got |= g
    bound = min(len(everything), sum(sorted((len(g) for _, g in holding), reverse=True)[:k]))
    return got, len(got) >= bound


def _bucket(rank: int | None, k: int) -> str:
    """Where a missed memory ended: just below the cut (k+1 … 2k), further (… 4k), or lower / not returned."""
    if rank is None or rank > 4 * k:
        return f"below {4 * k} or not returned"
    return f"{k + 1}-{2 * k}" if rank <= 2 * k else f"{2 * k + 1}-{4 * k}"


def _median(ranks: list[int]) -> float | None:
    return float(statistics.median(ranks)) if ranks else None


def sides(mem: Memory, p: Probe, depth: int = DEPTH) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The keyword side (BM25 over the query's terms) and the vector side (the query embedded as the
    real search embeds it) over the namespace's active memories, ``depth`` deep, best first."""
    pol = mem.policy(p.namespace)
    qterms = terms(p.query, query=True)
    keyword = mem.index.keyword_search(p.namespace, qterms, depth) if qterms else []
    early = (mem.index.get(p.namespace, [m for m, _ in keyword])
             if pol.query_speaker_mask > 0 and keyword and may_name_someone(p.query) else [])
    text = vector_side_query(p.query, set(qterms), early, pol)
    vector = mem.index.vector_search(p.namespace, query_vector(mem.embedder, text, pol.query_last_line_weight), depth)
    return keyword, vector


def diagnose(mem: Memory, probes: list[Probe], k: int, metric: str = "recall", pools: tuple[int, ...] = POOLS,
             unreachable: int = UNREACHABLE) -> dict[str, Any]:
    """The report of one set at ``k``; ``metric`` "recall" (R@k) or "all" (LongMemEval's recall_all@k)."""
    missed: list[dict[str, Any]] = []
    every: list[dict[str, Any]] = []
    by_weight = np.zeros((len(probes), len(WEIGHTS)))
    oracle = {n: np.zeros(len(probes)) for n in pools}
    final_oracle = {n: np.zeros(len(probes)) for n in FINAL_POOLS}
    inexact = 0
    real = []
    for n, p in enumerate(probes):
        pol = mem.policy(p.namespace)
        want = max(2 * k, pol.candidate_pool_min)
        keyword, vector = sides(mem, p)
        ids = list(dict.fromkeys([m for m, _ in keyword] + [m for m, _ in vector]))
        records = [r for r in mem.index.get(p.namespace, ids) if r.is_active]
        sources = {r.id: tuple(r.source_ids) for r in records}
        keyword = [(m, s) for m, s in keyword if m in sources]
        vector = [(m, s) for m, s in vector if m in sources]
        for j, w in enumerate(WEIGHTS):
            fused = fuse(keyword[:want], vector[:want], w)
            order = sorted(fused, key=lambda m: (-fused[m][0], m))
            by_weight[n, j] = _score({s for m in order[:k] for s in sources.get(m, ())}, p.gold, metric)
        for size in pools:
            got, exact = best_cover([m for m, _ in keyword[:size]] + [m for m, _ in vector[:size]], sources, p.gold, k)
            oracle[size][n] = _score(got, p.gold, metric)
            inexact += not exact
        hits = mem.search(p.query, p.namespace, limit=k, record_access=False, now=p.now)
        deep_hits = mem.search(p.query, p.namespace, limit=FINAL_DEPTH, record_access=False, now=p.now)
        deep = [h.record.id for h in deep_hits]
        deep_sources = {h.record.id: tuple(h.record.source_ids) for h in deep_hits}  # collapsed copies hold both
        for size in FINAL_POOLS:
            final_oracle[size][n] = _score(best_cover(deep[:size], deep_sources, p.gold, k)[0], p.gold, metric)
        found = {s for h in hits for s in h.record.source_ids}
        real.append(_score(found, p.gold, metric))
        for g in dict.fromkeys(p.gold):
            kr, vr = _rank([m for m, _ in keyword], sources, g), _rank([m for m, _ in vector], sources, g)
            every.append({"probe": p.group, "category": p.category, "gold": g, "keyword_rank": kr,
                          "vector_rank": vr, "final_rank": _rank(deep, deep_sources, g), "found": g in found})
            if g in found:
                continue
            in_k, in_v = kr is not None and kr <= want, vr is not None and vr <= want
            where = ("both sides' candidates" if in_k and in_v else "keyword candidates only" if in_k
                     else "vector candidates only" if in_v else "not a candidate")
            missed.append({"probe": p.group, "gold": g, "keyword_rank": kr, "vector_rank": vr,
                           "final_rank": every[-1]["final_rank"], "where": where})
    at = WEIGHTS.index(round(mem.policy("default").fusion_keyword_weight, 2))
    mean = by_weight.mean(axis=0)
    real_a = np.array(real)
    cats = sorted({p.category for p in probes}, key=lambda c: (len(c), c))
    in_cat = {c: np.array([p.category == c for p in probes]) for c in cats}

    def far(g: dict[str, Any], side: str) -> bool:
        return g[side] is None or g[side] > unreachable

    return {
        "probes": len(probes), "gold": sum(len(set(p.gold)) for p in probes), "recall": float(real_a.mean()),
        "metric": metric, "k": k,
        "pool_oracle": {str(size): float(a.mean()) for size, a in oracle.items()},
        "final_list_oracle": {str(size): float(a.mean()) for size, a in final_oracle.items()},
        "pool_oracle_inexact": inexact,
        "unreachable_rank": unreachable,
        "unreachable_gold": sum(1 for g in every if far(g, "keyword_rank") and far(g, "vector_rank")),
        "gold_beyond_rank": {side: sum(1 for g in every if far(g, side)) for side in ("keyword_rank", "vector_rank")},
        "by_category": {c: {"probes": int(m.sum()), "recall": float(real_a[m].mean()),
                            "pool_oracle": {str(size): float(a[m].mean()) for size, a in oracle.items()},
                            "best_weight_per_query": float(by_weight[m].max(axis=1).mean()),
                            "unreachable_gold": sum(1 for g in every if g["category"] == c
                                                    and far(g, "keyword_rank") and far(g, "vector_rank")),
                            "gold": sum(1 for g in every if g["category"] == c)}
                        for c, m in in_cat.items()},
        "gold_memories": every,
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


def search_sweep(mem: Memory, probes: list[Probe], k: int, metric: str = "recall",
                 weights: tuple[float, ...] = SWEEP) -> dict[str, Any]:
    """The real search (every adjustment after the fusion included) at each fusion keyword weight:
    the best fixed weight, and the best weight per question after the fact (an oracle: the ceiling of
    any per-query weighting of the two signals inside memfold's own ranking). The policy is restored."""
    base = dict(mem._policy_args)
    scores = np.zeros((len(probes), len(weights)))
    try:
        for j, w in enumerate(weights):
            use_policy(mem, {**base, "fusion_keyword_weight": w})
            for n, p in enumerate(probes):
                hits = mem.search(p.query, p.namespace, limit=k, record_access=False, now=p.now)
                scores[n, j] = _score({s for h in hits for s in h.record.source_ids}, p.gold, metric)
    finally:
        use_policy(mem, base)
    mean = scores.mean(axis=0)
    cats = sorted({p.category for p in probes}, key=lambda c: (len(c), c))
    return {"by_weight": {str(w): float(m) for w, m in zip(weights, mean, strict=True)},
            "best_fixed_weight": weights[int(mean.argmax())], "at_best_fixed_weight": float(mean.max()),
            "oracle_weight_per_query": float(scores.max(axis=1).mean()),
            "by_category": {c: {"at_best_fixed_weight": float(scores[m][:, int(mean.argmax())].mean()),
                                "oracle_weight_per_query": float(scores[m].max(axis=1).mean())}
                            for c in cats for m in [np.array([p.category == c for p in probes])]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--vector-cache", default=None, help="folder of cached vectors (strongly advised)")
    ap.add_argument("--sets", default="madial-zh,madial-en", help="any of locomo, madial-zh, madial-en, longmemeval")
    ap.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions")
    ap.add_argument("--search-sweep", action="store_true",
                    help="also the real search at fusion weights 0, 0.1 … 1: best fixed and per-question best weight")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON report (every missed memory) here")
    args = ap.parse_args()
    report: dict[str, Any] = {}
    for name, ingest, _scheme, k, metric in sets(args.data, args.lme_limit):
        if name not in args.sets.split(","):
            continue
        with eval_memory(None, vector_cache=args.vector_cache) as mem:
            probes = ingest(mem)
            report[name] = r = diagnose(mem, probes, k, metric)
            if args.search_sweep:
                r["search_sweep"] = search_sweep(mem, probes, k, metric)
        label = f"recall_all@{k}" if metric == "all" else f"R@{k}"
        print(f"\n{name}: {r['probes']} probes, {r['gold']} gold memories, {label} {r['recall']:.4f}, "
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
        print(f"  pool oracle ({label} if the top {k} were filled perfectly from each side's top N): "
              + ", ".join(f"N={n} {v:.4f}" for n, v in r["pool_oracle"].items())
              + (f" ({r['pool_oracle_inexact']} greedy covers below their bound)" if r["pool_oracle_inexact"] else ""))
        print("  the same from memfold's final list: " + ", ".join(f"top {n} {v:.4f}" for n, v in r["final_list_oracle"].items()))
        print(f"  gold below rank {r['unreachable_rank']} on both sides (out of any re-ranking's reach): "
              f"{r['unreachable_gold']} of {r['gold']}; on one side: "
              + ", ".join(f"{s} {n}" for s, n in r["gold_beyond_rank"].items()))
        if "search_sweep" in r:
            sw = r["search_sweep"]
            print(f"  the real search at fusion weights {', '.join(sw['by_weight'])}: "
                  + ", ".join(f"{v:.4f}" for v in sw["by_weight"].values())
                  + f"; best fixed {sw['best_fixed_weight']} {sw['at_best_fixed_weight']:.4f}, "
                  f"best weight per query (oracle) {sw['oracle_weight_per_query']:.4f}")
            for c, b in sw["by_category"].items() if len(sw["by_category"]) > 1 else ():
                print(f"    {c:>26}: real search, best fixed weight {b['at_best_fixed_weight']:.4f}, "
                      f"per query {b['oracle_weight_per_query']:.4f}")
        if len(r["by_category"]) > 1:
            for c, b in r["by_category"].items():
                print(f"    {c:>26}: {b['probes']:4d} probes, {label} {b['recall']:.4f}, best weight per query "
                      f"{b['best_weight_per_query']:.4f}, pool oracle "
                      + ", ".join(f"N={n} {v:.4f}" for n, v in b["pool_oracle"].items())
                      + f", unreachable gold {b['unreachable_gold']} of {b['gold']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
