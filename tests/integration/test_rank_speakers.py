"""``query_speaker_mask`` (engine/read/rank_speakers.py): the vector side embeds a question with the
speakers it names replaced by "they", so the other speaker's turns that address them by name stop
outranking the speaker's own turns."""

from __future__ import annotations

from pathlib import Path

from memfold import Memory
from memfold.engine.read.rank_speakers import masked_query, may_name_someone, named_speakers
from memfold.models import MemoryRecord, MemoryType, utcnow
from memfold.text.terms import terms

# the vector side alone decides (no keyword part, no speaker bonus, no floor)
VECTOR_ONLY = {"fusion_keyword_weight": 0.0, "score_bonus_speaker": 0.0, "score_penalty_question": 0.0,
               "score_weight_time": 0.0, "score_weight_importance": 0.0, "score_weight_similarity": 1.0,
               "min_score": 0.0, "keyword_feedback_weight": 0.0}
TURNS = [("Jordan", "Morgan! Hey Morgan, good to see you, Morgan."),
         ("Morgan", "To unwind after work I paint watercolours by the lake."),
         ("Jordan", "I fixed the fence in the garden on Sunday."),
         ("Morgan", "The train was late again this morning.")]


def _ranking(root: Path, embedder, **policy) -> list[str]:
    with Memory(root=root, embedder=embedder, policy={**VECTOR_ONLY, **policy}) as m:
        for i, (who, text) in enumerate(TURNS):  # separate calls: no neighbouring turn in the context
            m.add([{"role": "user", "name": who, "content": text, "turn_id": f"D1:{i}"}], "c", infer=False)
        return [h.record.source_ids[0] for h in m.search("How does Morgan unwind?", "c", limit=4, record_access=False)]


def test_mask_moves_the_speakers_own_turn_up(tmp_path: Path, embedder) -> None:
    off = _ranking(tmp_path / "off", embedder, query_speaker_mask=0.0)
    assert off[0] == "D1:0"  # the greeting full of the name wins on the name alone
    on = _ranking(tmp_path / "on", embedder, query_speaker_mask=1.0)
    assert on[0] == "D1:1"  # masked: the question's meaning finds Morgan's own answer
    assert sorted(on) == sorted(off)
    assert _ranking(tmp_path / "default", embedder) == on  # on by default (cross-validated)


def _rec(speaker: str | None) -> MemoryRecord:
    now = utcnow()
    return MemoryRecord(id="x", user_id="u", memory_type=MemoryType.EVENT, content="hi", created_at=now,
                        updated_at=now, structured_data={"speaker": speaker} if speaker else {})


def test_named_speakers_and_masking() -> None:
    q = "What did Anna Lee and Bob's sister do? Ask bob."
    qset = set(terms(q, query=True))
    recs = [_rec("Bob"), _rec("Anna Lee"), _rec("Carol"), _rec(None), _rec("Bob")]
    assert named_speakers(recs, qset) == ["Anna Lee", "Bob"]  # Carol is not named; whole names only
    assert masked_query(q, ["Anna Lee", "Bob"]) == "What did they and they sister do? Ask they."
    assert masked_query("Bobby met Bob’s dog", ["Bob"]) == "Bobby met they dog"  # whole words only
    assert named_speakers([_rec("Anna Lee")], set(terms("Where is Anna?", query=True))) == []


def test_rows_are_read_early_only_when_a_name_may_be_asked_about() -> None:
    assert may_name_someone("What did Melanie paint?") and may_name_someone("Hello. Where did Jon go?")
    assert not may_name_someone("What did I say? Where is it.")  # sentence openers and "I" only
    assert not may_name_someone("what did melanie paint")
    assert not may_name_someone('<BOD>\n<Bart>:"hi there"')  # a line's label opens the line


