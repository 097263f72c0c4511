"""A turn and the memory extracted from it are the same memory: a search shows it once, the
extracted typed memory carrying both records' turn ids, and still returns ``limit`` results
(with the relevance floor off: the unrelated fillers would otherwise be left out, which
tests/integration/test_relevance_floor.py covers)."""

from __future__ import annotations

import pytest

from memfold import Memory
from memfold.models import EPISODIC


@pytest.mark.parametrize("turn, query, others", [
    ("I like sushi", "sushi", ["I went hiking with Tom", "My sister likes sushi rolls", "We bought a red car"]),
    ("我喜欢吃寿司", "寿司", ["我和汤姆去爬山了", "我妹妹也喜欢寿司卷", "我们买了一辆红色的车"]),
])
def test_a_turn_and_its_extracted_memory_count_once(root, embedder, turn: str, query: str, others: list[str]) -> None:
    mem = Memory(root=root, embedder=embedder, policy={"min_score": 0})
    mem.add([{"role": "user", "content": turn, "turn_id": "t1"}], "u")
    for i, text in enumerate(others):
        mem.add([{"role": "user", "content": text, "turn_id": f"o{i}"}], "u", infer=False)
    both = [r for r in mem.index.list_records("u") if r.content == turn]
    assert {r.file == EPISODIC for r in both} == {True, False}  # stored twice: the turn and the memory
    assert [r.content for r in mem.get_all("u", limit=100)].count(turn) == 1  # listed once
    hits = mem.search(query, "u", limit=3, record_access=False)
    assert len(hits) == 3
    same = [h for h in hits if h.record.content == turn]
    assert len(same) == 1 and same[0].record.file != EPISODIC
    assert same[0].record.source_ids == ("t1",)
    assert len({h.record.id for h in hits}) == 3
    assert hits == sorted(hits, key=lambda h: -h.score)
    mem.close()


def test_a_turn_folded_into_its_extract_is_judged_by_the_turns_words(root, embedder) -> None:
    """The relevance floor judges a turn and the memory extracted from it together: when the query's
    words are in the part of the turn the extract left out, the pair is still found (before, the
    floor measured the extract alone and dropped the hit that the turn had earned)."""
    turn = ("I'm planning a night out with friends this weekend and I need some fashion advice. I was thinking of "
            "wearing my new Jimmy Choo heels that I got at the outlet mall for $200 - any outfit suggestions?")
    mem = Memory(root=root, embedder=embedder)  # the default floor
    mem.add([{"role": "user", "content": turn, "turn_id": "t1"}], "u")
    for i, text in enumerate(["I went hiking with Tom", "We bought a red car", "My sister likes sushi rolls"]):
        mem.add([{"role": "user", "content": text, "turn_id": f"o{i}"}], "u", infer=False)
    extracts = [r for r in mem.get_all("u", limit=100) if r.file != EPISODIC]
    assert extracts and all("Jimmy Choo" not in r.content for r in extracts)  # the extract lacks the words
    hits = mem.search("How much did I save on the Jimmy Choo heels?", "u", limit=3, record_access=False)
    assert hits and hits[0].record.source_ids == ("t1",)
    assert hits[0].relevance >= mem.policy("u").min_score
    mem.close()


@pytest.mark.parametrize("turn, other, query", [
    ("I usually wake up at 7:15 on weekdays. On weekends I always wake up at 8.",
     "My brother Tom wakes up at 6 to go running", "when do I wake up"),
    ("我每天早上七点起床，我周末一般九点起床。", "我弟弟每天六点起床去跑步", "起床"),
])
def test_one_turn_takes_one_place_before_the_other_turns(root, embedder, turn: str, other: str, query: str) -> None:
    """Two memories the rules took from one turn do not fill the first places alone: the second
    follows the results from other turns, and is still returned when there is room."""
    mem = Memory(root=root, embedder=embedder, policy={"min_score": 0})
    mem.add([{"role": "user", "content": turn, "turn_id": "t1"}], "u")
    mem.add([{"role": "user", "content": other, "turn_id": "t2"}], "u", infer=False)
    taken = [r for r in mem.index.list_records("u") if r.file != EPISODIC and r.source_ids == ("t1",)]
    assert len(taken) == 2  # the turn gave two memories
    top = mem.search(query, "u", limit=2, record_access=False)
    assert [h.record.source_ids[0] for h in top] == ["t1", "t2"]
    three = mem.search(query, "u", limit=3, record_access=False)
    assert [h.record.source_ids[0] for h in three] == ["t1", "t2", "t1"]
    assert {h.record.id for h in three if h.record.source_ids == ("t1",)} == {r.id for r in taken}
    assert three == sorted(three, key=lambda h: -h.score)
    mem.close()
