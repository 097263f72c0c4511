"""What the tools layer costs over the engine: per-call latency of ``memfold.tools.call`` (argument
parsing, validation, result models, JSON-ready dict) against the direct ``Memory`` call, for a
namespace of ``--n`` memories, and the time to generate the schemas.

    python benchmarks/tools_calls.py --n 1000 --calls 100
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable

from memfold import Memory
from memfold.tools import call, openai_tools
from memfold.tools.registry import TOOLS

WORDS = "apple river stone cloud violin tiger copper lantern meadow rocket garden harbour 咖啡 拿铁 项目 截止 花园".split()


def _ms(fn: Callable[[], object], n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000, help="memories in the namespace")
    ap.add_argument("--calls", type=int, default=100, help="calls per measurement")
    args = ap.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as root, Memory(root=root) as m:
        facts = [f"fact {i}: " + " ".join(rng.choices(WORDS, k=10)) for i in range(args.n)]
        m.import_records([{"id": f"f{i:06d}", "user_id": "u", "content": f, "memory_type": "fact"}
                          for i, f in enumerate(facts)])
        queries = [" ".join(rng.choices(WORDS, k=3)) for _ in range(args.calls)]
        q = iter(queries * 3)
        rows = []
        rows.append(("memory_search", _ms(lambda: m.search(next(q), "u", limit=10), args.calls),
                     _ms(lambda: call(m, "memory_search", json.dumps({"query": next(q)}), user_id="u"), args.calls)))
        rows.append(("memory_read", _ms(lambda: m.read_file(None, "u"), args.calls),
                     _ms(lambda: call(m, "memory_read", {}, user_id="u"), args.calls)))
        k = iter(range(10**6))
        rows.append(("memory_append", _ms(lambda: m.add(f"note {next(k)} about the garden", "u"), args.calls // 4),
                     _ms(lambda: call(m, "memory_append", {"content": f"note {next(k)} about the harbour"}, user_id="u"),
                         args.calls // 4)))
        e = iter(range(args.n))

        def edit_direct() -> None:
            i = next(e)
            m.edit_text("MEMORY.md", f"fact {i}: ", f"fact #{i}: ", "u")

        def edit_tool() -> None:
            i = next(e)
            assert call(m, "memory_edit", {"path": "MEMORY.md", "old_text": f"fact {i}: ", "new_text": f"fact #{i}: "},
                        user_id="u")["ok"]

        rows.append(("memory_edit", _ms(edit_direct, args.calls // 4), _ms(edit_tool, args.calls // 4)))
        schema = _ms(lambda: openai_tools("zh"), 20)
    print(f"n={args.n} memories, load average {os.getloadavg()[0]:.2f}")
    print(f"{'tool':<15} {'direct p50/p95 ms':>20} {'call() p50/p95 ms':>20}")
    for name, direct, tool in rows:
        print(f"{name:<15} {direct[0]:>9.2f} /{direct[1]:>8.2f} {tool[0]:>9.2f} /{tool[1]:>8.2f}")
    print(f"openai_tools('zh') for {len(TOOLS)} tools: p50 {schema[0]:.2f} ms")


if __name__ == "__main__":
    main()
