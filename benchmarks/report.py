"""Charts of the benchmark results, for the documentation site and the README.

Reads the JSON files in ``benchmarks/results/`` (each ``{"provenance": {command, date, machine, ...},
...}``) and writes one SVG per chart to ``docs/assets/charts/``; every chart states the command, the
date and the machine its numbers come from. Nothing here measures: the numbers are those the
benchmarks wrote.

    python benchmarks/report.py                      # all charts
    python benchmarks/report.py --format png         # PNG instead of SVG

A fresh result is turned into a results file with its provenance (date and machine filled in):

    memfold eval madial DATA/madial/zh --json > /tmp/zh.json
    python benchmarks/report.py wrap /tmp/zh.json benchmarks/results/quality_madial_zh.json \\
        --command "memfold eval madial DATA/madial/zh --json"

Needs matplotlib (``pip install 'memfold[docs]'``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CHARTS = ROOT / "docs" / "assets" / "charts"

BLUE, ORANGE, GREEN, GREY, RED = "#3b6fb6", "#e08a2c", "#4a9a5b", "#8a8a8a", "#c0504d"


def machine() -> str:
    """This machine in a few words: cores, memory, OS, Python."""
    mem = ""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            kb = int(fh.readline().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores{mem}, {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def wrap(src: Path, dest: Path, command: str, note: str = "") -> None:
    """Write ``src`` (a benchmark's JSON output) to ``dest`` with its provenance."""
    prov = {"command": command, "date": dt.date.today().isoformat(), "machine": machine(),
            "source": "measured by the command on the machine named here"}
    if note:
        prov["note"] = note
    payload = {"provenance": prov, "result": json.loads(src.read_text(encoding="utf-8"))}
    dest.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load(name: str) -> dict[str, Any] | None:
    path = RESULTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _footer(fig: Any, *provs: dict[str, Any]) -> None:
    import textwrap

    lines = []
    for p in provs:
        lines += textwrap.wrap(f"$ {p['command']}", 170, subsequent_indent="    ")
        lines.append(f"{p['date']} · {p['machine']}")
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=6.5, color="#555555", va="bottom", ha="left", wrap=True)


def _save(fig: Any, name: str, fmt: str, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.{fmt}"
    meta = {"Date": None} if fmt == "svg" else {}
    fig.savefig(path, format=fmt, metadata=meta, dpi=150)
    return path


def chart_quality(fmt: str, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    locomo, lme = load("quality_locomo.json"), load("quality_longmemeval.json")
    zh, en = load("quality_madial_zh.json"), load("quality_madial_en.json")
    if not (locomo and lme and zh and en):
        return None
    fig = plt.figure(figsize=(10, 8.2))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.15], width_ratios=[1.25, 1], left=0.25, right=0.97,
                            top=0.92, bottom=0.17, hspace=0.45, wspace=0.35)
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])]
    names = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
    cats = locomo["result"]["by_category"]
    labels = ["all (1–4)"] + [f"{names.get(c, c)} (n={cats[c]['n_questions']})" for c in ("1", "2", "3", "4")]
    values = [locomo["result"]["recall"]["10"]] + [cats[c]["recall"]["10"] for c in ("1", "2", "3", "4")]
    ax = axes[0]
    ax.barh(labels[::-1], values[::-1], color=[BLUE] * 4 + [ORANGE])
    ax.set_title("LoCoMo: evidence recall@10", fontsize=11)
    ax.set_xlim(0, 1.15)
    for y, v in enumerate(values[::-1]):
        ax.text(v + 0.01, y, f"{v:.2f}", va="center", fontsize=9)
    ax = axes[1]
    ks = ["1", "3", "5", "10"]
    width = 0.38
    xs = range(len(ks))
    for off, data, label, color in ((-width / 2, zh, "zh", RED), (width / 2, en, "en", BLUE)):
        vals = [data["result"]["recall"][k] for k in ks]
        ax.bar([x + off for x in xs], vals, width, label=label, color=color)
    ax.set_xticks(list(xs), [f"@{k}" for k in ks])
    ax.set_ylim(0, 1)
    ax.set_title("MADial-Bench: memory recall@k", fontsize=11)
    ax.legend(fontsize=8, loc="upper left")
    ax = axes[2]
    types = lme["result"]["by_type"]
    order = sorted(types, key=lambda t: -types[t]["n_questions"])
    labels = ["all"] + [f"{t} (n={types[t]['n_questions']})" for t in order]
    values = [lme["result"]["recall_all"]["10"]] + [types[t]["recall_all"]["10"] for t in order]
    ax.barh(labels[::-1], values[::-1], color=[GREEN] * len(order) + [ORANGE])
    ax.set_xlim(0, 1.15)
    ax.set_title("LongMemEval: recall_all@10 of the evidence turns", fontsize=11)
    for y, v in enumerate(values[::-1]):
        ax.text(v + 0.01, y, f"{v:.2f}", va="center", fontsize=9)
    for ax in axes:
        ax.tick_params(labelsize=9)
    fig.suptitle("Retrieval quality on the development splits (offline embedder, no LLM)", fontsize=12)
    _footer(fig, locomo["provenance"], zh["provenance"], lme["provenance"])
    return _save(fig, "quality", fmt, out)


