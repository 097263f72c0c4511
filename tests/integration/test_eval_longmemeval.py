"""``memfold eval longmemeval`` on a tiny synthetic LongMemEval file, metrics checked by hand; the
on-disk vector cache gives the same report and embeds nothing the second time."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memfold.errors import InvalidInputError
from memfold.eval.longmemeval import run_longmemeval
from memfold.eval.vector_cache import CachedEmbedder

from ..conftest import run_cli
from ..support.hash_embedder import HashEmbedder

FILLER = "Can you suggest a recipe for a quick weeknight dinner?"
LONG = " ".join(f"Row {i} of the quarterly inventory spreadsheet lists pallets of ceramic tiles."
               for i in range(400))  # over 20,000 characters


def _session(user: str, has_answer: bool = False) -> list[dict]:
    turn: dict = {"role": "user", "content": user}
    if has_answer:
        turn["has_answer"] = True
    return [turn, {"role": "assistant", "content": "Sure, here is a thought about that."}]


def _file(tmp_path: Path, gz: bool = True) -> Path:
    q1 = {  # single gold turn, in the second session at index 2 -> id s2_3
        "question_id": "q1", "question_type": "single-session-user",
        "question": "What breed is my dog Biscuit?", "answer": "golden retriever", "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s1", "s2"], "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:00"],
        "haystack_sessions": [
            _session(FILLER) + _session(LONG),
            _session("I went bowling with my cousins last weekend.")
            + _session("My dog Biscuit is a golden retriever puppy.", True),
        ],
    }
    q2 = {  # two gold turns in two sessions; the question names only one of them in words
        "question_id": "q2", "question_type": "multi-session",
        "question": "How many violin lessons and piano lessons did I book?", "answer": "2",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["a", "b", "c"],
        "haystack_dates": ["2023/05/01 (Mon) 08:00", "2023/05/02 (Tue) 08:00", "2023/05/03 (Wed) 08:00"],
        "haystack_sessions": [
            _session("I booked violin lessons at the conservatory.", True),
            _session(FILLER),
            _session("I also booked piano lessons for Tuesdays.", True),
        ],
    }
    data = [q1, q2]
    if gz:
        path = tmp_path / "tiny_lme.json.gz"
        path.write_bytes(gzip.compress(json.dumps(data).encode("utf-8")))
    else:
        path = tmp_path / "tiny_lme.json"
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_longmemeval_protocol_by_hand(tmp_path: Path, embedder) -> None:
    report = run_longmemeval(_file(tmp_path), (1, 2, 5), baselines=True, embedder=embedder, infer=False)
    assert report["n_questions"] == 2 and report["questions"] == 2
    # q1: its one gold turn is the top hit; q2: both gold turns are in its 4-turn corpus, so @5 has both
    by_type = report["by_type"]
    assert by_type["single-session-user"]["recall_all"] == {"1": 1.0, "2": 1.0, "5": 1.0}
    assert by_type["multi-session"]["recall_all"]["1"] == 0.0  # one memory cannot hold two gold turns
    assert by_type["multi-session"]["recall_any"]["1"] == 1.0
    assert by_type["multi-session"]["recall_all"]["5"] == 1.0
    assert report["recall_all"]["5"] == 1.0 and report["recall_any"]["1"] == 1.0
    # the turn over 20,000 characters was stored (in pieces, one turn id), not refused
    assert report["memories"] == 5 + 3 and report["turns"] == 14
    assert set(report["baselines"]) == {"keyword", "vector"}
    assert report["ingest_seconds"] <= report["seconds"]


def test_long_turn_is_found_by_its_id(tmp_path: Path, embedder) -> None:
    data = json.loads(gzip.decompress(_file(tmp_path).read_bytes()))
    data[0]["haystack_sessions"][0][2]["has_answer"] = True  # the 34,000-character turn is gold now
    data[0]["question"] = "Which spreadsheet lists pallets of ceramic tiles?"
    path = tmp_path / "long.json"
    path.write_text(json.dumps(data[:1]), encoding="utf-8")
    report = run_longmemeval(path, (1,), embedder=embedder, infer=False)
    assert report["by_type"]["single-session-user"]["n_questions"] == 1
    assert report["recall_any"]["1"] == 1.0  # the turn "s1_3" came back, though stored in pieces


def test_vector_cache_same_report_nothing_embedded_twice(tmp_path: Path) -> None:
    path = _file(tmp_path, gz=False)
    folder = tmp_path / "vc"
    first = run_longmemeval(path, (1, 5), embedder=HashEmbedder(), infer=False, vector_cache=folder)
    cache = CachedEmbedder(HashEmbedder(), folder)
    stored = cache.count()
    assert stored > 0
    texts = ["My dog Biscuit is a golden retriever puppy."]
    assert cache.embed(texts).shape == (1, 256) and cache.misses == 1  # a new text is embedded and kept
    assert cache.embed(texts).shape == (1, 256) and cache.hits == 1 and cache.misses == 1
    cache.close()
    second = run_longmemeval(path, (1, 5), embedder=HashEmbedder(), infer=False, vector_cache=folder)
    for key in ("recall_all", "recall_any"):
        assert first[key] == second[key]
    # memories of equal score are ordered by their (new, random) ids: at k = 1 which of two tied
    # turns comes first, and so the tokens returned, may differ between two ingests; at k = 5 all are in
    assert first["tokens"]["5"] == second["tokens"]["5"]
    assert {t: v["recall_all"] for t, v in first["by_type"].items()} == \
        {t: v["recall_all"] for t, v in second["by_type"].items()}
    again = CachedEmbedder(HashEmbedder(), folder)
    assert again.count() == stored + 1  # the second run found every vector it needed
    again.close()


def test_vector_cache_is_bounded(tmp_path: Path) -> None:
    cache = CachedEmbedder(HashEmbedder(), tmp_path / "vc", max_entries=3)
    cache.embed([f"text number {i}" for i in range(5)])
    cache.embed(["one more"])
    assert cache.count() == 3
    cache.close()


def test_bad_files_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        run_longmemeval(tmp_path / "nope.json.gz")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "x"}]), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="LongMemEval format"):
        run_longmemeval(bad)
    data = json.loads(gzip.decompress(_file(tmp_path).read_bytes()))
    data[0]["haystack_dates"][0] = "yesterday"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="unrecognised LongMemEval date"):
        run_longmemeval(bad, embedder=HashEmbedder())


def test_cli_table_and_json(tmp_path: Path) -> None:
    path = _file(tmp_path)
    res = run_cli(tmp_path / "ws", "eval", "longmemeval", str(path), "--k", "1,5", "--json", "--no-extract",
                  "--vector-cache", str(tmp_path / "vc"))
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["recall_all"]["5"] == 1.0 and report["infer"] is False
    assert (tmp_path / "vc" / "vectors.sqlite").exists()
    res = run_cli(tmp_path / "ws2", "eval", "longmemeval", str(path), "--limit", "1", env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "all@10" in res.stdout and "single-session-user" in res.stdout and "any@20" in res.stdout
    res = run_cli(tmp_path / "ws3", "eval", "longmemeval", str(tmp_path / "nope.json"))
    assert res.returncode == 1 and "does not exist" in res.stderr


def test_a_turn_quotes_only_the_start_of_a_long_reply(tmp_path: Path) -> None:
    from memfold import Memory
    from memfold.engine.write.write import QUOTED_REPLY_CHARS

    reply = "Here are ten ideas for your garden. " + " ".join(f"Idea {i}: plant more herbs." for i in range(300))
    with Memory(root=tmp_path / "ws", embedder=HashEmbedder()) as m:
        m.add([{"role": "assistant", "content": reply},
               {"role": "user", "content": "Thanks! My basil died last week though.", "turn_id": "t2"},
               {"role": "user", "content": "And my tomatoes are fine.", "turn_id": "t3"}], "u", infer=False)
        turns = {r.source_ids[0]: r for r in m.get_all("u")}
    ctx = turns["t2"].context
    assert ctx.split(" ", 3)[3].startswith("Here are ten ideas for your garden.")
    assert len(ctx) < QUOTED_REPLY_CHARS + 40 and "Idea 299" not in ctx
    assert "Thanks! My basil died last week though." in turns["t3"].context  # a user turn is quoted whole


def test_questions_are_asked_at_their_question_date(tmp_path: Path) -> None:
    """"two weeks ago" is measured from the question's date (2023), not the clock: with the time
    bonus on, the turn of the session two weeks before the question comes first."""
    q = {"question_id": "qt", "question_type": "temporal-reasoning", "question_date": "2023/06/15 (Thu) 10:00",
         "question": "Which museum did I visit two weeks ago?", "answer": "the Louvre",
         "haystack_session_ids": ["early", "gold"],
         "haystack_dates": ["2023/03/01 (Wed) 09:00", "2023/06/01 (Thu) 09:00"],
         "haystack_sessions": [[{"role": "user", "content": "I visited the science museum, a great museum visit"}],
                               [{"role": "user", "content": "Spent the day at the Louvre museum", "has_answer": True}]]}
    path = tmp_path / "time.json"
    path.write_text(json.dumps([q]), encoding="utf-8")
    on = run_longmemeval(path, (1,), embedder=HashEmbedder(), infer=False, policy={"score_bonus_time": 0.8, "min_score": 0.0})
    off = run_longmemeval(path, (1,), embedder=HashEmbedder(), infer=False, policy={"score_bonus_time": 0.0, "min_score": 0.0})
    assert (on["recall_all"]["1"], off["recall_all"]["1"]) == (1.0, 0.0)


def test_per_question_outcomes(tmp_path: Path, embedder) -> None:
    """``--per-question``: each question's gold turns and the ones missing at each k, through the CLI
    (JSON and table) and the function; the summary is unchanged by it"""
    path = _file(tmp_path)
    report = run_longmemeval(path, (1, 5), embedder=embedder, infer=False, questions=True)
    rows = {q["id"]: q for q in report["per_question"]}
    assert set(rows) == {"q1", "q2"} and rows["q2"]["type"] == "multi-session"
    assert rows["q1"]["gold"] == ["s2_3"] and rows["q1"]["missing"] == {"1": [], "5": []}
    assert rows["q1"]["all"] == {"1": 1, "5": 1}
    assert sorted(rows["q2"]["gold"]) == ["a_1", "c_1"]
    assert len(rows["q2"]["missing"]["1"]) == 1 and rows["q2"]["missing"]["5"] == []  # one memory: one turn
    assert rows["q2"]["all"] == {"1": 0, "5": 1}
    for k in ("1", "5"):  # the list agrees with the summary
        assert report["recall_all"][k] == sum(q["all"][k] for q in rows.values()) / 2
    assert "per_question" not in run_longmemeval(path, (1, 5), embedder=embedder, infer=False)
    res = run_cli(tmp_path / "ws", "eval", "longmemeval", str(path), "--k", "1", "--json", "--no-extract",
                  "--per-question")
    assert res.returncode == 0, res.stderr
    cli = {q["id"]: q for q in json.loads(res.stdout)["per_question"]}
    assert cli["q2"]["all"] == {"1": 0} and cli["q1"]["missing"] == {"1": []}
    res = run_cli(tmp_path / "ws2", "eval", "longmemeval", str(path), "--k", "1", "--no-extract", "--per-question",
                  env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    assert "missed at k = 1 (memfold): 1 of 2 questions" in res.stdout
    assert "q2 (multi-session)" in res.stdout and "q1 (" not in res.stdout


def _crowded(tmp_path: Path) -> Path:
    """One question, two gold turns: a_1 (its words) and c_1 (none of them); session a's follow-ups and
    an asking turn of session b hold the question's words and crowd c_1 out."""
    def turn(role: str, content: str, gold: bool = False) -> dict:
        return {"role": role, "content": content, **({"has_answer": True} if gold else {})}
    reply = turn("assistant", "Sure, here is a thought about that.")
    q = {"question_id": "qm", "question_type": "multi-session", "question": "How many violin lessons did I book?",
         "answer": "2", "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ["a", "b", "c"],
         "haystack_dates": ["2023/05/01 (Mon) 08:00", "2023/05/02 (Tue) 08:00", "2023/05/03 (Wed) 08:00"],
         "haystack_sessions": [
             [turn("user", "I booked violin lessons at the conservatory.", True), reply,
              turn("user", "Which violin lessons book do you like for violin lessons?"), reply,
              turn("user", "Violin lessons are fun, I love violin lessons and violin practice.")],
             [turn("user", "Can you suggest violin lessons for a violin beginner?"), reply],
             [turn("user", "My cello teacher starts with me on Monday, a second instrument.", True), reply]]}
    path = tmp_path / "crowded.json"
    path.write_text(json.dumps([q]), encoding="utf-8")
    return path


