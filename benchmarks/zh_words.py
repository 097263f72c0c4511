"""Chinese words instead of character bigrams on the keyword side (issue 16, session 8): each
variant below replaces what ``text.terms`` makes of a run of Han characters, at index and query
time alike, and is measured by issue 16's tuning rule on the development sets (LoCoMo R@10,
MADial zh and en R@5, LongMemEval recall_all@10): the same per-question scores as
``benchmarks/tune.py``, the variant chosen by the sum over the sets, cross-validated (two folds on
MADial and LongMemEval, leave-one-conversation-out on LoCoMo).

Word segmentation is jieba's (``pip install jieba``; its dictionary ships in the package). It is
not a memfold dependency: this script measured it and nothing was kept (docs/benchmarks.md,
"Issue 16, session 8: MADial, Chinese words on the keyword side"). Each variant runs in its own
process (``terms`` is patched before anything is ingested, and no cache carries a variant's
terms into the next).

    nice -n 10 python benchmarks/zh_words.py --vector-cache /tmp/vc                      # MADial zh, all variants
    nice -n 10 python benchmarks/zh_words.py --vector-cache /tmp/vc --variants bigrams,search-multi-stop \\
        --sets locomo,madial-zh,madial-en,longmemeval --lme-limit 50
    python benchmarks/zh_words.py --segment "元旦晚会我要表演魔术"                          # one text's terms per variant
    nice -n 10 python benchmarks/zh_words.py --cost search-multi-stop                        # time and memory
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# a short list of Chinese function words (pronouns, demonstratives, question words, conjunctions,
# modal and degree adverbs, interjections) and a few words in nearly every MADial memory or line
# (非常, 真的, 今天): written for this measurement, not taken from any published list
ZH_STOP_WORDS = frozenset("""
    我们 你们 他们 她们 它们 咱们 自己 大家 别人 人家
    这个 那个 这些 那些 这样 那样 这里 那里 这儿 那儿 这么 那么 这种 那种 这次 那次
    什么 怎么 怎样 怎么样 为什么 哪里 哪儿 哪个 哪些 如何 多少 谁的
    因为 所以 但是 可是 不过 而且 然后 如果 虽然 或者 还是 于是 并且 只是 就是 也是 都是 还有
    已经 一定 可能 应该 可以 能够 需要 觉得 知道 认为 一下 一点 一些 有点 有些 一个 一样 一直
    非常 特别 真的 真是 十分 比较 很多 好多 太多 总是 时候 现在 刚才 今天 昨天 明天
    哈哈 哈哈哈 嘿嘿 呵呵 是的 对啊 对呀 好的 好啊 嗯嗯 哇哦 没有 不是
""".split())

# variant -> what it makes of a Han run (words: jieba's default cut; search: its cut_for_search,
# which adds the dictionary words inside a long word; multi: one-character words left out; stop:
# ZH_STOP_WORDS left out; bigrams: today's bigrams added; wbq / wbb: today's bigrams, but only those
# inside a jieba word, on the query side / on both sides)
VARIANTS = ["bigrams", "words", "words-multi", "words-bigrams", "words-multi-bigrams", "search", "search-multi",
            "search-multi-bigrams", "words-multi-stop", "search-multi-stop", "wbq", "wbb"]


def _segmenter() -> Any:
    try:
        import jieba
    except ImportError:
        sys.exit("benchmarks/zh_words.py needs jieba: pip install jieba")
    jieba.setLogLevel(60)  # no "Building prefix dict" lines on stderr
    return jieba.Tokenizer()


def _load(tk: Any) -> float:
    """Load jieba's dictionary from the package, without its cache file (by default a fixed name in
    the shared temp dir, read back unchecked); returns the seconds taken."""
    t0 = time.perf_counter()
    with tk.lock:
        if not tk.initialized:
            tk.FREQ, tk.total = tk.gen_pfdict(tk.get_dict_file())
            tk.initialized = True
    return time.perf_counter() - t0


def make_terms(variant: str, original: Callable[..., list[str]], seg: Any) -> Callable[..., list[str]]:
    """``text.terms`` with the variant's handling of Han runs; every other token as before."""
    from memfold.text import terms as T

    han_only = __import__("re").compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+$")

    def bigrams(run: str, query: bool) -> list[str]:
        return original(run, query=query)  # a lone Han run: today's bigrams (or its one character)

    def drop_asked(words: list[str]) -> list[str]:  # the query filter of today's bigrams, for words
        kept = [w for w in words if not all(c in T.ZH_QUERY_STOP for c in w)]
        return kept or words

    def han(run: str, query: bool) -> list[str]:
        if variant == "bigrams":
            return bigrams(run, query)
        if variant in ("wbq", "wbb"):
            if variant == "wbq" and not query:
                return bigrams(run, query)
            grams = [g for w in seg.lcut(run) if len(w) > 1 for g in bigrams(w, query)]
            return grams or bigrams(run, query)
        words = seg.lcut_for_search(run) if variant.startswith("search") else seg.lcut(run)
        if "multi" in variant:
            words = [w for w in words if len(w) > 1]
        if "stop" in variant:
            words = [w for w in words if w not in ZH_STOP_WORDS]
        if query:
            words = drop_asked(words)
        return words + bigrams(run, query) if variant.endswith("bigrams") else words

    def terms(text: str, *, query: bool = False) -> list[str]:
        out: list[str] = []
        for tok in T._TOKEN.findall(T.normalize(text)):
            out.extend(han(tok, query) if han_only.match(tok) else original(tok, query=query))
        return out

    return terms


