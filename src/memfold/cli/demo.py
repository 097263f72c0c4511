"""``memfold demo``: the main job, offline, on a bundled bilingual sample conversation."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from rich.console import Console
from rich.rule import Rule

DEMO_USER = "demo"
QUERIES = ["咖啡偏好是什么", "when is the Apollo project due", "what is my dog's name", "妈妈的生日礼物",
           "which language do I like for new projects"]


def run_demo(memory: Any, out: Console) -> None:
    messages = json.loads(resources.files("memfold").joinpath("data/demo_conversation.json").read_text("utf-8"))
    out.print(Rule("memfold demo"))
    out.print(f"workspace: {memory.settings.root}  (embedder: {memory.embedder.name}, index: "
              f"{memory.settings.index.backend}, no LLM)")
    memory.init(DEMO_USER, "zh")
    res = memory.add(messages, DEMO_USER)
    out.print(f"ingested {len(messages)} messages: {len(res.added)} memories added, "
              f"{len(res.merged)} already known, {len(res.refused)} refused")
    for reason in res.refused:
        out.print(f"  refused {reason}")
    for q in QUERIES:
        out.print(Rule(f"search: {q}"))
        for i, h in enumerate(memory.search(q, DEMO_USER, limit=3), 1):
            where = f", {h.record.file}" if h.record.file else ""
            out.print(f"  {i}. [{h.score:.3f}] ({h.record.kind}{where}) {h.record.content}",
                      markup=False, highlight=False)
    out.print(Rule(f"{memory.settings.root / DEMO_USER / 'MEMORY.md'}"))
    out.print(memory.show(DEMO_USER), markup=False, highlight=False)
