"""Search latency while writers add to the same namespace (issue 10 §6: searches waited behind writers).

    .venv/bin/python benchmarks/search_under_writers.py [--writers 8] [--mode process|thread]
                                                       [--searches 60] [--seed-rows 300]

Starts ``--writers`` writers (processes, or threads of this process) that each add memories to
one namespace without pause, waits until they are all writing, then times ``--searches``
searches of that namespace from this process and prints p50 / p95 / max in milliseconds (and
how many memories the writers added meanwhile). The workspace is a fresh temporary folder."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

WORDS = ("apple river stone cloud violin tiger copper lantern meadow rocket harbor pepper glacier canyon orchid "
         "falcon marble velvet thunder bamboo saddle comet walnut ember prism quartz").split()

WRITER = textwrap.dedent("""
    import random, sys
    from memfold import Memory
    root, name, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    import os
    words = sys.argv[4].split()
    rng = random.Random(name)
    m = Memory(root=root)
    i = 0
    while not os.path.exists(stop):
        m.add(f"{name} {i}: " + " ".join(rng.choice(words) for _ in range(7)), "shared", memory_type="note")
        if i == 0:
            print("ready", flush=True)  # its model is loaded and it has written once
        i += 1
    m.close()
    print(i, flush=True)
""")


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--mode", choices=("process", "thread"), default="process")
    ap.add_argument("--searches", type=int, default=60)
    ap.add_argument("--seed-rows", type=int, default=300)
    args = ap.parse_args()

    from memfold import Memory

    root = Path(tempfile.mkdtemp(prefix="memfold-search-writers-"))
    stop = root / "STOP"
    mem = Memory(root=root)
    rng = random.Random(0)
    mem.add([{"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(8))}
             for _ in range(args.seed_rows)], "shared", infer=False)
    mem.search("warm up the model", "shared")

    added = [0] * args.writers
    procs: list[subprocess.Popen] = []
    threads: list[threading.Thread] = []
    if args.mode == "process":
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), f"w{n}", str(stop), " ".join(WORDS)],
                                  env=env, stdout=subprocess.PIPE, text=True) for n in range(args.writers)]
        for p in procs:
            p.stdout.readline()  # "ready"
    else:
        def write(n: int) -> None:
            r = random.Random(n)
            while not stop.exists():
                mem.add(f"w{n} {added[n]}: " + " ".join(r.choice(WORDS) for _ in range(7)), "shared",
                        memory_type="note")
                added[n] += 1

        threads = [threading.Thread(target=write, args=(n,)) for n in range(args.writers)]
        for t in threads:
            t.start()
    time.sleep(2.0)  # every writer is adding

    times = []
    for i in range(args.searches):
        t0 = time.perf_counter()
        mem.search(f"{rng.choice(WORDS)} {rng.choice(WORDS)}", "shared", limit=10)
        times.append((time.perf_counter() - t0) * 1000)
    stop.touch()
    for t in threads:
        t.join()
    for n, p in enumerate(procs):
        out, _ = p.communicate(timeout=600)
        added[n] = int(out.split()[-1])
    mem.close()
    print(json.dumps({"writers": args.writers, "mode": args.mode, "searches": len(times),
                      "p50_ms": round(statistics.median(times), 1), "p95_ms": round(pct(times, 95), 1),
                      "max_ms": round(max(times), 1), "added_by_writers": sum(added)}))


if __name__ == "__main__":
    main()