def patch(variant: str) -> float:
    """Every memfold module's ``terms`` becomes the variant's (before anything is ingested); returns
the seconds jieba took to load its dictionary."""
    import memfold.cli.main  # noqa: F401  (imports the modules that bind ``terms``)
    import memfold.eval.harness  # noqa: F401
    from memfold.text import terms as T

    original = T.terms
    seg = _segmenter()
    loaded = _load(seg)  # here rather than inside the first ingest
    new = make_terms(variant, original, seg)
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("memfold") and getattr(mod, "terms", None) is original:
            mod.terms = new  # type: ignore[attr-defined]
    return loaded


def _example(mem: Any, probe: Any) -> dict[str, Any]:
    """What the search and the index made of the first question: its terms as the search asks them
    and the stored terms of its best hit (the patch reached both, or the variant measured nothing)."""
    from memfold.engine.read import read

    hits = mem.search(probe.query, probe.namespace, limit=1, record_access=False, now=probe.now)
    stored = mem.index.doc_terms(probe.namespace, [hits[0].record.id]) if hits else {}
    return {"query_terms": read.terms(probe.query, query=True)[:40],
            "top_hit_terms": sorted(next(iter(stored.values()), {}))}


def child(args: argparse.Namespace) -> None:
    """One variant: per-question scores on each set (as ``tune.py`` scores them) and the timings."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tune import score, sets

    from memfold.eval.crossval import fold_ids
    from memfold.eval.harness import eval_memory

    out: dict[str, Any] = {"variant": args.variant, "dictionary_s": round(patch(args.variant), 2), "sets": {}}
    for name, ingest, scheme, k, metric in sets(args.data, args.lme_limit):
        if name not in args.sets.split(","):
            continue
        with eval_memory(None, vector_cache=args.vector_cache) as mem:
            t1 = time.perf_counter()
            probes = ingest(mem)
            t2 = time.perf_counter()
            scores = [score(mem, p, k, metric) for p in probes]
            t3 = time.perf_counter()
            example = _example(mem, probes[0]) if probes else {}
        out["sets"][name] = {"folds": fold_ids([p.group for p in probes], scheme), "scores": scores,
                             "ingest_s": round(t2 - t1, 2), "ask_s": round(t3 - t2, 2), "example": example}
    print(json.dumps(out))


def cost(data: Path, variant: str, rounds: int = 7) -> None:
    """What segmentation costs: jieba's import and dictionary load (time, memory), then the terms of
    MADial zh's memories (what ingest tokenises) and of its dialogue excerpts (what a search
    tokenises), today's bigrams and the variant alternately, ``rounds`` times; medians."""
    import resource
    import statistics

    from memfold.eval.madial import load_madial
    from memfold.text import terms as T

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    seg = _segmenter()
    t1 = time.perf_counter()
    loaded = _load(seg)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"jieba: import {t1 - t0:.2f} s, dictionary {loaded:.2f} s, peak memory +{(rss - rss0) / 1024:.0f} MB; "
          f"load average {os.getloadavg()}")
    memories, dialogues = load_madial(data / "madial" / "zh")
    docs = [m.text for m in memories]
    queries = [d.query for d in dialogues]
    new = make_terms(variant, T.terms, seg)
    for label, texts, query in (("memories (ingest)", docs, False), ("excerpts (search)", queries, True)):
        chars = sum(len(t) for t in texts)
        times: dict[str, list[float]] = {"bigrams": [], variant: []}
        for _ in range(rounds):
            for name, fn in (("bigrams", T.terms), (variant, new)):
                c0 = time.thread_time()
                for t in texts:
                    fn(t, query=query)
                times[name].append(time.thread_time() - c0)
        med = {n: statistics.median(x) for n, x in times.items()}
        print(f"{label}: {len(texts)} texts, {chars / len(texts):.0f} characters each; per text "
              + ", ".join(f"{n} {m / len(texts) * 1e6:.0f} µs" for n, m in med.items())
              + f" ({med[variant] / med['bigrams']:.1f}×)")
    print(f"load average {os.getloadavg()}")


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tune import DATA

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--vector-cache", default=None, help="folder of cached vectors (strongly advised)")
    ap.add_argument("--sets", default="madial-zh", help="comma-separated: locomo,madial-zh,madial-en,longmemeval")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated; the first is the neutral one")
    ap.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval questions")
    ap.add_argument("--out", type=Path, default=None, help="write the per-question scores here (JSON)")
    ap.add_argument("--segment", default=None, help="only print this text's terms under each variant")
    ap.add_argument("--cost", default=None, metavar="VARIANT", help="only measure what this variant's segmentation costs")
    ap.add_argument("--variant", default=None, help=argparse.SUPPRESS)  # the child process's variant
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants + [x for x in (args.variant, args.cost) if x] if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    if args.segment is not None:
        from memfold.text import terms as T
        seg = _segmenter()
        _load(seg)
        for v in variants:
            t = make_terms(v, T.terms, seg)
            print(f"{v:>22}: index {' '.join(t(args.segment))} | query {' '.join(t(args.segment, query=True))}")
        return
    if args.cost:
        cost(args.data, args.cost)
        return
    if args.variant:
        child(args)
        return
    from memfold.eval.crossval import SetScores, cross_validate, survives

    env = {**os.environ, "MEMFOLD_CACHE__BACKEND": "off"}
    runs: dict[str, dict[str, Any]] = {}
    print(f"load average {os.getloadavg()}", flush=True)
    for v in variants:
        cmd = [sys.executable, __file__, "--variant", v, "--sets", args.sets, "--data", str(args.data)]
        cmd += (["--vector-cache", args.vector_cache] if args.vector_cache else [])
        cmd += (["--lme-limit", str(args.lme_limit)] if args.lme_limit else [])
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode:
            sys.exit(f"variant {v} failed:\n{done.stderr[-3000:]}")
        runs[v] = json.loads(done.stdout.strip().splitlines()[-1])
        row = "  ".join(f"{n} {np.mean(s['scores']):.4f} (ingest {s['ingest_s']} s, ask {s['ask_s']} s)"
                        for n, s in runs[v]["sets"].items())
        print(f"{v:>22}: {row}; jieba's dictionary {runs[v]['dictionary_s']} s", flush=True)
    names = list(runs[variants[0]]["sets"])
    scored = [SetScores(n, runs[variants[0]]["sets"][n]["folds"],
                        {v: np.asarray(runs[v]["sets"][n]["scores"], dtype=np.float64) for v in variants})
              for n in names]
    result = cross_validate(scored, variants)
    result["survives"] = survives(result, variants[0])
    for label in ("in_sample", "cross_validated"):
        row = result[label]
        print(f"{label:>16}: " + "  ".join(f"{n} {x:.4f}" for n, x in row.items()) + f"  sum {sum(row.values()):.4f}")
    print(f"chosen {result['chosen']} (neutral {variants[0]}), fold choices {result['fold_choices']}, "
          f"survives={result['survives']}; load average {os.getloadavg()}")
    if args.out:
        args.out.write_text(json.dumps({"runs": runs, "result": result}, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
