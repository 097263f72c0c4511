"""What batch ingest costs on top of the bundled model, in wall time and in CPU time, and where.

    PYTHONPATH=src .venv/bin/python benchmarks/ingest_overhead.py [--n 10000] [--profile 0]
        [--vectors FILE --write-path-only]

The batches of ``memfold bench`` (1,000 turns, ``infer=False``, SQLite, no cache) into a fresh
workspace; right after each batch, the model alone on the very texts that batch embedded, in the
same calls. Prints one JSON line: wall seconds and CPU seconds (this process, all threads) of the
ingest and of the model alone, and their ratios. On a shared machine the CPU ratio is the steadier
one: waiting for a core shows in wall time, not in CPU time. ``--profile K``: cProfile over the
last K batches with the model replaced by the vectors it gave (only the write path is profiled),
the top functions printed to stderr. Only public parts are used, so the same script measures an
older tree (``PYTHONPATH=/other/src``) for a side-by-side comparison. ``--write-path-only``: only
the ingest with the model's vectors replayed from ``--vectors`` (an ``.npz`` the first run writes),
timed without the profiler: the write path's own wall and CPU seconds, steadier than a ratio
of two long runs when other jobs share the cores."""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memfold import Memory
from memfold.config import load_settings
from memfold.eval.bench import BATCH, RecordingEmbedder, synthetic_texts
from memfold.providers.embedder import make_embedder


class Replay:
    """An embedder that answers with the vectors the model gave for the same texts."""

    def __init__(self, inner: Any, table: dict[str, np.ndarray]):
        self.inner, self.table, self.name, self.dim = inner, table, inner.name, inner.dim

    def embed(self, texts: Any) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]) if len(texts) else np.zeros((0, self.dim), np.float32)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--profile", type=int, default=0, help="profile the write path of the last K batches")
    ap.add_argument("--vectors", type=Path, help="the model's vectors of the ingest's texts (.npz, made when missing)")
    ap.add_argument("--write-path-only", action="store_true", help="time only the ingest with --vectors replayed")
    args = ap.parse_args()
    if args.write_path_only:
        if not args.vectors or not args.vectors.exists():
            ap.error("--write-path-only needs --vectors FILE from an earlier run")
        write_path_only(args.n, args.vectors)
        return
    import memfold
    root = Path(tempfile.mkdtemp(prefix="ingest-overhead-"))
    model = make_embedder(load_settings(root).embedder)
    model.embed(["warm up"])
    texts = synthetic_texts(args.n)
    rec = RecordingEmbedder(model)
    settings = {"index": {"backend": "sqlite"}, "cache": {"backend": "off"}}
    load_before = [round(x, 2) for x in os.getloadavg()]
    wall = {"ingest": 0.0, "model": 0.0}
    cpu = {"ingest": 0.0, "model": 0.0}
    table: dict[str, np.ndarray] = {}
    try:
        with Memory(settings=load_settings(root / "a", **settings), embedder=rec) as mem:
            for i in range(0, args.n, BATCH):
                chunk = [{"role": "user", "content": t} for t in texts[i: i + BATCH]]
                rec.calls = []
                w, c = time.perf_counter(), time.process_time()
                mem.add(chunk, "u", infer=False)
                wall["ingest"] += time.perf_counter() - w
                cpu["ingest"] += time.process_time() - c
                calls, rec.calls = rec.calls, None
                w, c = time.perf_counter(), time.process_time()
                for call in calls:
                    vecs = model.embed(call)
                    if args.profile or args.vectors:
                        table.update(zip(call, vecs))
                wall["model"] += time.perf_counter() - w
                cpu["model"] += time.process_time() - c
        out: dict[str, Any] = {
            "tree": str(Path(memfold.__file__).parents[1]), "n": args.n,
            "ingest_wall_s": round(wall["ingest"], 2), "model_wall_s": round(wall["model"], 2),
            "ingest_cpu_s": round(cpu["ingest"], 2), "model_cpu_s": round(cpu["model"], 2),
            "wall_ratio": round(wall["ingest"] / wall["model"], 3), "cpu_ratio": round(cpu["ingest"] / cpu["model"], 3),
            "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()]}
        if args.vectors:
            np.savez(args.vectors, texts=np.array(list(table)), vectors=np.stack(list(table.values())))
        if args.profile:
            prof = cProfile.Profile()
            outside = 0.0
            with Memory(settings=load_settings(root / "b", **settings), embedder=Replay(model, table)) as mem:
                for i in range(0, args.n, BATCH):
                    chunk = [{"role": "user", "content": t} for t in texts[i: i + BATCH]]
                    last = i >= args.n - args.profile * BATCH
                    c = time.process_time()
                    if last:
                        prof.enable()
                    mem.add(chunk, "u", infer=False)
                    prof.disable()
                    outside += time.process_time() - c
            out["write_path_cpu_s"] = round(outside, 2)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(25)
        print(json.dumps(out))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def write_path_only(n: int, vectors: Path) -> None:
    import memfold
    saved = np.load(vectors)
    table = dict(zip(saved["texts"].tolist(), saved["vectors"]))
    root = Path(tempfile.mkdtemp(prefix="ingest-write-path-"))
    model = make_embedder(load_settings(root).embedder)
    texts = synthetic_texts(n)
    load_before = [round(x, 2) for x in os.getloadavg()]
    wall = cpu = 0.0
    try:
        settings = {"index": {"backend": "sqlite"}, "cache": {"backend": "off"}}
        with Memory(settings=load_settings(root, **settings), embedder=Replay(model, table)) as mem:
            for i in range(0, n, BATCH):
                chunk = [{"role": "user", "content": t} for t in texts[i: i + BATCH]]
                w, c = time.perf_counter(), time.process_time()
                mem.add(chunk, "u", infer=False)
                wall += time.perf_counter() - w
                cpu += time.process_time() - c
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({"tree": str(Path(memfold.__file__).parents[1]), "n": n, "write_path_wall_s": round(wall, 2),
                      "write_path_cpu_s": round(cpu, 2), "load_before": load_before,
                      "load_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
