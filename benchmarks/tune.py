"""Tune retrieval constants by issue 16's rule and report in-sample and cross-validated numbers.

Each development set is ingested once (vectors from ``--vector-cache``), then every question is
asked under each value of each constant (one constant at a time, the others at ``--base``). The
score per set: LoCoMo R@10 over categories 1-4, MADial zh and en R@5, LongMemEval recall_all@10.
``memfold.eval.crossval`` chooses each constant by the sum over the sets, cross-validated
(leave-one-conversation-out on LoCoMo, two folds elsewhere), and says whether it survives against
its neutral value.

    nice -n 10 python benchmarks/tune.py --vector-cache /tmp/vc --out tune.json
    nice -n 10 python benchmarks/tune.py --only fusion_keyword_weight --base query_last_line_weight=0
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from memfold.eval.crossval import LEAVE_ONE_OUT, TWO_FOLD, SetScores, cross_validate, fold_ids, survives
from memfold.eval.harness import Probe, eval_memory, use_policy
from memfold.eval.locomo import MAIN_CATEGORIES, ingest_locomo
from memfold.eval.longmemeval import ingest_longmemeval
from memfold.eval.madial import ingest_madial
from memfold.facade.memory import Memory

# ../shared/data beside the checkout (a worktree sits one folder deeper)
DATA = next((p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
            Path("../shared/data"))
# constant -> (neutral value, values tried); the neutral value first (ties go to it)
GRID: dict[str, tuple[Any, list[Any]]] = {
    "fusion_keyword_weight": (0.5, [0.5, 0.3, 0.4, 0.45, 0.55, 0.6, 0.7]),
    "query_last_line_weight": (0.0, [0.0, 0.25, 0.5, 1.0]),
    "score_bonus_speaker": (0.0, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]),
    "score_penalty_question": (0.0, [0.0, 0.05, 0.1, 0.2]),
    "candidate_pool_min": (1, [1, 10, 20, 30, 50]),  # 1 = no minimum: 2k candidates per side
    "keyword_feedback_weight": (0.0, [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5]),
    "score_weight_time": (0.2, [0.2, 0.0, 0.1, 0.3]),  # the default first: only LongMemEval has real dates
    "score_bonus_time": (0.0, [0.0, 0.05, 0.1, 0.2, 0.3]),
    "session_key_weight": (0.0, [0.0, 0.025, 0.05, 0.075, 0.1, 0.2]),
    "query_speaker_mask": (0.0, [0.0, 1.0]),
    "word_match_weight": (0.0, [0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2]),  # needs memfold[wordvec]
    # the second model's cosine: needs MEMFOLD_SEARCH__PROFILE=quality (its vectors) and memfold[e5]
    "e5_weight": (0.0, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
}


def score(mem: Memory, p: Probe, k: int, metric: str) -> float:
    hits = mem.search(p.query, p.namespace, limit=k, record_access=False, now=p.now)
    found = {s for h in hits for s in h.record.source_ids}
    got = len(set(p.gold) & found)
    return float(got == len(p.gold)) if metric == "all" else got / len(p.gold)


def sets(data: Path, lme_limit: int | None) -> list[tuple[str, Callable[[Memory], list[Probe]], str, int, str]]:
    """(name, ingest, cross-validation scheme, k, metric) per development set."""
    return [
        ("locomo", lambda m: [p for p in ingest_locomo(m, data / "locomo" / "locomo_dev.json")[0]
                              if p.category in MAIN_CATEGORIES], LEAVE_ONE_OUT, 10, "recall"),
        ("madial-zh", lambda m: ingest_madial(m, data / "madial" / "zh")[0], TWO_FOLD, 5, "recall"),
        ("madial-en", lambda m: ingest_madial(m, data / "madial" / "en")[0], TWO_FOLD, 5, "recall"),
        ("longmemeval", lambda m: ingest_longmemeval(m, data / "longmemeval" / "longmemeval_s_dev.json.gz",
                                                     limit=lme_limit)[0], TWO_FOLD, 10, "all"),
    ]


def collect(names: Sequence[str], base: dict[str, Any], only: Sequence[str], data: Path, vector_cache: str | None,
            lme_limit: int | None, clock_now: bool = False) -> dict[str, dict[str, SetScores]]:
    """constant -> set name -> per-probe scores under each of its values."""
    out: dict[str, dict[str, SetScores]] = {c: {} for c in only}
    for name, ingest, scheme, k, metric in sets(data, lme_limit):
        if name not in names:
            continue
        t0 = time.perf_counter()
        with eval_memory(None, vector_cache=vector_cache, policy=base) as mem:
            probes = ingest(mem)
            mem.flush_vectors()  # the quality profile's second vectors, written after the adds
            if clock_now:
                probes = [replace(p, now=None) for p in probes]
            t1 = time.perf_counter()
            folds = fold_ids([p.group for p in probes], scheme)
            for const in only:
                per_value = {}
                for v in GRID[const][1]:
                    use_policy(mem, {**base, const: v})
                    per_value[v] = np.array([score(mem, p, k, metric) for p in probes])
                out[const][name] = SetScores(name, folds, per_value)
        print(f"{name}: {len(probes)} probes, ingest {t1 - t0:.0f} s, asking {time.perf_counter() - t1:.0f} s",
              flush=True)
    return out


def load_scores(paths: Sequence[Path], only: Sequence[str]) -> dict[str, dict[str, SetScores]]:
    out: dict[str, dict[str, SetScores]] = {c: {} for c in only}
    for path in paths:
        saved = json.loads(path.read_text(encoding="utf-8"))["scores"]
        for c in only:
            for name, s in saved.get(c, {}).items():
                out[c][name] = SetScores(name, s["folds"], {v: np.array(s["values"][str(v)]) for v in GRID[c][1]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--vector-cache", default=None, help="folder of cached vectors (strongly advised)")
    ap.add_argument("--sets", default="locomo,madial-zh,madial-en,longmemeval")
    ap.add_argument("--only", default=",".join(GRID), help="constants to tune (comma-separated)")
    ap.add_argument("--base", action="append", default=[], help="KEY=VALUE policy for everything else")
    ap.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions")
    ap.add_argument("--clock-now", action="store_true",
                    help="ask LongMemEval at the clock's time, not at each question's date (the old harness)")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON report (with per-question scores) here")
    ap.add_argument("--combine", type=Path, nargs="*", default=None,
                    help="no new run: cross-validate the per-question scores saved by earlier runs' --out")
    args = ap.parse_args()
    base: dict[str, Any] = {kv.split("=", 1)[0]: float(kv.split("=", 1)[1]) for kv in args.base}
    base = {k: int(v) if k == "candidate_pool_min" else v for k, v in base.items()}
    only = [c for c in args.only.split(",") if c]
    unknown = [c for c in only if c not in GRID]
    if unknown:
        ap.error(f"unknown constants {unknown}; known: {', '.join(GRID)}")
    if args.combine:
        scores = load_scores(args.combine, only)
    else:
        scores = collect(args.sets.split(","), base, only, args.data, args.vector_cache, args.lme_limit,
                         args.clock_now)
    report: dict[str, Any] = {"base": base, "scores": {
        c: {n: {"folds": s.folds, "values": {str(v): a.tolist() for v, a in s.scores.items()}} for n, s in per.items()}
        for c, per in scores.items()}}
    for const in only:
        neutral, _ = GRID[const]
        result = cross_validate(list(scores[const].values()), GRID[const][1])
        result["neutral"] = neutral
        result["survives"] = survives(result, neutral)
        report[const] = result
        print(f"\n{const}: chosen {result['chosen']} (neutral {neutral}) survives={result['survives']}")
        print("  value  " + "  ".join(f"{n:>11}" for n in scores[const]) + "        sum")
        for v, row in result["by_value"].items():
            print(f"  {v:>5}  " + "  ".join(f"{x:11.4f}" for x in row.values()) + f"  {sum(row.values()):9.4f}")
        for label in ("in_sample", "cross_validated"):
            row = result[label]
            print(f"  {label:>15}: " + "  ".join(f"{n} {x:.4f}" for n, x in row.items())
                  + f"  sum {sum(row.values()):.4f}")
        print(f"  fold choices: {result['fold_choices']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
