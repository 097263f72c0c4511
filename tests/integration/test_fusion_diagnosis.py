"""``benchmarks/fusion_diagnosis.py`` on a handmade MADial-style folder: a gold memory the search
misses is reported with its rank on each side and whether it was a candidate, and the weight sweep
brackets the default fusion (keyword alone, vector alone, best fixed weight, per-question oracle).
The ceiling (session 8): the pool oracle counts only what k memories can hold, the gold out of both
sides' reach is counted, and LongMemEval is scored all-or-nothing (recall_all)."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memfold.eval.harness import eval_memory
from memfold.eval.longmemeval import ingest_longmemeval
from memfold.eval.madial import ingest_madial

from ..support.hash_embedder import HashEmbedder
from .test_eval_longmemeval import _file as lme_file

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


def _diag():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("fusion_diagnosis")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_a_missed_gold_memory_is_located(tmp_path: Path) -> None:
    diag = _diag()
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


def test_pool_oracle_counts_what_k_memories_hold(tmp_path: Path) -> None:
    diag = _diag()
    with eval_memory(None, embedder=HashEmbedder(), policy={"min_score": 0.0}) as mem:
        probes, _ = ingest_madial(mem, _folder(tmp_path), infer=False)
        at1 = diag.diagnose(mem, probes, 1)
        at2 = diag.diagnose(mem, probes, 2)
        narrow = diag.diagnose(mem, probes, 2, pools=(1, 20), unreachable=1)
    # every memory is in each side's top 20: one slot holds one of the two gold, two slots hold both
    assert at1["pool_oracle"] == {"20": 0.5, "50": 0.5, "100": 0.5, "200": 0.5}
    assert at2["pool_oracle"]["20"] == 1.0 and at2["final_list_oracle"] == {"20": 1.0, "50": 1.0}
    assert at1["unreachable_gold"] == 0 and at1["pool_oracle_inexact"] == 0
    # top 1 of each side is the concert only; the spelling test is below rank 1 on both sides
    assert narrow["pool_oracle"] == {"1": 0.5, "20": 1.0}
    assert narrow["unreachable_gold"] == 1 and narrow["gold_beyond_rank"] == {"keyword_rank": 1, "vector_rank": 1}
    ranks = {g["gold"]: g for g in at1["gold_memories"]}  # every gold, found or not
    assert set(ranks) == {"1", "9"} and ranks["1"]["found"] and not ranks["9"]["found"]
    assert ranks["1"]["keyword_rank"] == 1 and ranks["9"]["keyword_rank"] is None
    assert ranks["9"]["final_rank"] == at1["missed_memories"][0]["final_rank"]


def test_best_cover_picks_the_memory_holding_most_gold() -> None:
    diag = _diag()
    sources = {"a": ("g1",), "b": ("g2",), "c": ("g1", "g2"), "d": ("g3",), "x": ("other",)}
    assert diag.best_cover(["a", "b", "c", "x"], sources, ("g1", "g2"), 1) == ({"g1", "g2"}, True)
    assert diag.best_cover(["a", "b", "x"], sources, ("g1", "g2"), 1) == ({"g1"}, True)
    assert diag.best_cover(["a", "b", "c", "d"], sources, ("g1", "g2", "g3"), 2) == ({"g1", "g2", "g3"}, True)
    assert diag.best_cover(["x"], sources, ("g1",), 5) == (set(), True)


@contextmanager
def _longmemeval_memory(path: Path) -> Iterator[tuple[Any, list[Any]]]:
    """A LongMemEval file ingested into a fresh eval memory (hashed vectors, no relevance floor)."""
    with eval_memory(None, embedder=HashEmbedder(), policy={"min_score": 0.0}) as mem:
        probes, _, _ = ingest_longmemeval(mem, path, infer=False)
        yield mem, probes


def test_longmemeval_is_scored_all_or_nothing(tmp_path: Path) -> None:
    diag = _diag()
    with _longmemeval_memory(lme_file(tmp_path)) as (mem, probes):
        at1 = diag.diagnose(mem, probes, 1, "all")
        at2 = diag.diagnose(mem, probes, 2, "all")
    # q1 has one gold turn, q2 two: one memory cannot hold both, so q2 scores 0 at k = 1, not 0.5
    assert at1["metric"] == "all" and at1["probes"] == 2 and at1["gold"] == 3
    assert at1["pool_oracle"]["20"] == 0.5 and at2["pool_oracle"]["20"] == 1.0
    assert at1["recall"] <= 0.5 and at1["oracle_weight_per_query"] <= 0.5
    assert set(at1["by_category"]) == {"single-session-user", "multi-session"}
    assert at1["by_category"]["multi-session"]["pool_oracle"]["200"] == 0.0
    assert at2["by_category"]["multi-session"]["pool_oracle"]["200"] == 1.0
    assert sorted(g["gold"] for g in at1["gold_memories"]) == ["a_1", "c_1", "s2_3"]
    assert all(isinstance(g["keyword_rank"], int) for g in at1["gold_memories"])  # each shares a query word


def _two_way_file(tmp_path: Path) -> Path:
    """Two LongMemEval questions asking "zebra apple" of the same six turns: in one the gold turn is
    the long one holding the rare "zebra" (first by keywords), in the other the one-word "apple"
    (first by the hashed vectors): each needs the opposite fusion weight."""
    texts = ["A zebra walked past the old stone bridge near the quiet river at dawn while birds sang loudly overhead",
             "apple", "I ate an apple pie with cream at the fair", "My neighbour grows apple trees behind the fence",
             "Apple juice spilled across the kitchen table", "We bought apple cider at the farm market"]

    def question(qid: str, gold: int) -> dict:
        return {"question_id": qid, "question_type": "t", "question": "zebra apple",
                "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": [f"{qid}{i}" for i in range(6)],
                "haystack_dates": ["2023/05/01 (Mon) 08:00"] * 6,
                "haystack_sessions": [[{"role": "user", "content": t, **({"has_answer": True} if i == gold else {})}]
                                      for i, t in enumerate(texts)]}

    path = tmp_path / "two_way.json"
    path.write_text(json.dumps([question("long", 0), question("short", 1)]), encoding="utf-8")
    return path


def test_search_sweep_moves_the_real_search_and_restores_the_policy(tmp_path: Path) -> None:
    diag = _diag()
    with _longmemeval_memory(_two_way_file(tmp_path)) as (mem, probes):
        sweep = diag.search_sweep(mem, probes, 1, "all")
        report = diag.diagnose(mem, probes, 1, "all")
        assert mem.policy("default").fusion_keyword_weight == 0.5 and mem.policy("default").min_score == 0.0
    by_weight = sweep["by_weight"]
    assert by_weight["0.0"] == by_weight["1.0"] == 0.5  # vector alone finds one gold, keyword alone the other
    assert by_weight["0.5"] == report["recall"]  # the default weight is the real search
    assert sweep["at_best_fixed_weight"] == 0.5 and sweep["oracle_weight_per_query"] == 1.0
    assert report["pool_oracle"]["20"] == 1.0  # both gold are in the pool whatever the weight
    ranks = {g["probe"]: (g["keyword_rank"], g["vector_rank"]) for g in report["gold_memories"]}
    assert ranks["long"][0] == 1 and ranks["short"][1] == 1