def _extract_ranking(root: Path, embedder, **policy) -> list[tuple[str | None, str]]:
    """Two speakers each tell a fact the rules extract; asked about one of them by name, only the
    extracted memories ranked (turns left out), with their speaker."""
    with Memory(root=root, embedder=embedder, policy={**VECTOR_ONLY, **policy}) as m:
        m.add([{"role": "user", "name": "Jordan", "content": "Morgan! My favourite colour is green, Morgan.",
                "turn_id": "D1:0"},
               {"role": "user", "name": "Morgan", "content": "My favourite colour is blue.", "turn_id": "D1:1"},
               {"role": "user", "name": "Sam", "content": "My brother's name is Alex.", "turn_id": "D1:2"},
               {"role": "user", "name": "Sam", "content": "My favourite food is pasta.", "turn_id": "D1:3"}],
              "c")
        hits = m.search("What is Morgan's favourite colour?", "c", limit=2, include_episodic=False,
                        record_access=False)
        return [(h.record.structured_data.get("speaker"), h.record.source_ids[0]) for h in hits]


def test_an_extracted_memory_carries_its_turns_speaker(tmp_path: Path, embedder) -> None:
    """A memory the rules extract from a turn was said by that turn's speaker: it carries the name
    (``structured_data["speaker"]``), so the speaker bonus and the mask treat it as they treat the turn."""
    off = _extract_ranking(tmp_path / "off", embedder, score_bonus_speaker=0.0, query_speaker_mask=0.0)
    assert sorted(off) == [("Jordan", "D1:0"), ("Morgan", "D1:1")]  # each extract names who said it
    assert off[0] == ("Jordan", "D1:0")  # without the bonus the extract that holds the name wins
    on = _extract_ranking(tmp_path / "on", embedder, score_bonus_speaker=0.5, query_speaker_mask=0.0)
    assert on[0] == ("Morgan", "D1:1")  # the named speaker's own extract is lifted above it


# the same conversation in Chinese: names are not set off by spaces
TURNS_ZH = [("小红", "小明！小明，见到你真好，小明。"),
            ("小明", "下班后我会去湖边画水彩画放松。"),
            ("小红", "我星期天修好了花园的篱笆。"),
            ("小明", "今天早上火车又晚点了。")]


def _ranking_zh(root: Path, embedder, query: str, turns: list[tuple[str, str]], **policy) -> list[str]:
    with Memory(root=root, embedder=embedder, policy={**VECTOR_ONLY, **policy}) as m:
        for i, (who, text) in enumerate(turns):
            m.add([{"role": "user", "name": who, "content": text, "turn_id": f"D1:{i}"}], "c", infer=False)
        return [h.record.source_ids[0] for h in m.search(query, "c", limit=4, record_access=False)]


def test_a_name_in_chinese_text_is_masked(tmp_path: Path, embedder) -> None:
    latin = [(w if w != "小红" else "Jordan", t.replace("小明", "Morgan")) for w, t in TURNS_ZH]
    latin = [("Morgan" if w == "小明" else w, t) for w, t in latin]
    for n, (turns, query) in enumerate(((TURNS_ZH, "小明平时怎么放松？"), (latin, "Morgan平时怎么放松？"))):
        off = _ranking_zh(tmp_path / f"off{n}", embedder, query, turns, query_speaker_mask=0.0)
        on = _ranking_zh(tmp_path / f"on{n}", embedder, query, turns, query_speaker_mask=1.0)
        assert off[-1] != "D1:0" and on[-1] == "D1:0"  # masked: the greeting that only says the name falls last
        assert on[0] == "D1:1" and sorted(on) == sorted(off)


def test_names_in_cjk_text() -> None:
    assert masked_query("Melanie喜欢做什么？Melanie的狗呢", ["Melanie"]) == "TA喜欢做什么？TA的狗呢"
    assert masked_query("小明喜欢做什么？小明的狗呢", ["小明"]) == "TA喜欢做什么？TA的狗呢"
    assert masked_query("Where is Bob? 他说Bob去了北京", ["Bob"]) == "Where is they? 他说TA去了北京"
    assert masked_query("Bobby和Bob_2", ["Bob"]) == "Bobby和Bob_2"  # a Latin word still ends at Latin letters
    # 大为's bigram holds 为, a function character left out of a query's terms: found as written
    q = "大为喜欢什么？"
    assert named_speakers([_rec("大为"), _rec("小明")], set(terms(q, query=True)), q) == ["大为"]
    assert named_speakers([_rec("小明")], set(terms("小红呢", query=True)), "小红呢") == []
    assert may_name_someone("小明去哪了？")  # no capitals in CJK script: always looked for
