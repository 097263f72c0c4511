"""The metrics as others read them: ``exposition`` (Prometheus text format, for ``GET /metrics``)
and ``summary`` (a dict with p50/p95/p99 per operation, for ``memfold stats --metrics``).

Counts by memory type and the average importance are not recorded: they are read from the index
when scraped (``MemoryCollector``), so they are right whichever process wrote the rows."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from .registry import OPERATIONS

MAX_NAMESPACES = 200  # namespaces reported per scrape (each costs one small index query)


def multiprocess_dir() -> str | None:
    """The folder shared by the processes of a multi-worker deployment, when one is set."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir") or None


def prepare_multiprocess(folder: str | os.PathLike[str]) -> str:
    """For a server about to start several worker processes: empty ``folder`` (values of an earlier
    run would be added in) and name it in ``PROMETHEUS_MULTIPROC_DIR``, which the workers inherit.
    It must be set before a worker imports memfold (prometheus_client reads it at import)."""
    path = os.fspath(folder)
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if name.endswith(".db"):
            os.remove(os.path.join(path, name))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    return path


class MemoryCollector:
    """Scrape-time gauges of a ``Memory``: active memories by type, archived memories and average
    importance, per namespace with ``per_namespace`` (user ids are personal data: only for a scrape
    that may see them), else added up over the namespaces; and the number of namespaces."""

    def __init__(self, memory: Any, per_namespace: bool = True):
        self.memory, self.per_namespace = memory, per_namespace

    def collect(self) -> Iterator[Metric]:
        ns = ["user_id"] if self.per_namespace else []
        by_type = GaugeMetricFamily("memfold_memories", "Active memories by type" + (" and namespace" if ns else ""),
                                    labels=[*ns, "memory_type"])
        archived = GaugeMetricFamily("memfold_memories_archived", "Archived (replaced or merged) memories",
                                     labels=ns)
        importance = GaugeMetricFamily("memfold_average_importance", "Average importance of the memories"
                                       + (" of a namespace" if ns else ""), labels=ns)
        users = sorted(self.memory.index.user_ids())
        namespaces = GaugeMetricFamily("memfold_namespaces", "Namespaces in the index", value=float(len(users)))
        types: dict[str, float] = {}
        archived_n = weight = weighted = 0.0
        for user_id, s in namespace_stats(self.memory, users=users):
            labels = [user_id] if ns else []
            for mtype, n in sorted((s.get("by_type") or {}).items()):
                types[str(mtype)] = types.get(str(mtype), 0.0) + float(n)
                if ns:
                    by_type.add_metric([*labels, str(mtype)], float(n))
            archived_n += float(s.get("archived") or 0)
            if ns:
                archived.add_metric(labels, float(s.get("archived") or 0))
            if s.get("avg_importance") is not None:
                rows = float(s.get("total") or 1)  # the namespace's average is over its rows
                weight, weighted = weight + rows, weighted + rows * float(s["avg_importance"])
                if ns:
                    importance.add_metric(labels, float(s["avg_importance"]))
        if not ns:
            for mtype, n in sorted(types.items()):
                by_type.add_metric([mtype], n)
            archived.add_metric([], archived_n)
            if weight > 0:
                importance.add_metric([], weighted / weight)
        yield from (by_type, archived, importance, namespaces)


