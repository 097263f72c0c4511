"""Many writers: 4 processes × 80 adds into one namespace of one workspace, sharing one
PostgreSQL index. Every memory must end up in MEMORY.md and in the index, with nothing to repair.

The workers embed with the hashing test embedder: the bundled model costs ~80 ms of CPU per
add, which would make this a 4-minute test of the model instead of the writers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from memfold import Memory
from memfold.text import memory_markdown as md

from ..support.hash_embedder import HashEmbedder

WORKERS, ADDS = 4, 80

WORKER = textwrap.dedent("""
    import json, random, sys
    from memfold import Memory
    from tests.support.hash_embedder import HashEmbedder

    root, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    words = open(sys.argv[4], encoding="utf-8").read().split()
    rnd = random.Random(worker)
    # distinct texts; a stricter duplicate threshold keeps unrelated word salads from merging
    mem = Memory(root=root, embedder=HashEmbedder(), policy={"dedupe_threshold": 0.99})
    ids = []
    for i in range(n):
        text = f"worker {worker} item {i}: " + " ".join(rnd.sample(words, 6))
        res = mem.add(text, "team", memory_type="fact")
        assert len(res.added) == 1, (text, res)
        ids.append(res.added[0].id)
    mem.close()
    print(json.dumps(ids))
""")

WORDS = """apple river stone cloud piano garden rocket violet summer harbor candle forest lemon silver tiger
window ocean pencil marble castle bridge copper desert falcon glacier hammer island jungle kettle ladder meadow
needle orchard pepper quartz saddle thunder velvet walnut yogurt zebra anchor basket cactus dragon engine feather
guitar helmet igloo jacket kayak lantern mirror nectar oyster parrot quiver rabbit shovel tunnel umbrella volcano
wagon yacht acorn blossom canyon dolphin ember fountain goblet hedge ivory jasmine kernel lagoon mosaic noodle
otter pebble quilt ribbon sparrow tulip unicorn vortex willow saffron tornado beacon comet dune echo fjord grove""" \
    .split()


def test_four_processes_add_at_once(pg_dsn: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    words = tmp_path / "words.txt"
    words.write_text(" ".join(WORDS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    env.update(MEMFOLD_INDEX__BACKEND="postgres", MEMFOLD_INDEX__DSN=pg_dsn)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), str(w), str(ADDS), str(words)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=Path(__file__).resolve().parents[2])
             for w in range(WORKERS)]
    ids: list[str] = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        ids += json.loads(stdout.strip().splitlines()[-1])
    assert len(ids) == len(set(ids)) == WORKERS * ADDS

    text = (root / "team" / "MEMORY.md").read_text(encoding="utf-8")
    in_file = {e.id: e.content for e in md.parse(text)}
    assert set(in_file) == set(ids)
    for w in range(WORKERS):
        assert sum(c.startswith(f"worker {w} item ") for c in in_file.values()) == ADDS

    from memfold.config import load_settings

    settings = load_settings(root, index={"backend": "postgres", "dsn": pg_dsn})
    with Memory(settings=settings, embedder=HashEmbedder()) as mem:
        st = mem._store("team")
        assert st.sync() == 0  # the index already matches the file: nothing was lost between them
        rows = mem.index.list_records("team")
        assert {r.id: r.content for r in rows} == in_file
        assert mem.index.count("team") == WORKERS * ADDS
        assert all(mem.index.history("team", i)[0].action == "add" for i in ids[:: 20])
        probe = in_file[ids[WORKERS * ADDS * 3 // 4]]
        assert mem.search(probe, "team", limit=1, record_access=False)[0].record.id == ids[WORKERS * ADDS * 3 // 4]
