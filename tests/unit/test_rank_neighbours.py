"""The neighbour signal's pure parts: which words of a turn's context are the turn's own (its day,
its speaker) and which its neighbour's, and the order in which a turn matched only through its
neighbour's words never stands above a result holding the query's words itself."""

from __future__ import annotations

from datetime import datetime, timezone

from memfold.engine.read.rank_neighbours import (
    NEIGHBOUR_WEIGHT,
    answers_a_question,
    borrowed_only,
    counts,
    own_words_first,
    split_context,
    turn_relevance,
)
from memfold.models import MemoryRecord, MemoryType
from memfold.text.terms import terms

T = datetime(2024, 5, 1, tzinfo=timezone.utc)


def turn(mid: str, content: str, context: str = "") -> MemoryRecord:
    return MemoryRecord(id=mid, user_id="u", memory_type=MemoryType.EVENT, content=content, created_at=T,
                        updated_at=T, file="", context=context, source_ids=(mid,))


def memory(mid: str, content: str) -> MemoryRecord:
    return MemoryRecord(id=mid, user_id="u", memory_type=MemoryType.PREFERENCE, content=content, created_at=T,
                        updated_at=T)


def test_the_day_and_the_speaker_are_the_turns_own_the_previous_turn_is_borrowed() -> None:
    assert split_context("2023-05-08 May 2023 Mel: What did you do?\nCaroline:") == \
        ("2023-05-08 May 2023 Caroline:", "Mel: What did you do?")
    assert split_context("2023-05-08 May 2023 Caroline:") == ("2023-05-08 May 2023 Caroline:", "")
    assert split_context("2023-05-08 May 2023 I'm planning a trip to Kyoto") == \
        ("2023-05-08 May 2023", "I'm planning a trip to Kyoto")
    assert split_context("2023-05-08 May 2023") == ("2023-05-08 May 2023", "")
    assert split_context("just some words") == ("", "just some words")


def test_a_turn_holding_the_words_only_through_its_neighbour_moves_below_the_ones_that_say_them() -> None:
    q = set(terms("Kyoto", query=True))
    tea = turn("b", "Remember that I like green tea", "2024-05-01 May 2024 I'm planning a trip to Kyoto in April")
    kyoto = turn("a", "I'm planning a trip to Kyoto in April", "2024-05-01 May 2024")
    other = memory("c", "Tokyo is far from here")
    assert counts(tea, q) == (0, 1) and borrowed_only(tea, q) and not borrowed_only(kyoto, q)
    assert own_words_first([tea, other, kyoto], q) == [1, 2, 0]
    assert own_words_first([kyoto, tea, other], q) == [0, 1, 2]  # already below: unchanged
    assert own_words_first([tea, other], q) == [0, 1]  # nobody says it: the ranking stands


def test_one_borrowed_word_of_a_long_question_does_not_make_the_neighbour_decide() -> None:
    q = set(terms("How many years will I be when my friend Rachel gets married?", query=True))
    age = turn("a", "I'm 32, so I'm in my 30s", "2022-01-01 January 2022 There are so many options available")
    assert counts(age, q) == (0, 1) and not borrowed_only(age, q)
    assert own_words_first([age, memory("b", "Rachel is my friend")], q) == [0, 1]


def test_a_result_sharing_only_some_of_the_borrowed_words_does_not_say_the_thing() -> None:
    q = set(terms("How long have Mel and her husband been married?", query=True))
    answer = turn("b", "5 years already! Time flies", "2023-06-09 June 2023 Caroline: How long have you been married?\nMelanie:")
    question = turn("a", "How long have you been married?", "2023-06-09 June 2023 Caroline:")
    greeting = turn("c", "Hey Mel! Long time no talk", "2023-07-06 July 2023 Caroline:")
    assert borrowed_only(answer, q) and counts(greeting, q) == (2, 0)
    # the greeting holds "long" (and the name) but not "married": the answer stays above it
    assert own_words_first([answer, greeting], q) == [0, 1]
    # the question says every word the answer borrows: the answer moves below it
    assert own_words_first([answer, greeting, question], q) == [1, 2, 0]


def test_the_floor_judges_a_reply_to_a_question_as_any_record_and_damps_other_steered_turns() -> None:
    q = set(terms("How long have Mel and her husband been married?", query=True))
    reply = turn("b", "5 years already! Time flies", "2023-06-09 June 2023 Caroline: How long have you been married?\nMelanie:")
    assert answers_a_question(reply) and turn_relevance(reply, 0.4, q, NEIGHBOUR_WEIGHT) is None
    password = set(terms("password", query=True))
    trip = turn("d", "我下个月要去上海出差", "2024-05-01 May 2024 I changed my router password yesterday")
    assert not answers_a_question(trip)
    damped = turn_relevance(trip, 0.4, password, NEIGHBOUR_WEIGHT)
    assert damped is not None and damped < 0.15
