"""``memfold bench``: a synthetic scale test of the product's own paths.

For each size n: ingest n bilingual memories in batches (conversation turns, ``infer=False``),
then a sample one at a time (a turn, and a text into MEMORY.md); the model alone on the texts the
batch ingest embedded (same calls, right after each batch: ``ingest_over_model`` is what the write
path costs on top of the model); search latency with and
without query embedding (the second with the query vectors cached); ``build_context`` latency;
cold start (import + open + first search, in a fresh subprocess); peak RSS; index size on disk."""

from __future__ import annotations

import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import load_settings
from ..errors import InvalidInputError
from ..facade.memory import Memory
from ..index.base import StorageSize, capability
from ..providers.embedder import Embedder, make_embedder
from .harness import NoProgress, Progress, QueryCachingEmbedder

BATCH = 1000

_EN_WHO = "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil Trent Victor".split()
_EN_DID = ("visited", "cooked", "repaired", "photographed", "painted", "booked", "ordered", "cleaned", "studied",
           "planned", "sold", "borrowed", "reviewed", "designed", "ran past", "wrote about", "forgot", "found")
_EN_WHAT = ("the old lighthouse", "a lemon tart", "the blue bicycle", "a jazz concert", "the quarterly report",
            "a mountain cabin", "the garden fence", "a vintage camera", "the chess club", "a ceramic vase",
            "the river trail", "a birthday cake", "the rooftop bar", "a violin lesson", "the tax forms",
            "a road trip", "the school play", "a sourdough loaf", "the dentist visit", "a kayak tour")
_EN_WHEN = ("on Monday", "last weekend", "in March", "yesterday", "before lunch", "after work", "in the summer",
            "on her birthday", "during the storm", "at midnight", "next Friday", "in 2019")
_ZH_WHO = "小王 小李 老张 阿美 小陈 王老师 李医生 小刘 阿强 小赵 周阿姨 小吴 孙经理 小郑".split()
_ZH_DID = "去了 做了 修好了 拍了 画了 预订了 买了 打扫了 学习了 计划了 卖掉了 借了 看了 设计了 写了 找到了".split()
_ZH_WHAT = ("海边的灯塔 一个柠檬蛋糕 蓝色的自行车 一场爵士音乐会 季度报告 山里的小木屋 花园的篱笆 一台老相机 象棋俱乐部 "
            "一个陶瓷花瓶 河边的小路 生日蛋糕 屋顶酒吧 小提琴课 报税表 一次自驾游 学校的话剧 一条酸面包 牙医预约 皮划艇之旅").split()
_ZH_WHEN = "周一 上周末 三月份 昨天 午饭前 下班后 夏天 她生日那天 暴风雨时 半夜 下周五 2019年".split()


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """n bilingual memory texts (half English, half Chinese), varied enough not to be near-duplicates."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tag = f"{rng.randrange(10_000, 99_999)}"
        if i % 2 == 0:
            out.append(f"{rng.choice(_EN_WHO)} {rng.choice(_EN_DID)} {rng.choice(_EN_WHAT)} {rng.choice(_EN_WHEN)} "
                       f"with {rng.choice(_EN_WHO)}, ticket {tag}.")
        else:
            out.append(f"{rng.choice(_ZH_WHO)}{rng.choice(_ZH_WHEN)}和{rng.choice(_ZH_WHO)}一起{rng.choice(_ZH_DID)}"
                       f"{rng.choice(_ZH_WHAT)}，编号{tag}。")
    return out


def synthetic_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    en = [f"what did {rng.choice(_EN_WHO)} do with {rng.choice(_EN_WHAT)}?" for _ in range(n)]
    zh = [f"{rng.choice(_ZH_WHO)}什么时候{rng.choice(_ZH_DID)}{rng.choice(_ZH_WHAT)}？" for _ in range(n)]
    return [q for pair in zip(en, zh) for q in pair][:n]


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 and mean in milliseconds (nearest-rank percentiles)."""
    xs = sorted(samples_s)
    if not xs:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0}

    def pick(p: float) -> float:
        return xs[min(len(xs) - 1, max(0, math.ceil(p / 100.0 * len(xs)) - 1))] * 1000.0

    return {"p50": round(pick(50), 3), "p95": round(pick(95), 3), "p99": round(pick(99), 3),
            "mean": round(sum(xs) / len(xs) * 1000.0, 3)}