def chart_latency(fmt: str, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    data = load("search_latency.json")
    if not data:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    fig.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.27)
    colors = [BLUE, ORANGE, GREEN, RED]
    markers = ["o", "s", "^", "D"]
    for s, color, marker in zip(data["series"], colors, markers):
        xs, ys = zip(*s["points"])
        ax.plot(xs, ys, marker=marker, color=color, label=s["label"])
        for x, y in s["points"]:
            ax.annotate(f"{y:g}", (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xticks([10_000, 100_000], ["10,000", "100,000"])
    ax.set_xlim(6_000, 160_000)
    ax.set_ylim(0, None)
    ax.set_xlabel("memories per user", fontsize=9)
    ax.set_ylabel("search p50 (ms, query embedding included)", fontsize=9)
    ax.set_title("Search latency against store size", fontsize=11)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    _footer(fig, data["provenance"])
    return _save(fig, "latency", fmt, out)


def chart_mem0(fmt: str, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    data = load("mem0_compare.json")
    if not data:
        return None
    sizes = sorted({r["n"] for r in data["runs"]})
    keys = [("memfold", "memfold (defaults)", BLUE), ("memfold_floor", "memfold, optional stages and cache off", GREEN),
            ("mem0", "mem0 + FAISS (vector only)", ORANGE), ("embedding", "query embedding alone", GREY)]
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    fig.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.22)
    width = 0.2
    for i, (key, label, color) in enumerate(keys):
        means, lows, highs = [], [], []
        for n in sizes:
            vals = [r[key] for r in data["runs"] if r["n"] == n]
            m = sum(vals) / len(vals)
            means.append(m)
            lows.append(m - min(vals))
            highs.append(max(vals) - m)
        xs = [j + (i - 1.5) * width for j in range(len(sizes))]
        ax.bar(xs, means, width, color=color, label=label, yerr=[lows, highs], capsize=3, error_kw={"lw": 0.8})
    ax.set_xticks(range(len(sizes)), [f"{n:,}" for n in sizes])
    ax.set_xlabel("memories per user", fontsize=9)
    ax.set_ylabel("search p50 (ms; bar: mean of runs, whisker: range)", fontsize=9)
    ax.set_title("memfold against mem0, same embedder, same data", fontsize=11)
    ax.set_ylim(0, 9.5)
    ax.legend(fontsize=8, loc="upper left", ncols=2)
    ax.grid(axis="y", alpha=0.3)
    _footer(fig, data["provenance"])
    return _save(fig, "mem0", fmt, out)


def chart_floor(fmt: str, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    data = load("relevance_floor.json")
    if not data:
        return None
    sets = {"locomo": ("LoCoMo R@10", BLUE), "madial-zh": ("MADial zh R@5", RED), "madial-en": ("MADial en R@5", ORANGE),
            "longmemeval": ("LongMemEval all@10", GREEN)}
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4))
    fig.subplots_adjust(left=0.07, right=0.98, top=0.86, bottom=0.22, wspace=0.25)
    for key, (label, color) in sets.items():
        rows = data["result"].get(key)
        if not rows:
            continue
        floors = sorted(rows, key=float)
        xs = [float(t) for t in floors]
        left.plot(xs, [rows[t]["recall"] for t in floors], marker="o", color=color, label=label)
        right.plot(xs, [rows[t]["nonsense_answered"] for t in floors], marker="o", color=color, label=label)
    for ax, title, ylabel in ((left, "What the floor costs: recall", "recall"),
                              (right, "What it buys: nonsense queries still answered", "share of queries with a hit")):
        ax.axvline(0.15, color="#333333", ls="--", lw=0.8)
        ax.text(0.155, 0.93, "default 0.15", fontsize=8, transform=ax.get_xaxis_transform())
        ax.set_xlabel("min_score", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    left.legend(fontsize=8, loc="lower left")
    fig.suptitle("The relevance floor's trade-off", fontsize=11)
    _footer(fig, data["provenance"])
    return _save(fig, "relevance-floor", fmt, out)


CHARTS_ALL = (chart_quality, chart_latency, chart_mem0, chart_floor)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    w = sub.add_parser("wrap", help="store a benchmark's JSON output as a results file with its provenance")
    w.add_argument("src", type=Path)
    w.add_argument("dest", type=Path)
    w.add_argument("--command", required=True, help="the command that wrote SRC")
    w.add_argument("--note", default="")
    ap.add_argument("--format", choices=("svg", "png"), default="svg")
    ap.add_argument("--out", type=Path, default=CHARTS)
    args = ap.parse_args(argv)
    if args.cmd == "wrap":
        wrap(args.src, args.dest, args.command, args.note)
        return 0
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "memfold"  # the same numbers give the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable, selectable
    missing = []
    for chart in CHARTS_ALL:
        path = chart(args.format, args.out)
        if path is None:
            missing.append(chart.__name__)
        else:
            print(path)
    if missing:
        print(f"no results for: {', '.join(missing)} (see benchmarks/results/)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