def namespace_stats(memory: Any, user_id: str | None = None,
                    users: list[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    users = [user_id] if user_id else sorted(memory.index.user_ids() if users is None else users)[:MAX_NAMESPACES]
    for u in users:
        yield u, memory.index.stats(u)


def _recorded() -> Iterable[Metric]:
    """The recorded metric families: this process's, or every process's of the multiprocess folder."""
    folder = multiprocess_dir()
    if folder:
        reg = CollectorRegistry()
        MultiProcessCollector(reg, path=folder)
        return reg.collect()
    return REGISTRY.collect()


def exposition(memory: Any = None, per_namespace: bool = True) -> tuple[bytes, str]:
    """The body and content type of a ``/metrics`` response; with ``memory``, its counts by type too
    (by namespace with ``per_namespace``)."""
    folder = multiprocess_dir()
    if folder:
        reg = CollectorRegistry()
        MultiProcessCollector(reg, path=folder)
        body = generate_latest(reg)
    else:
        body = generate_latest(REGISTRY)
    if memory is not None:
        scrape = CollectorRegistry(auto_describe=False)
        scrape.register(MemoryCollector(memory, per_namespace))  # type: ignore[arg-type]
        body += generate_latest(scrape)
    return body, CONTENT_TYPE_LATEST


def percentile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The ``q`` quantile from cumulative histogram buckets ``[(upper bound, count), …]`` (the last
    bound +Inf), interpolated linearly within the bucket it falls in, as Prometheus'
    ``histogram_quantile`` does; None without observations."""
    buckets = sorted(buckets)
    total = buckets[-1][1] if buckets else 0.0
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, cum in buckets:
        if cum >= rank:
            if math.isinf(bound):
                return lower  # beyond the largest finite bucket: its bound is what is known
            inside = cum - below
            return lower + (bound - lower) * ((rank - below) / inside if inside > 0 else 1.0)
        lower, below = bound, cum
    return lower


def _histograms(families: Iterable[Metric], name: str, label: str) -> dict[str, dict[str, Any]]:
    """Per value of ``label``: buckets (outcomes added up), count, errors and sum of histogram ``name``."""
    out: dict[str, dict[str, Any]] = {}
    for fam in families:
        if fam.name != name:
            continue
        for s in fam.samples:
            key = s.labels.get(label)
            if key is None:
                continue
            h = out.setdefault(key, {"buckets": {}, "count": 0.0, "errors": 0.0, "sum": 0.0})
            if s.name.endswith("_bucket"):
                le = float(s.labels["le"])
                h["buckets"][le] = h["buckets"].get(le, 0.0) + s.value
            elif s.name.endswith("_count"):
                h["count"] += s.value
                if s.labels.get("outcome") == "error":
                    h["errors"] += s.value
            elif s.name.endswith("_sum"):
                h["sum"] += s.value
    return out


def _ms(v: float | None) -> float | None:
    return round(v * 1000.0, 3) if v is not None else None


def _latency(h: dict[str, Any]) -> dict[str, Any]:
    buckets = sorted(h["buckets"].items())
    n = int(h["count"])
    return {"count": n, "errors": int(h["errors"]),
            "mean_ms": _ms(h["sum"] / n) if n else None,
            "p50_ms": _ms(percentile(buckets, 0.50)), "p95_ms": _ms(percentile(buckets, 0.95)),
            "p99_ms": _ms(percentile(buckets, 0.99))}


def _counter(families: Iterable[Metric], name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for fam in families if fam.name == name for s in fam.samples
            if s.name == name + "_total"]


def summary(memory: Any = None, user_id: str | None = None, *, families: Iterable[Metric] | None = None,
            scope: str | None = None) -> dict[str, Any]:
    """What ``memfold stats --metrics`` shows: per operation count, errors and p50/p95/p99 (ms, from
    the histogram buckets), maintenance jobs, LLM tokens, cache hit rate; with ``memory``, the
    namespaces' memories by type and average importance (only ``user_id``'s when given, with its hot set).
    ``families``: other processes' metrics (``shared.families``) instead of this process's, named by ``scope``."""
    families = list(_recorded()) if families is None else list(families)
    ops = _histograms(families, "memfold_operation_duration_seconds", "operation")
    jobs = _histograms(families, "memfold_maintenance_job_duration_seconds", "job")
    empty = {"buckets": {}, "count": 0.0, "errors": 0.0, "sum": 0.0}
    tokens = {"prompt": 0, "completion": 0}
    for labels, v in _counter(families, "memfold_llm_tokens"):
        tokens[labels.get("kind", "?")] = tokens.get(labels.get("kind", "?"), 0) + int(v)
    cache: dict[str, dict[str, int]] = {}
    for labels, v in _counter(families, "memfold_cache_requests"):
        per = cache.setdefault(labels.get("kind", "?"), {"hit": 0, "miss": 0, "skip": 0})
        per[labels.get("result", "?")] = per.get(labels.get("result", "?"), 0) + int(v)
    hits = sum(c["hit"] for c in cache.values())
    lookups = hits + sum(c["miss"] + c["skip"] for c in cache.values())
    out: dict[str, Any] = {
        "scope": scope or (f"all processes writing to {multiprocess_dir()}" if multiprocess_dir() else "this process"),
        "operations": {op: _latency(ops.get(op, empty)) for op in sorted(set(OPERATIONS) | set(ops))},
        "maintenance_jobs": {job: _latency(h) for job, h in sorted(jobs.items())},
        "llm_tokens": dict(tokens, total=sum(tokens.values())),
        "cache": {"hits": hits, "lookups": lookups, "hit_rate": round(hits / lookups, 4) if lookups else None,
                  "by_kind": cache},
    }
    if memory is not None:
        out["memories"] = {u: {"by_type": s.get("by_type") or {}, "active": s.get("active"),
                               "archived": s.get("archived"), "avg_importance": s.get("avg_importance")}
                           for u, s in namespace_stats(memory, user_id)}
        hot = getattr(memory, "hot_memories", None)
        if user_id and callable(hot):  # the namespace's hot set (cache/): most accessed first
            out["hot"] = [{"id": r.id, "access_count": r.access_count, "content": r.content} for r in hot(user_id)]
    return out
