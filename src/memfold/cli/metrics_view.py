"""``memfold stats --metrics``: the live metrics as lines a person reads (``--json``: the dict).

A command line run is a process of its own, with nothing recorded worth showing: the metrics
shown are those of the ``memfold serve`` workers and ``memfold mcp`` processes running on the
same workspace (the files they keep under ``<root>/.metrics``, ``metrics/shared.py``), or with
``PROMETHEUS_MULTIPROC_DIR`` set those of the processes writing to that folder. When none runs,
a line says so. ``memfold serve`` exposes the live ones at ``GET /metrics`` too."""

from __future__ import annotations

from typing import Any

NOTHING_RUNS = ("no memfold serve or memfold mcp process is running on {root}: start one and its live "
                "metrics show here")


def live_summary(memory: Any, user_id: str | None, root: Any = None) -> dict[str, Any]:
    """The summary of the running processes' metrics (``running`` False and no operations when none runs);
    ``memory`` None: no workspace at ``root`` (no memory counts, and nothing runs on it)."""
    from ..metrics import shared, summary
    from ..metrics.exposition import multiprocess_dir

    root = memory.settings.root if memory is not None else root
    docs = shared.running(root)
    if docs:
        noun = "process" if len(docs) == 1 else "processes"
        m = summary(memory, user_id, families=shared.families(docs),
                    scope=f"{len(docs)} running {noun} of {root}: {shared.describe(docs)}")
    elif multiprocess_dir():
        m = summary(memory, user_id)
    else:
        m = summary(memory, user_id, families=[], scope=NOTHING_RUNS.format(root=root))
    m["running"] = bool(docs) or bool(multiprocess_dir())
    m["processes"] = [{k: d.get(k) for k in ("kind", "pid", "host", "started_at", "written_at")} for d in docs]
    return m


def _v(x: Any, unit: str = "") -> str:
    return "-" if x is None else f"{x:g}{unit}" if isinstance(x, float) else f"{x}{unit}"


def metrics_lines(m: dict[str, Any]) -> list[str]:
    if m.get("running") is False:
        return [m["scope"]] + _memory_lines(m)
    lines = [f"metrics of {m['scope']}"]
    lines.append(f"{'operation':<16}{'count':>8}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    rows = list(m["operations"].items()) + [(f"job {k}", v) for k, v in m["maintenance_jobs"].items()]
    for name, h in rows:
        lines.append(f"{name:<16}{h['count']:>8}{h['errors']:>8}{_v(h['p50_ms']):>10}{_v(h['p95_ms']):>10}"
                     f"{_v(h['p99_ms']):>10}{_v(h['mean_ms']):>10}")
    t = m["llm_tokens"]
    lines.append(f"LLM tokens: {t['total']} ({t['prompt']} prompt, {t['completion']} completion)")
    c = m["cache"]
    rate = f"{c['hit_rate'] * 100:.1f} %" if c["hit_rate"] is not None else "-"
    lines.append(f"cache: {c['hits']} hits of {c['lookups']} lookups (hit rate {rate})")
    for kind, per in sorted(c["by_kind"].items()):
        lines.append(f"  {kind}: {per.get('hit', 0)} hit, {per.get('miss', 0)} miss, {per.get('skip', 0)} skipped")
    return lines + _memory_lines(m)


def _memory_lines(m: dict[str, Any]) -> list[str]:
    lines = []
    for user, s in (m.get("memories") or {}).items():
        by_type = ", ".join(f"{k} {v}" for k, v in sorted(s["by_type"].items())) or "none"
        lines.append(f"memories of {user}: {by_type}; average importance {_v(s['avg_importance'])}")
    hot = m.get("hot")
    if hot is not None:
        lines.append(f"hot set: {len(hot)} most accessed memories" + (":" if hot else ""))
        for h in hot:
            text = h["content"] if len(h["content"]) <= 70 else h["content"][:69] + "…"
            lines.append(f"  {h['access_count']:>6}  {h['id']}  {text}")
    return lines
