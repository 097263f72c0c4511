"""What serving the tools over MCP costs: the start of ``memfold mcp`` (process, embedder, index)
until the first ``tools/list`` answer, and the per-call latency of ``memory_search``,
``memory_read`` and ``memory_append`` through the official SDK client over stdio, against the
same ``memfold.tools.call`` in process, for a namespace of ``--n`` imported memories.

    python benchmarks/mcp_roundtrip.py --n 500 --calls 60
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from memfold import Memory
from memfold.tools import call

WORDS = "apple river stone cloud violin tiger copper lantern meadow rocket garden harbour 咖啡 拿铁 项目 截止 花园".split()


def _stats(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return round(statistics.median(times), 2), round(times[max(0, int(len(times) * 0.95) - 1)], 2)


def _local(fn: Callable[[], object], n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return _stats(times)


async def _remote(fn: Callable[[], Awaitable[Any]], n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        res = await fn()
        times.append((time.perf_counter() - t0) * 1000)
        assert not res.is_error, res.content[0].text
    return _stats(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=500, help="memories in the namespace")
    ap.add_argument("--calls", type=int, default=60, help="calls per measurement")
    args = ap.parse_args()
    rng = random.Random(0)
    queries = [" ".join(rng.choices(WORDS, k=3)) for _ in range(args.calls)]
    out: dict[str, Any] = {"n": args.n, "calls": args.calls, "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as root:
        with Memory(root=root) as m:
            m.import_records([{"id": f"f{i:06d}", "user_id": "u", "memory_type": "fact",
                               "content": f"fact {i}: " + " ".join(rng.choices(WORDS, k=10))} for i in range(args.n)])
            q = iter(queries * 2)
            k = iter(range(10**6))
            local = {
                "memory_search": _local(lambda: call(m, "memory_search", {"query": next(q)}, user_id="u"), args.calls),
                "memory_read": _local(lambda: call(m, "memory_read", {}, user_id="u"), args.calls),
                "memory_append": _local(lambda: call(m, "memory_append", {"content": f"note {next(k)} about rivers"},
                                                     user_id="u"), max(1, args.calls // 4)),
            }
        env = {key: v for key, v in os.environ.items() if not key.startswith("MEMFOLD_")}
        params = StdioServerParameters(command=sys.executable, args=["-m", "memfold", "--root", root, "mcp", "--user", "u"],
                                       env=env)

        async def remote() -> dict[str, Any]:
            t0 = time.perf_counter()
            async with Client(params) as c:
                await c.list_tools()
                started = round((time.perf_counter() - t0) * 1000)
                q2 = iter(queries * 2)
                k2 = iter(range(10**6, 2 * 10**6))
                return {"start_ms": started, "calls": {
                    "memory_search": await _remote(lambda: c.call_tool("memory_search", {"query": next(q2)}), args.calls),
                    "memory_read": await _remote(lambda: c.call_tool("memory_read", {}), args.calls),
                    "memory_append": await _remote(lambda: c.call_tool("memory_append",
                                                                       {"content": f"note {next(k2)} about rivers"}),
                                                   max(1, args.calls // 4)),
                }}

        over_mcp = anyio.run(remote)
    out.update(start_ms=over_mcp["start_ms"],
               tools={t: {"call_p50_p95_ms": local[t], "mcp_p50_p95_ms": over_mcp["calls"][t]} for t in local})
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
