"""How much old-memory compression shortens without an LLM, and whether it loses a fact: the corpus
``benchmarks/data/old_memories.json`` (English and Chinese groups of memories about one topic, the
same fact saved again in other words, details added later) is compressed at each stage.

    python benchmarks/compress_old.py [--data FILE] [--json] [--show]

For each language and stage a fresh workspace holds the corpus's memories, dated 45 days ago (the
merge stage, ``old_memory_merge_days`` = 30) or 120 days ago (the hard stage, ``old_memory_days``
= 90); ``memfold maintain``'s ``compress_old_memories`` job runs (no LLM, the bundled embedder).
"merge, then hard" runs the merge stage, then the job again as when those memories have gone
unused for the hard stage's days (the policy's days shortened instead of the clock moved).

Printed per row: memories before and after, characters before and after and their ratio, and the
corpus's facts (every entity and date of each group, listed in the data file) found in the
memories after compression, and found there or in ``archive.md``. Exit 1 when a fact is lost."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.engine.storage.records import new_id
from memfold.models import FILE_LEARNINGS, FILE_MEMORY, MemoryRecord, MemoryType

DATA = Path(__file__).parent / "data" / "old_memories.json"
STAGES = {"merge (30 days)": (45, False), "merge, then hard (90 days)": (45, True), "hard at once (90 days)": (120, False)}
LATER = {"old_memory_merge_days": 10, "old_memory_days": 40}  # 45-day-old memories as if 90 days had passed


def run(groups: list[dict[str, Any]], lang: str, days: int, then_hard: bool, show: bool) -> dict[str, Any]:
    now = datetime.now(timezone.utc)
    at = now - timedelta(days=days)
    rows = []
    for gi, g in enumerate(groups):
        for mi, text in enumerate(g["memories"]):
            t = at - timedelta(minutes=10 * (len(g["memories"]) - mi) + 1000 * gi)  # saved in this order
            rows.append(MemoryRecord(id=new_id(), user_id=lang, memory_type=MemoryType(g["type"]), content=text,
                                     created_at=t, updated_at=t).to_dict())
    with tempfile.TemporaryDirectory() as tmp, Memory(root=tmp, background=False) as m:
        m.init(lang, lang)
        m.import_records(rows)
        res = m.maintain(lang, jobs=["compress_old_memories"]).results[0]
        if res.status not in ("done", "nothing"):
            raise SystemExit(f"{lang}: {res.summary()}")
        if then_hard:  # the merged memories, unused for the hard stage's days: compressed again
            with Memory(root=tmp, background=False, policy=LATER) as later:
                res = later.maintain(lang, jobs=["compress_old_memories"]).results[0]
                if res.status not in ("done", "nothing"):
                    raise SystemExit(f"{lang}: {res.summary()}")
        after = [r for r in m.get_all(lang) if r.file in (FILE_MEMORY, FILE_LEARNINGS)]
        text = "\n".join(r.content for r in after)
        archive_path = Path(tmp) / lang / "archive.md"
        archive = archive_path.read_text(encoding="utf-8") if archive_path.exists() else ""
        if show:
            print(f"--- {lang}, {days} days old:", file=sys.stderr)
            for r in after:
                print("  " + r.content, file=sys.stderr)
    facts = [f for g in groups for f in g["facts"]]
    kept = [f for f in facts if f.casefold() in text.casefold()]
    missing = [f for f in facts if f.casefold() not in (text + archive).casefold()]
    before_chars = sum(len(t) for g in groups for t in g["memories"])
    after_chars = sum(len(r.content) for r in after)
    return {"language": lang, "days_unused": days, "memories_before": len(rows), "memories_after": len(after),
            "chars_before": before_chars, "chars_after": after_chars, "ratio": round(after_chars / before_chars, 3),
            "facts": len(facts), "facts_in_memories": len(kept), "facts_in_memories_or_archive": len(facts) - len(missing),
            "missing": missing}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--show", action="store_true", help="print the memories after compression on stderr")
    args = ap.parse_args()
    groups = json.loads(args.data.read_text(encoding="utf-8"))["groups"]
    out = []
    for lang in ("en", "zh"):
        mine = [g for g in groups if g["lang"] == lang]
        for stage, (days, then_hard) in STAGES.items():
            out.append({"stage": stage, **run(mine, lang, days, then_hard, args.show)})
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    print("| language | stage | memories | characters | after / before | facts in the memories | "
          "facts in the memories or archive.md |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        print(f"| {r['language']} | {r['stage']} | {r['memories_before']} → {r['memories_after']} | "
              f"{r['chars_before']} → {r['chars_after']} | {r['ratio']:.2f} | {r['facts_in_memories']} / {r['facts']} | "
              f"{r['facts_in_memories_or_archive']} / {r['facts']} |")
    return 1 if any(r["missing"] for r in out) else 0


if __name__ == "__main__":
    raise SystemExit(main())
