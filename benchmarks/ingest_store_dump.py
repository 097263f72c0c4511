"""Before/after check that a change of the write path stores nothing different.

    PYTHONPATH=<tree>/src .venv/bin/python benchmarks/ingest_store_dump.py OUT.json [N]

Ingests a fixed mixed input (N bench turns in batches of 500 with assistant turns, secrets,
near-duplicates, a forget request; the first batch with ``infer=True``; then text adds into
``MEMORY.md`` and single turns into a second namespace) with deterministic ids, and dumps every
table of the index and every Markdown file (backups as a sorted list), times masked. Run it with
two trees and compare the files (``cmp``): byte-identical means the same rows, terms, vectors,
hashes, history and files."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import memfold
import memfold.engine.storage.records as rec
from memfold.config import load_settings
from memfold.errors import MemfoldError
from memfold.eval.bench import synthetic_texts
from memfold.facade.memory import Memory
from memfold.providers.embedder import make_embedder

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(\+00:00|Z)?")
TABLES = [("memories", "rowid"), ("history", "n"), ("relations", "source_id, target_id"), ("tombstones", "seq, id"),
          ("state", "user_id, kind, key"), ("meta", "key"), ("files", "file")]


def _norm(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    return _TIME.sub("<T>", v) if isinstance(v, str) else v


def main(out: str, n: int) -> None:
    ids = itertools.count()
    rec.new_id = lambda: f"id{next(ids):010d}"  # deterministic ids: the two trees' rows line up
    root = Path(tempfile.mkdtemp(prefix="ingest-store-dump-"))
    texts = synthetic_texts(n)
    extra = ["my wifi password is hunter2xyz", "Card 4111 1111 1111 1111 for the hotel and I like tea",
             "sk-abcdefghijklmnopqrstuvwx1234", "我的密码是abc12345，明天去北京", "身份证 110101199003074578",
             "please forget what I said about the lemon tart", texts[3], texts[3].upper(), texts[5] + " again",
             "login admin / admin12345", "token ghp_abcdefghijklmnop1234567890", "I love hiking in the Alps.",
             "My favourite colour is green.", "My favourite colour is blue.", "ΣΟΦΟΣ Σ", "ﬁle ﬀ ½ café"]
    settings = {"index": {"backend": "sqlite"}, "cache": {"backend": "off"}}
    with Memory(settings=load_settings(root, **settings), embedder=make_embedder(load_settings(root).embedder)) as m:
        for i in range(0, n, 500):
            batch = [{"role": "user" if j % 3 else "assistant", "content": t, "timestamp": "2026-11-01T10:00:00Z"}
                     for j, t in enumerate(texts[i:i + 500] + extra)]
            m.add(batch, "u", infer=(i == 0))
        for t in extra + texts[:20]:
            try:
                m.add(t, "u", infer=True)
            except MemfoldError as exc:  # mostly a secret: refused, the same on both sides
                print("refused:", type(exc).__name__)
            m.add([{"role": "user", "content": t}], "u2", infer=False)
    db = sqlite3.connect(root / "index.db")
    dump: dict[str, Any] = {}
    for table, order in TABLES:
        cur = db.execute(f"SELECT * FROM {table} ORDER BY {order}")
        cols = [d[0] for d in cur.description]
        dump[table] = [dict(zip(cols, map(_norm, r))) for r in cur if r[0] != "instance"]  # meta's random id
    for f in dump["files"]:
        f.pop("mtime_ns", None)
    md = sorted(root.rglob("*.md"))
    dump["files_md"] = {str(p.relative_to(root)): _norm(p.read_text()) for p in md if "backups" not in p.parts}
    dump["backups"] = sorted(_norm(p.read_text()) for p in md if "backups" in p.parts)
    Path(out).write_text(json.dumps(dump, indent=0, ensure_ascii=False, sort_keys=True))
    print(memfold.__file__, {k: len(v) for k, v in dump.items()})


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000)