def test_per_question_places_of_missed_gold_turns(tmp_path: Path) -> None:
    """``--per-question`` says where a missed gold turn is among the search's scored candidates and
    what sits above it (worked out by hand for this tiny haystack: a_1 first, then session a's two
    follow-ups and session b's asking turn, then c_1 fifth), and sums that up over the missed questions."""
    path = _crowded(tmp_path)
    report = run_longmemeval(path, (3,), embedder=HashEmbedder(), infer=False, questions=True,
                             policy={"min_score": 0.0})
    row = report["per_question"][0]
    assert row["missing"] == {"3": ["c_1"]}
    assert row["places"]["3"] == {"place": {"c_1": 5}, "to_free": 2, "above": {
        "same_session_turn": 2, "same_session_extract": 0, "other_turn": 1, "other_extract": 0, "asks": 2}}
    # removing session a's two follow-ups (or the two asking turns) would bring c_1 to place 3; session b's one turn would not
    assert report["misses"]["3"] == {"missed": 1, "not_a_candidate": 0, "whole_without": {
        "same_session_turn": 1, "same_session_extract": 0, "other_turn": 0, "other_extract": 0, "asks": 1,
        "same_session": 1, "other": 0}}
    # with one candidate per side (k = 1, no minimum pool) c_1 is not a candidate at all
    small = run_longmemeval(path, (1,), embedder=HashEmbedder(), infer=False, questions=True,
                            policy={"min_score": 0.0, "candidate_pool_min": 1})
    assert small["per_question"][0]["places"]["1"] == {"place": {"a_1": 2, "c_1": None}}
    assert small["misses"]["1"]["not_a_candidate"] == 1
    res = run_cli(tmp_path / "ws", "eval", "longmemeval", str(path), "--k", "3", "--no-extract", "--per-question",
                  env={"COLUMNS": "250"})
    assert res.returncode == 0, res.stderr
    assert "c_1 (place " in res.stdout and "with a gold turn that is not a candidate" in res.stdout


def test_search_pool_is_the_ranked_candidates(tmp_path: Path) -> None:
    """``Retriever.search(pool=...)``: every scored candidate in rank order; the hits are its first
    ``limit`` when no relevance floor cuts; without it the hits are the same."""
    from memfold import Memory

    with Memory(root=tmp_path / "ws", embedder=HashEmbedder(), policy={"min_score": 0.0}) as m:
        m.add([{"role": "user", "content": c, "turn_id": f"t{i}"} for i, c in enumerate(
            ["I booked violin lessons.", "Violin lessons are fun.", "My cello teacher is kind.",
             "Can you suggest violin books?", "The weather is grey today."])], "u", infer=False)
        pool: list = []
        hits = m.retriever.search("violin lessons", "u", limit=2, record_access=False, pool=pool)
        assert [h.record.id for h in hits] == [h.record.id for h in pool[:2]]
        assert len(pool) == 5 and [h.score for h in pool] == sorted((h.score for h in pool), reverse=True)
        assert [h.record.id for h in m.retriever.search("violin lessons", "u", limit=2, record_access=False)] == \
            [h.record.id for h in hits]
