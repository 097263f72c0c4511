"""``memfold bench --maintain``: how long maintenance takes on a workspace of n memories.

For each size n, a fresh workspace gets n memories in MEMORY.md by one import (60 % old facts
not accessed for 200 days, 10 % todos of which half are done, 10 % word-for-word duplicates,
20 % recent facts); then ``memfold maintain --dry-run`` and each job (tidy, old-memory
compression, long-term compression) are timed on their own, without an LLM (the extractive and
deterministic paths: what an LLM adds is its own latency)."""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..config import load_settings
from ..engine.storage.records import new_id
from ..errors import InvalidInputError
from ..facade.memory import Memory
from ..maintenance import job_names
from ..models import MemoryRecord, MemoryType
from ..providers.embedder import Embedder, make_embedder
from .bench import bench_start, synthetic_texts
from .harness import NoProgress, Progress


def synthetic_rows(n: int, user: str, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    texts = synthetic_texts(n, seed)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    rows: list[dict[str, Any]] = []
    last_old = texts[0]
    for i, text in enumerate(texts):
        kind = i % 10
        mtype, days = MemoryType.FACT, 200
        if kind == 6:
            mtype, days = MemoryType.TODO, 5
            text = ("[x] " if rng.random() < 0.5 else "") + text
        elif kind == 7:
            text = last_old  # a duplicate of an old fact, written later
            days = 150
        elif kind >= 8:
            days = 1
        else:
            last_old = text
        at = now - timedelta(days=days, minutes=i)
        rows.append(MemoryRecord(id=new_id(), user_id=user, memory_type=mtype, content=text, created_at=at,
                                 updated_at=at).to_dict())
    return rows


def _bench_one(n: int, root: Path, embedder: Embedder, backend: str, progress: Progress) -> dict[str, Any]:
    user = f"maint-{n}-{os.getpid()}"
    settings = load_settings(root, index={"backend": backend})
    progress.start(f"n={n}: maintenance", 2 + len(job_names()))
    with Memory(settings=settings, embedder=embedder, policy={"long_term_compress_char_threshold": 1000},
                background=False) as mem:
        t0 = time.perf_counter()
        mem.import_records(synthetic_rows(n, user))
        setup_s = time.perf_counter() - t0
        chars_before = len(mem.show(user))
        progress.advance()
        t0 = time.perf_counter()
        dry = mem.maintain(user, dry_run=True)
        dry_s = time.perf_counter() - t0
        progress.advance()
        jobs: dict[str, Any] = {}
        for name in job_names():
            t0 = time.perf_counter()
            (res,) = mem.maintain(user, jobs=[name]).results
            jobs[name] = {"seconds": round(time.perf_counter() - t0, 2), "status": res.status,
                          "archived": len(res.archived), "created": len(res.created)}
            progress.advance()
        chars_after = len(mem.show(user))
        active = mem.index.count(user)
    return {"n": n, "setup_import_seconds": round(setup_s, 2), "dry_run_seconds": round(dry_s, 2),
            "dry_run_planned": {r.job: len(r.archived) for r in dry.results}, "jobs": jobs,
            "total_seconds": round(sum(j["seconds"] for j in jobs.values()), 2),
            "memory_md_chars_before": chars_before, "memory_md_chars_after": chars_after, "active_after": active}


def run_maintain_bench(ns: Sequence[int], *, backend: str = "sqlite", root: str | Path | None = None,
                       embedder: Embedder | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Time maintenance for every n; with ``root``, each n gets ``root/maintain-<n>`` (kept)."""
    progress = progress or NoProgress()
    load_before, base = bench_start(ns, 10, "sizes of at least 10 for --maintain", backend, root,
                                    "memfold-bench-maintain-")
    try:
        emb = embedder or make_embedder(load_settings(base).embedder)
        runs = []
        for n in ns:
            folder = base / f"maintain-{n}"
            if folder.exists() and any(folder.iterdir()):
                raise InvalidInputError(f"{folder} is not empty; give an empty --root (or none)")
            runs.append(_bench_one(n, folder, emb, backend, progress))
    finally:
        if not root:
            shutil.rmtree(base, ignore_errors=True)
    return {"kind": "maintain", "backend": backend, "embedder": emb.name, "cpu_count": os.cpu_count(), "runs": runs,
            "load_avg_before": load_before, "load_avg_after": [round(x, 2) for x in os.getloadavg()]}
