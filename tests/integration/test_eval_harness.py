"""The eval harness on tiny synthetic LoCoMo and MADial files, metrics checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold.errors import InvalidInputError
from memfold.eval.locomo import run_locomo
from memfold.eval.madial import run_madial
from memfold.text.tokens import count_many

from ..conftest import run_cli

TURNS = [  # one turn per session, so no turn is indexed with a neighbour
    ("Avery", "I adopted a golden retriever puppy called Biscuit."),
    ("Blake", "My violin recital happens at the conservatory hall."),
    ("Avery", "We planted tomatoes and basil along the garden fence."),
    ("Blake", "The bakery downtown sells flaky croissants every morning."),
]


def _locomo(tmp_path: Path) -> Path:
    conv: dict = {"speaker_a": "Avery", "speaker_b": "Blake"}
    for n, (who, text) in enumerate(TURNS, 1):
        conv[f"session_{n}"] = [{"speaker": who, "dia_id": f"D{n}:1", "text": text}]
        conv[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
    qa = [
        {"question": "What is the golden retriever puppy called?", "answer": "Biscuit", "evidence": ["D1:1"],
         "category": 4},
        {"question": "Which tomatoes grow in the garden and where are croissants sold?", "answer": "x",
         "evidence": ["D3:1; D4:1"], "category": 1},
        {"question": "Where is the violin recital?", "answer": "hall", "evidence": ["D2:1", "D9:9"], "category": 2},
        {"question": "What did the puppy play at the violin recital?", "evidence": ["D2:1"], "category": 5},
        {"question": "Is there anything else?", "answer": "no", "evidence": [], "category": 3},
    ]
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-t", "conversation": conv, "qa": qa}]), encoding="utf-8")
    return path


def test_locomo_protocol_by_hand(tmp_path: Path, embedder) -> None:
    # the relevance floor off: k = 5 must return the whole corpus, unrelated turns included
    report = run_locomo(_locomo(tmp_path), (1, 5), baselines=True, embedder=embedder, infer=False,
                        policy={"min_score": 0})
    # cats 1-4: q1 R@1 = 1; q2 has two gold turns, one ranked first: R@1 = 1/2; q3 (D9:9 dropped) R@1 = 1
    assert report["n_questions"] == 3
    assert report["recall"] == {"1": round((1 + 0.5 + 1) / 3, 4), "5": 1.0}
    assert report["hit"] == {"1": 1.0, "5": 1.0}
    all_tokens = sum(count_many([t for _, t in TURNS]))  # k=5 returns the whole 4-turn corpus
    assert report["tokens"]["5"] == float(all_tokens)
    assert report["by_category"]["5"]["n_questions"] == 1  # adversarial reported apart
    assert set(report["by_category"]) == {"1", "2", "4", "5"}  # the question without evidence is skipped
    assert report["memories"] == 4 and report["conversations"] == 1
    kw = report["baselines"]["keyword"]
    assert kw["recall"]["1"] == round((1 + 0.5 + 1) / 3, 4)
    assert set(report["baselines"]) == {"keyword", "vector"}
    json.dumps(report)


def _madial(tmp_path: Path) -> Path:
    zh, en = tmp_path / "madial" / "zh", tmp_path / "madial" / "en"
    zh.mkdir(parents=True)
    en.mkdir(parents=True)
    mems = [("1", 1, "活动类", "开心", "Bart在圣诞节晚会上跳舞，感觉非常开心。", "Bart danced at the Christmas party."),
            ("2", 1, "喜好类", "开心", "Bart在冰淇淋店尝试了芒果口味的冰淇淋。", "Bart tried mango ice cream at the shop."),
            ("3", 1, "其他类", "失望", "Bart的风筝挂在了大树上，感到很失望。", "Bart's kite got stuck in a tall tree."),
            ("4", 2, "活动类", "开心", "Lisa和家人一起装饰圣诞树。", "Lisa decorated the Christmas tree with family.")]
    zh_lines, en_lines = [], []
    for mid, user, scene, emo, zh_event, en_event in mems:
        zh_lines.append({mid: {"time": "2023-12-25", "scene": scene, "emotion": emo, "event": zh_event,
                               "user-id": user, "id": mid}})
        en_lines.append({mid: {"time": "2023-12-25", "scene": "Activity", "emotion": "Happy", "event": en_event}})
    (zh / "memory.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in zh_lines), encoding="utf-8")
    (en / "memory.jsonl").write_text("\n".join(json.dumps(x) for x in en_lines), encoding="utf-8")
    zh_d = [{"dialogue": ["<BOD>\n", "<Bart>:\"我想去吃芒果冰淇淋！\"\n", "<Assistant>:\"好呀\"\n"], "test-turn": [2],
             "relevant-id": [2, 99], "user-id": 1, "id": 0},
            {"dialogue": ["<BOD>\n", "<Lisa>:\"今年我们还要装饰圣诞树吗？\"\n", "<Assistant>:\"当然\"\n"], "test-turn": [2],
             "relevant-id": [4], "user-id": 2, "id": 1}]
    en_d = [{"dialogue": ["<BOD>\n", "<Bart>: \"Can we get mango ice cream again?\"\n"], "test-turn": [2],
             "relevant-id": [2, 3], "user-id": 1}]
    (zh / "dialogue_dev.jsonl").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in zh_d), encoding="utf-8")
    (en / "dialogue_dev.jsonl").write_text("\n".join(json.dumps(x) for x in en_d), encoding="utf-8")
    return tmp_path / "madial"


def test_madial_protocol_by_hand(tmp_path: Path, embedder) -> None:
    base = _madial(tmp_path)
    zh = run_madial(base / "zh", (1, 3), baselines=True, embedder=embedder, infer=False)
    # gold 99 does not exist; user 2's corpus is one memory, so both dialogues hit at 1
    assert zh["n_questions"] == 2 and zh["users"] == 2 and zh["memories"] == 4
    assert zh["recall"] == {"1": 1.0, "3": 1.0}
    # English memories take their user from ../zh; gold {2, 3}: one at k=1, both among user 1's three at k=3
    en = run_madial(base / "en", (1, 3), embedder=embedder, infer=False)
    assert en["recall"] == {"1": 0.5, "3": 1.0} and en["hit"] == {"1": 1.0, "3": 1.0}


def test_bad_input_is_named(tmp_path: Path, embedder) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        run_locomo(tmp_path / "missing.json", embedder=embedder)
    wrong = tmp_path / "messages.json"
    wrong.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="LoCoMo format"):
        run_locomo(wrong, embedder=embedder)
    with pytest.raises(InvalidInputError, match="memory.jsonl"):
        run_madial(tmp_path, embedder=embedder)
    with pytest.raises(InvalidInputError, match="does not exist"):
        run_madial(tmp_path / "nope", embedder=embedder)
    lone = tmp_path / "lone" / "en"
    lone.mkdir(parents=True)
    (lone / "memory.jsonl").write_text(json.dumps({"1": {"time": "", "scene": "a", "emotion": "b", "event": "c"}}))
    (lone / "dialogue_dev.jsonl").write_text("")
    with pytest.raises(InvalidInputError, match="no user-id"):
        run_madial(lone, embedder=embedder)


def test_madial_per_question(tmp_path: Path, embedder) -> None:
    """``--per-question``: each dialogue's gold ids and the ones missing at each k, through the function
    and the CLI (JSON and table); the summary is unchanged by it."""
    base = _madial(tmp_path)
    report = run_madial(base / "en", (1, 3), embedder=embedder, infer=False, questions=True)
    (row,) = report["per_question"]
    assert row["id"] == "dialogue-0" and row["gold"] == ["2", "3"]
    assert row["last_line"] == '<Bart>: "Can we get mango ice cream again?"'
    assert len(row["missing"]["1"]) == 1 and row["missing"]["3"] == []  # one of two at k = 1, both by 3
    assert row["recall"] == {"1": 0.5, "3": 1.0} == report["recall"]
    assert "per_question" not in run_madial(base / "en", (1, 3), embedder=embedder, infer=False)
    res = run_cli(tmp_path / "ws", "eval", "madial", str(base / "zh"), "--k", "1", "--json", "--no-extract",
                  "--per-question")
    assert res.returncode == 0, res.stderr
    rows = {q["id"]: q for q in json.loads(res.stdout)["per_question"]}
    assert rows["dialogue-0"]["gold"] == ["2"]  # 99 is no memory: left out, as in the summary
    assert rows["dialogue-0"]["missing"] == rows["dialogue-1"]["missing"] == {"1": []}
    res = run_cli(tmp_path / "ws2", "eval", "madial", str(base / "en"), "--k", "1", "--no-extract", "--per-question",
                  env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "missed at k = 1 (memfold): 1 of 1 dialogues" in res.stdout
    assert f"dialogue-0: {row['missing']['1'][0]} of 2 gold memories missing (R@1 0.50)" in res.stdout