def _disk_bytes(root: Path, index_obj: object = None) -> dict[str, int]:
    """Bytes of the index (the SQLite file, or what a server backend reports) and of the workspace."""
    storage = capability(index_obj, StorageSize)
    index = int(storage.storage_bytes()) if storage is not None else \
        sum(p.stat().st_size for p in root.glob("index.db*") if p.is_file())
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {"index_bytes": index, "workspace_bytes": total}


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


_COLD = """
import sys, time
t0 = time.perf_counter()
from memfold import Memory
m = Memory(root=sys.argv[1], background=False)
t1 = time.perf_counter()
m.search(sys.argv[2], sys.argv[3], limit=10, record_access=False)
t2 = time.perf_counter()
# this process's own peak (ru_maxrss would report the parent's: Linux keeps it across exec)
try:
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) / 1024.0
except OSError:  # no /proc (macOS): the best available figure
    import resource
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(t1 - t0, t2 - t0, hwm)
"""


def cold_start(root: Path, query: str, user: str, backend: str) -> dict[str, float]:
    """Import + open + first search in a fresh interpreter (the embedder model load included)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    env["MEMFOLD_INDEX__BACKEND"] = backend
    for key in ("MEMFOLD_INDEX__DSN", "MEMFOLD_EMBEDDER__PROVIDER", "MEMFOLD_SEARCH__PROFILE"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", _COLD, str(root), query, user], capture_output=True, text=True,
                         env=env, timeout=600)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise InvalidInputError(f"cold-start subprocess failed: {res.stderr.strip()[-500:]}")
    opened, searched, rss = (float(x) for x in res.stdout.split())
    return {"seconds": round(searched, 3), "import_and_open_seconds": round(opened, 3),
            "process_wall_seconds": round(wall, 3), "peak_rss_mb": round(rss, 1)}


def _bench_one(n: int, root: Path, embedder: Embedder, backend: str, n_queries: int, n_single: int,
               progress: Progress) -> dict[str, Any]:
    user = f"bench-{n}-{os.getpid()}"  # unique, also in a shared PostgreSQL index
    texts = synthetic_texts(n + n_single)
    queries = synthetic_queries(n_queries)
    cached = QueryCachingEmbedder(embedder)
    recorder = RecordingEmbedder(cached)
    # the index is measured: no hot cache (the second pass would be cache hits; see benchmarks/cache_repeat.py)
    settings_over = {"index": {"backend": backend}, "cache": {"backend": "off"}}
    with Memory(settings=load_settings(root, **settings_over), embedder=recorder, background=False) as mem:
        cached.embed(["warm up"])  # the model loads here, not inside the timed ingest (cold start is timed apart)
        progress.start(f"n={n}: batch ingest", n)
        batch_s = model_s = 0.0
        for i in range(0, n, BATCH):
            chunk = [{"role": "user", "content": t} for t in texts[i: min(i + BATCH, n)]]
            recorder.calls = []
            t0 = time.perf_counter()
            mem.add(chunk, user, infer=False)
            batch_s += time.perf_counter() - t0
            # right after each batch (the same load on the machine), the model alone on the very texts
            # the batch embedded, in the same calls: what the ingest costs on top of the model
            calls, recorder.calls = recorder.calls, None
            t0 = time.perf_counter()
            for texts_of_call in calls:
                embedder.embed(texts_of_call)
            model_s += time.perf_counter() - t0
            progress.advance(len(chunk))
        stored = mem.index.count(user)

        progress.start(f"n={n}: one at a time", n_single)
        t0 = time.perf_counter()
        for t in texts[n: n + n_single]:
            mem.add([{"role": "user", "content": t}], user, infer=False)
            progress.advance()
        single_s = time.perf_counter() - t0
        n_text = max(1, n_single // 4)
        t0 = time.perf_counter()
        for t in texts[n: n + n_text]:
            mem.add(f"note: {t}", user, infer=False)
        text_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem.flush_vectors()  # the quality profile: the second vectors still being written after the adds
        catch_up_s = time.perf_counter() - t0

        progress.start(f"n={n}: search", 3 * n_queries)
        mem.search(queries[0], user, limit=10, record_access=False)  # warm the matrix and caches
        with_embed, without_embed, context = [], [], []
        for q in queries:  # first time: the query is embedded
            t0 = time.perf_counter()
            mem.search(q, user, limit=10, record_access=False)
            with_embed.append(time.perf_counter() - t0)
            progress.advance()
        for q in queries:  # again: the query vector comes from the cache
            t0 = time.perf_counter()
            mem.search(q, user, limit=10, record_access=False)
            without_embed.append(time.perf_counter() - t0)
            progress.advance()
        has_context = callable(getattr(mem, "build_context", None))
        if has_context:
            mem.build_context(queries[0], user)  # the first call loads the token counter's tables
        for q in queries:
            if has_context:
                t0 = time.perf_counter()
                mem.build_context(q, user)
                context.append(time.perf_counter() - t0)
            progress.advance()
        disk = _disk_bytes(root, mem.index)
    out: dict[str, Any] = {
        "n": n, "stored": stored,
        "ingest_batch_per_s": round(n / batch_s, 1), "ingest_batch_seconds": round(batch_s, 2),
        "model_alone_seconds": round(model_s, 2),
        "ingest_over_model": round(batch_s / model_s, 3) if model_s > 0 else None,
        "ingest_single_turn_per_s": round(n_single / single_s, 1),
        "ingest_single_text_per_s": round(n_text / text_s, 1),
        "search_ms": percentiles(with_embed), "search_no_embed_ms": percentiles(without_embed),
        "build_context_ms": percentiles(context) if context else None,
    }
    out.update(disk)
    worker = mem.second_worker
    if worker is not None:  # their cost: off the request path, in a background thread
        out["second_vectors"] = {"model": worker.embedder.name, "rows": worker.embedded,
                                 "embed_seconds": round(worker.embed_seconds, 2),
                                 "ms_per_memory": round(1000 * worker.embed_seconds / max(1, worker.embedded), 1),
                                 "still_writing_after_ingest_seconds": round(catch_up_s, 2)}
    progress.start(f"n={n}: cold start", 1)
    out["cold_start"] = cold_start(root, queries[0], user, backend)
    progress.advance()
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


class RecordingEmbedder:
    """Passes every call to ``inner``; while ``calls`` is a list, records the texts of each call."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.calls: list[list[str]] | None = None

    def embed(self, texts: Sequence[str]) -> Any:
        if self.calls is not None:
            self.calls.append(list(texts))
        return self.inner.embed(texts)

    def __getattr__(self, attr: str) -> Any:  # embed_query, warm, … of the wrapped embedder
        return getattr(self.inner, attr)


