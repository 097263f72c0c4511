"""The relevance floor's trade-off (policy key ``min_score``): recall lost on the development sets
against results returned for queries with nothing relevant (LoCoMo's adversarial questions,
random dictionary words, never-seen words).

Every query is asked once with no floor, 3k deep; a floor t keeps the first k hits whose
calibrated relevance reaches t, which is what ``search(limit=k)`` with ``min_score = t`` returns.

    nice -n 10 python benchmarks/relevance_floor.py --vector-cache /tmp/vc
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from tune import DATA, sets  # benchmarks/tune.py: the development sets and their metrics

from memfold.eval.fresh_words import FreshWords
from memfold.eval.harness import eval_memory, use_policy
from memfold.eval.locomo import ingest_locomo

FLOORS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
# everyday words (written for this benchmark): some appear in the conversations, as in real queries
WORDS = """apple bicycle mountain violin garden kitchen window river castle pencil umbrella rocket
tiger camera blanket ocean lantern coffee library engine forest island ladder mirror orange
planet rabbit saddle teacher tunnel volcano wallet yellow zebra basket candle desert feather
glacier hammer jacket kettle lemon magnet needle oyster parrot quilt ribbon spider tomato
vacuum wizard anchor button cactus dolphin eagle fountain giraffe harbor iceberg jungle""".split()


def kept(hits: list[tuple[frozenset[str], float]], k: int, floor: float) -> list[frozenset[str]]:
    return [ids for ids, rel in hits if rel >= floor][:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--vector-cache", default=None)
    ap.add_argument("--sets", default="locomo,madial-zh,madial-en,longmemeval")
    ap.add_argument("--lme-limit", type=int, default=None)
    ap.add_argument("--random-queries", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    names = args.sets.split(",")
    rng = random.Random(16)
    fresh = FreshWords(16)
    rows: dict[str, dict[str, Any]] = {}
    for name, ingest, _, k, metric in sets(args.data, args.lme_limit):
        if name not in names:
            continue
        with eval_memory(None, vector_cache=args.vector_cache) as mem:
            use_policy(mem, {"min_score": 0.0})
            if name == "locomo":  # ingest once; keep category 5 apart
                probes = ingest_locomo(mem, args.data / "locomo" / "locomo_dev.json")[0]
            else:
                probes = ingest(mem)

            def ask(query: str, ns: str, k: int = k) -> list[tuple[frozenset[str], float]]:
                return [(frozenset(h.record.source_ids), h.relevance)
                        for h in mem.search(query, ns, limit=3 * k, record_access=False)]

            main = [p for p in probes if p.category != "5"]
            asked = [(p, ask(p.query, p.namespace)) for p in main]
            adversarial = [ask(p.query, p.namespace) for p in probes if p.category == "5"]
            spaces = sorted({p.namespace for p in probes})
            lang = "zh" if name == "madial-zh" else "en"
            words = [ask(" ".join(rng.sample(WORDS, rng.randint(2, 4))) if lang == "en"
                         else fresh.zh() + fresh.zh(), rng.choice(spaces))
                     for _ in range(args.random_queries)]
            nonsense = [ask(fresh.query(lang), rng.choice(spaces)) for _ in range(args.random_queries)]
        out: dict[str, Any] = {}
        for t in FLOORS:
            scores = []
            for p, hits in asked:
                found = set().union(*kept(hits, k, t))
                got = len(set(p.gold) & found)
                scores.append(float(got == len(p.gold)) if metric == "all" else got / len(p.gold))
            row = {"recall": round(sum(scores) / len(scores), 4),
                   "empty_on_relevant": round(sum(1 for _, h in asked if not kept(h, k, t)) / len(asked), 4),
                   "random_words_answered": round(sum(1 for h in words if kept(h, k, t)) / len(words), 4),
                   "nonsense_answered": round(sum(1 for h in nonsense if kept(h, k, t)) / len(nonsense), 4),
                   "mean_hits": round(sum(len(kept(h, k, t)) for _, h in asked) / len(asked), 2)}
            if adversarial:
                row["adversarial_answered"] = round(sum(1 for h in adversarial if kept(h, k, t)) / len(adversarial), 4)
            out[str(t)] = row
        rows[name] = out
        print(f"\n{name} (k = {k}, metric {metric}):")
        for t, row in out.items():
            print(f"  min_score {t:>4}: " + "  ".join(f"{key} {v}" for key, v in row.items()), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
