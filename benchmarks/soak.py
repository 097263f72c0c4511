"""Soak benchmark: one process, one ``Memory``, many mixed calls; prints RSS over time.

    python benchmarks/soak.py [--ops 100000] [--base 1000] [--threads 2] [--every 5000] [--out FILE]

First the data grows to ``--base`` memories per user (one English, one Chinese namespace). Then
``--ops`` calls run from ``--threads`` threads: add a fact with new words and delete the oldest (the
data stays the same size), search, update, forget, session messages with context building, daily
notes. Every ``--every`` calls it deletes what conversations and notes added (so the data stays the same
size) and prints the calls done, the seconds, the RSS, the live rows and the bytes of the search
structures. Once the data stops growing the RSS must stay flat.
``docs/benchmarks.md`` has a run."""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from memfold import Memory
from memfold.errors import NotFoundError
from memfold.eval.fresh_words import FreshWords

USERS = ("soak_en", "soak_zh")

LANG = {"soak_en": "en", "soak_zh": "zh"}


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--base", type=int, default=1000, help="live memories per user")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--every", type=int, default=5000)
    ap.add_argument("--root", default=None, help="workspace (default: a temporary folder)")
    ap.add_argument("--out", default=None, help="also write the samples as JSON here")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="memfold-soak-") if args.root is None else None
    root = args.root or tmp.name  # type: ignore[union-attr]
    mem = Memory(root=root)
    owned: dict[str, deque[str]] = {u: deque() for u in USERS}
    lock = threading.Lock()
    done = [0]
    samples: list[dict[str, float]] = []
    t0 = time.perf_counter()

    def sample(phase: str) -> None:
        fp = mem.index.search_footprint() if hasattr(mem.index, "search_footprint") else {}
        nbytes = sum(s["vectors"]["nbytes"] + s["keywords"]["nbytes"] for s in fp.values())
        live = sum(mem.index.stats(u)["active"] for u in USERS)
        row = {"phase": phase, "ops": done[0], "seconds": round(time.perf_counter() - t0, 1),
               "rss_mb": round(rss_mb(), 1), "live_rows": live, "structures_mb": round(nbytes / 2**20, 2)}
        samples.append(row)
        print(json.dumps(row), flush=True)

    sample_lock = threading.Lock()

    def trim() -> None:
        """Delete what conversations and notes added beyond the owned memories: the data stays the same size."""
        for u in USERS:
            with lock:
                keep = set(owned[u])
            for r in mem.get_all(u):
                if r.id not in keep:
                    try:
                        mem.delete(r.id, user_id=u)
                    except NotFoundError:
                        pass

    words0 = FreshWords(0)
    for u in USERS:
        mem.init(u, language="zh" if u == "soak_zh" else "en")
        for _ in range(args.base):
            owned[u].extend(r.id for r in mem.add(words0.fact(LANG[u]), user_id=u, infer=False).added)
    sample("grown")

    sessions = [{u: mem.session(f"s{t}-{u}", user_id=u, agent_id=f"agent{t}") for u in USERS}
                for t in range(args.threads)]

    def worker(t: int, n: int) -> None:
        rng, words = random.Random(1000 + t), FreshWords(1000 + t)
        for i in range(n):
            u = USERS[i % 2]
            op = rng.random()
            try:
                if op < 0.30:
                    got = mem.add(words.fact(LANG[u]), user_id=u, agent_id=f"agent{t}")
                    with lock:
                        owned[u].extend(r.id for r in got.added)
                        victim = owned[u].popleft() if len(owned[u]) > args.base else None
                    if victim:
                        mem.delete(victim, user_id=u)
                elif op < 0.55:
                    mem.search(words.query(LANG[u]), user_id=u, limit=5)
                elif op < 0.63:
                    with lock:
                        mid = rng.choice(owned[u]) if owned[u] else None
                    if mid:
                        mem.update(mid, user_id=u, content=words.fact(LANG[u]))
                elif op < 0.66:
                    mem.forget(words.query(LANG[u]), user_id=u, dry_run=True)
                elif op < 0.88:
                    s = sessions[t][u]
                    s.add_message("user", words.fact(LANG[u]))
                    s.build_context(words.query(LANG[u]))
                elif op < 0.89:
                    mem.add_note(words.fact(LANG[u]), user_id=u)
                else:
                    mem.retrieve(words.query(LANG[u]), user_id=u, limit=5)
            except NotFoundError:  # deleted by another thread meanwhile
                pass
            with lock:
                done[0] += 1
                due = done[0] % args.every == 0
            if due:
                with sample_lock:
                    trim()
                    sample("steady")

    per = args.ops // args.threads
    threads = [threading.Thread(target=worker, args=(t, per)) for t in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    sample("end")
    mem.close()
    steady = [s["rss_mb"] for s in samples if s["phase"] != "grown"]
    if steady:
        half = steady[len(steady) // 2:]
        print(f"RSS after growth {samples[0]['rss_mb']} MB; steady phase min {min(steady)} / max {max(steady)} MB; "
              f"second half {min(half)}-{max(half)} MB", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(samples, indent=1))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
