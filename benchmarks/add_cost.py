"""What one ``add`` costs as ``MEMORY.md`` grows: the median time of adding one memory to a namespace
that already holds 100, 1,000 and 10,000 memories in its ``MEMORY.md``.

    python benchmarks/add_cost.py [--sizes 100,1000,10000] [--adds 40] [--root DIR]

Each size gets a fresh namespace whose ``MEMORY.md`` is written with that many bullets, then
indexed once (not timed); then ``--adds`` single-sentence adds with words never seen before are
timed one by one (rule path, no LLM, the bundled embedder). Prints, per size, the file's size, p50
and p90 of an add (wall clock), the p50 of the process's CPU time per add, and the ratio of each
p50 to the smallest size's."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from memfold import Memory
from memfold.eval.fresh_words import FreshWords

TOPICS = ("tea", "trains", "chess", "rivers", "violins", "maps", "kites", "lamps", "boats", "ferns")


def populate(mem: Memory, user: str, n: int) -> Path:
    mem.init(user, language="en")
    path = Path(mem.settings.root) / user / "MEMORY.md"
    bullets = "\n".join(f"- 2026-01-{1 + i % 28:02d}: note {i}: the {TOPICS[i % 10]} of group w{i} is "
                        f"kept in place x{i * 7}" for i in range(n))
    text = path.read_text(encoding="utf-8").replace("## Notes\n", "## Notes\n\n" + bullets + "\n", 1)
    path.write_text(text, encoding="utf-8")
    mem.search("warm up", user)  # indexes the file once (ids stamped), loads the model
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--adds", type=int, default=40)
    ap.add_argument("--root", default=None, help="workspace folder (default: a new temporary one)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    root = args.root or tempfile.mkdtemp(prefix="memfold-addcost-")
    rows = []
    with Memory(root=root) as mem:
        for n in sizes:
            user = f"size{n}"
            path = populate(mem, user, n)
            times, cpu = [], []
            words = FreshWords(seed=n)  # facts with words never seen before: each add stores a new memory
            for _ in range(args.adds):
                text = words.fact("en")
                t0, c0 = time.perf_counter(), time.process_time()
                mem.add(text, user, infer=False)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            times.sort()
            rows.append((n, path.stat().st_size, statistics.median(times) * 1000,
                         times[int(0.9 * (len(times) - 1))] * 1000, statistics.median(cpu) * 1000))
    base = rows[0][2]
    print(f"{'memories':>9} {'MEMORY.md':>11} {'p50 ms':>8} {'p90 ms':>8} {'CPU p50 ms':>11} {'p50 / first':>12}")
    for n, size, p50, p90, cpu50 in rows:
        print(f"{n:>9,} {size / 1024:>9,.0f}kB {p50:>8.1f} {p90:>8.1f} {cpu50:>11.1f} {p50 / base:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
