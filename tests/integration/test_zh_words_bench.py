"""``benchmarks/zh_words.py`` (issue 16, session 8): its neutral arm is exactly today's terms, its
word arms give jieba's words, and a variant reaches both what the search asks and what the index
stores (else the screen would measure bigrams under another name)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from memfold.text import terms as T

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SRC = Path(__file__).resolve().parents[2] / "src"

TEXTS = [
    "元旦晚会我要表演魔术！你知道吗？学校食堂的草莓蛋糕",
    "我 的 花。他们去了北京大学，用Python写代码",
    "東京に行きました 서울에 갔어요 and we moved houses",
    "Caroline went hiking last weekend",
]


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("zh_words")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_neutral_arm_is_todays_terms_and_the_word_arms_segment() -> None:
    bench = _bench()
    seg = bench._segmenter()
    bench._load(seg)
    bigrams = bench.make_terms("bigrams", T.terms, seg)
    for text in TEXTS:
        for query in (False, True):
            assert bigrams(text, query=query) == T.terms(text, query=query)
    words = bench.make_terms("words", T.terms, seg)
    got = words(TEXTS[0])
    assert {"元旦晚会", "表演", "魔术", "学校食堂", "草莓", "蛋糕"} <= set(got)
    assert "莓蛋" not in got and "演魔" not in got  # no bigram across a word boundary
    assert "你" in got and "你" not in words(TEXTS[0], query=True)  # a function word is not asked
    search = bench.make_terms("search-multi-stop", T.terms, seg)(TEXTS[1] + "我们的学校食堂")
    assert {"北京", "大学", "北京大学", "学校", "食堂", "学校食堂", "python"} <= set(search)
    assert "我们" not in search and "的" not in search  # stop word; one-character word
    # text that is not Han is left to today's terms
    assert words(TEXTS[2]) == T.terms(TEXTS[2]) and words(TEXTS[3]) == T.terms(TEXTS[3])


def _folder(root: Path) -> Path:
    zh = root / "madial" / "zh"
    zh.mkdir(parents=True)
    memories = {"1": "Bart在学校食堂吃到了草莓蛋糕，感到非常开心。", "2": "Bart在公园放风筝。", "3": "Bart和爸爸下国际象棋赢了。"}
    rows = [{mid: {"time": "2023-05-01", "scene": "", "emotion": "", "event": text, "user-id": 1}}
            for mid, text in memories.items()]
    (zh / "memory.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    dialogue = ["<BOD>\n", '<Bart>:"今天学校食堂的蛋糕真好吃！"\n', '<Assistant>:"是什么蛋糕呀？"\n', '<Bart>:"草莓蛋糕！"\n',
                "<EOD>\n"]
    (zh / "dialogue_dev.jsonl").write_text(json.dumps({"dialogue": dialogue, "test-turn": [3], "relevant-id": [1],
                                                       "user-id": 1}, ensure_ascii=False) + "\n", encoding="utf-8")
    return root


def test_a_variant_reaches_the_search_and_the_index(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "zh_words.py"), "--data", str(_folder(tmp_path / "data")),
                           "--variants", "bigrams,words", "--out", str(out)],
                          capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert done.returncode == 0, done.stderr
    assert "cross_validated: madial-zh 1.0000" in done.stdout and "survives=False" in done.stdout
    runs = json.loads(out.read_text(encoding="utf-8"))["runs"]
    before, after = runs["bigrams"]["sets"]["madial-zh"], runs["words"]["sets"]["madial-zh"]
    assert before["scores"] == after["scores"] == [1.0]
    assert {"校食", "食堂"} <= set(before["example"]["query_terms"]) <= set(T.terms(
        '<BOD>\n<Bart>:"今天学校食堂的蛋糕真好吃！"\n<Assistant>:"是什么蛋糕呀？"\n', query=True))
    assert "学校食堂" in after["example"]["query_terms"] and "校食" not in after["example"]["query_terms"]
    assert {"学校食堂", "草莓", "蛋糕"} <= set(after["example"]["top_hit_terms"])  # what the index stored
    assert "莓蛋" in before["example"]["top_hit_terms"] and "莓蛋" not in after["example"]["top_hit_terms"]