def bench_start(ns: Sequence[int], smallest: int, sizes: str, backend: str, root: str | Path | None,
                prefix: str) -> tuple[list[float], Path]:
    """The checks and the start every bench shares: the sizes (``--n``), the backend, the load
    average before, and the folder (``root``, or a new temporary one named ``prefix…``)."""
    if not ns or any(n < smallest for n in ns):
        raise InvalidInputError(f"--n needs {sizes}, got {list(ns)}")
    if backend not in ("sqlite", "postgres"):
        raise InvalidInputError(f"--backend must be 'sqlite' or 'postgres', got {backend!r}")
    load_before = [round(x, 2) for x in os.getloadavg()]
    return load_before, Path(root) if root else Path(tempfile.mkdtemp(prefix=prefix))


def run_bench(ns: Sequence[int], *, backend: str = "sqlite", root: str | Path | None = None,
              embedder: Embedder | None = None, n_queries: int = 200, n_single: int = 200,
              progress: Progress | None = None) -> dict[str, Any]:
    """Run the scale test for every n; with ``root``, each n gets ``root/bench-<n>`` (kept)."""
    progress = progress or NoProgress()
    load_before, base = bench_start(ns, 1, "positive sizes", backend, root, "memfold-bench-")
    t0 = time.perf_counter()
    try:
        emb = embedder or make_embedder(load_settings(base).embedder)
        runs = []
        for n in ns:
            folder = base / f"bench-{n}"
            if folder.exists() and any(folder.iterdir()):
                raise InvalidInputError(f"{folder} is not empty; give an empty --root (or none)")
            runs.append(_bench_one(n, folder, emb, backend, n_queries, n_single, progress))
    finally:
        if not root:
            shutil.rmtree(base, ignore_errors=True)
    return {"backend": backend, "embedder": emb.name, "batch_size": BATCH, "queries": n_queries,
            "cpu_count": os.cpu_count(), "python": sys.version.split()[0], "runs": runs,
            "load_avg_before": load_before, "load_avg_after": [round(x, 2) for x in os.getloadavg()],
            "seconds": round(time.perf_counter() - t0, 1)}
