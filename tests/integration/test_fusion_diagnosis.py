"""``benchmarks/fusion_diagnosis.py`` on a handmade MADial-style folder: a gold memory the search
misses is reported with its rank on each side and whether it was a candidate, and the weight sweep
brackets the default fusion (keyword alone, vector alone, best fixed weight, per-question oracle)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from memfold.eval.harness import eval_memory
from memfold.eval.madial import ingest_madial

from ..support.hash_embedder import HashEmbedder

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

MEMORIES = {
    "1": "Tom played the violin at the school concert and felt proud.",
    "2": "Tom painted a dragon in art class.",
    "3": "Tom lost his red scarf on the bus.",
    "4": "Tom's grandmother baked apple pie on Sunday.",
    "5": "Tom swam across the lake with his cousin.",
    "6": "Tom built a kite from newspaper.",
    "7": "Tom read a comic about pirates.",
    "8": "Tom planted tomatoes in the garden.",
    "9": "Nervous before the spelling bee; he spelled every word right.",
    "10": "Quartz, zinc and xenon glow under ultraviolet lamps.",
}


def _folder(tmp_path: Path) -> Path:
    zh = tmp_path / "madial" / "zh"
    zh.mkdir(parents=True)
    rows = [{mid: {"time": "2023-05-01", "scene": "", "emotion": "", "event": text, "user-id": 1}}
            for mid, text in MEMORIES.items()]
    (zh / "memory.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    dialogue = ["<BOD>\n", '<Tom>:"I will play the violin at the school concert tonight!"\n',
                '<Assistant>:"Wonderful, you will do great."\n', '<Tom>:"My hands shake a little."\n',
                '<Assistant>:"Remember another time you were brave."\n', "<EOD>\n"]
    # gold: the concert (found by words and meaning) and the spelling test (no word in common)
    (zh / "dialogue_dev.jsonl").write_text(json.dumps({"dialogue": dialogue, "test-turn": [4],
                                                       "relevant-id": [1, 9], "user-id": 1}) + "\n", encoding="utf-8")
    return zh


def test_a_missed_gold_memory_is_located(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        diag = importlib.import_module("fusion_diagnosis")
    finally:
        sys.path.remove(str(BENCHMARKS))
    with eval_memory(None, embedder=HashEmbedder(), policy={"min_score": 0.0}) as mem:
        probes, _ = ingest_madial(mem, _folder(tmp_path), infer=False)
        report = diag.diagnose(mem, probes, 1)  # k = 1: the concert is found, the spelling test is not
    assert report["probes"] == 1 and report["gold"] == 2
    assert report["recall"] == 0.5 and report["missed"] == 1
    (miss,) = report["missed_memories"]
    assert miss["gold"] == "9"
    assert miss["keyword_rank"] is None  # it holds no query term
    assert isinstance(miss["vector_rank"], int) and miss["vector_rank"] > 1
    assert miss["where"] == "vector candidates only" and report["where"] == {"vector candidates only": 1}
    assert isinstance(miss["final_rank"], int) and miss["final_rank"] > 1
    # the rescoring is inert here (same importance and age), so plain fusion reproduces the search
    assert report["fusion_alone_at_default_weight"] == report["recall"]
    assert report["keyword_alone"] == report["vector_alone"] == 0.5  # the concert is first by words and by meaning
    assert report["fusion_at_best_fixed_weight"] == report["oracle_weight_per_query"] == 0.5
    assert report["median_rank_of_missed"]["keyword_rank"] is None
