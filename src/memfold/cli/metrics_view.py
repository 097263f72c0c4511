"""``memfold stats --metrics``: the live metrics as lines a person reads (``--json``: the dict).

A command line run is a process of its own: its operations are only those of this run, unless
``PROMETHEUS_MULTIPROC_DIR`` names the folder a ``memfold serve`` with several workers writes to
(then they are the server's). ``memfold serve`` exposes the live ones at ``GET /metrics``."""

from __future__ import annotations

from typing import Any


def _v(x: Any, unit: str = "") -> str:
    return "-" if x is None else f"{x:g}{unit}" if isinstance(x, float) else f"{x}{unit}"


def metrics_lines(m: dict[str, Any]) -> list[str]:
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
