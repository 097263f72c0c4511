"""``text/moods.py``: the four broad moods a text names, in Chinese and English."""

from __future__ import annotations

from memfold.text.moods import MOODS, last_line, moods


def test_moods_in_either_language() -> None:
    assert moods("活动类 开心 Bart在圣诞节晚会上跳舞") == {"happy"}
    assert moods("I was so nervous, but HAPPY in the end") == {"anxious", "happy"}
    assert moods("Lisa感到很失望，也很生气") == {"sad", "angry"}
    assert moods("madness and gladiators") == frozenset()  # English words are matched whole
    assert moods("") == frozenset()


def test_last_line() -> None:
    assert last_line("I am worried.\nWhen did it come back?\n\n") == "When did it come back?"
    assert last_line("one line") == "one line" and last_line("") == ""


def test_the_mood_cache_of_a_long_lived_process_is_bounded() -> None:
    limit = moods.cache_info().maxsize
    assert limit is not None and limit <= 8192
    for i in range(limit + 500):
        moods(f"text number {i} happy")
    assert moods.cache_info().currsize <= limit
    assert set(MOODS) == {"happy", "anxious", "sad", "angry"}
