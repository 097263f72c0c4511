"""Time expressions in queries resolved against a reference date (text/timeexpr.py), en and zh."""

from __future__ import annotations

from datetime import date

import pytest

from memfold.text.timeexpr import MAX_RANGES, DateRange, time_ranges

REF = date(2023, 5, 30)  # a Tuesday


def d(y: int, m: int, dd: int) -> date:
    return date(y, m, dd)


@pytest.mark.parametrize("query, expected", [
    ("what did I eat yesterday", [(d(2023, 5, 29), d(2023, 5, 29))]),
    ("the day before yesterday", [(d(2023, 5, 28), d(2023, 5, 28))]),
    ("what happened today", [(REF, REF)]),
    ("What was the social media activity I participated 5 days ago?", [(d(2023, 5, 24), d(2023, 5, 26))]),
    ("two weeks ago I met Sam", [(d(2023, 5, 13), d(2023, 5, 19))]),
    ("a couple of months ago", [(d(2023, 3, 1), d(2023, 3, 31))]),
    ("three years ago", [(d(2020, 1, 1), d(2020, 12, 31))]),
    ("How many hours of yoga did I do last week?", [(d(2023, 5, 22), d(2023, 5, 28))]),
    ("this week", [(d(2023, 5, 29), d(2023, 6, 4))]),
    ("last weekend", [(d(2023, 5, 27), d(2023, 5, 28))]),
    ("Which shoes did I clean last month?", [(d(2023, 4, 1), d(2023, 4, 30))]),
    ("last year", [(d(2022, 1, 1), d(2022, 12, 31))]),
    ("the past 10 days", [(d(2023, 5, 20), REF)]),
    ("How many appointments did I go to in March?", [(d(2023, 3, 1), d(2023, 3, 31))]),
    ("what did I do in June", [(d(2022, 6, 1), d(2022, 6, 30))]),  # the latest June not after May 2023
    ("last May", [(d(2022, 5, 1), d(2022, 5, 31))]),  # in May, "last May" is a year ago
    ("in May 2021", [(d(2021, 5, 1), d(2021, 5, 31))]),
    ("on October 13, 2022", [(d(2022, 10, 13), d(2022, 10, 13))]),
    ("on 1 February, 2023", [(d(2023, 2, 1), d(2023, 2, 1))]),
    ("on May 3rd", [(d(2023, 5, 3), d(2023, 5, 3))]),
    ("events from July to October", [(d(2022, 7, 1), d(2022, 10, 31))]),
    ("from November to February", [(d(2022, 11, 1), d(2023, 2, 28))]),
    ("novels I finished in January and March", [(d(2023, 1, 1), d(2023, 1, 31)), (d(2023, 3, 1), d(2023, 3, 31))]),
    ("beach trips in 2022", [(d(2022, 1, 1), d(2022, 12, 31))]),
    ("what did I do on Sunday", [(d(2023, 5, 28), d(2023, 5, 28))]),
    ("last Wednesday", [(d(2023, 5, 24), d(2023, 5, 24))]),
    ("昨天吃了什么", [(d(2023, 5, 29), d(2023, 5, 29))]),
    ("前天", [(d(2023, 5, 28), d(2023, 5, 28))]),
    ("大前天", [(d(2023, 5, 27), d(2023, 5, 27))]),
    ("上个月我去了哪里", [(d(2023, 4, 1), d(2023, 4, 30))]),
    ("上周", [(d(2023, 5, 22), d(2023, 5, 28))]),
    ("上周六", [(d(2023, 5, 27), d(2023, 5, 27))]),
    ("星期三", [(d(2023, 5, 24), d(2023, 5, 24))]),
    ("去年", [(d(2022, 1, 1), d(2022, 12, 31))]),
    ("去年三月", [(d(2022, 3, 1), d(2022, 3, 31))]),
    ("前年的事", [(d(2021, 1, 1), d(2021, 12, 31))]),
    ("两周前", [(d(2023, 5, 13), d(2023, 5, 19))]),
    ("三个月前", [(d(2023, 2, 1), d(2023, 2, 28))]),
    ("十天前", [(d(2023, 5, 19), d(2023, 5, 21))]),
    ("5月3号", [(d(2023, 5, 3), d(2023, 5, 3))]),
    ("十二月", [(d(2022, 12, 1), d(2022, 12, 31))]),
    ("2021年5月", [(d(2021, 5, 1), d(2021, 5, 31))]),
    ("2021年5月20日", [(d(2021, 5, 20), d(2021, 5, 20))]),
])
def test_resolves(query: str, expected: list[tuple[date, date]]) -> None:
    assert time_ranges(query, REF) == [DateRange(a, b) for a, b in expected]


@pytest.mark.parametrize("query", [
    "I may go there", "what is my favourite food", "Sundays are for resting", "我喜欢吃什么",
    "三个月的课程", "a month of yoga",
])
def test_no_time_named(query: str) -> None:
    assert time_ranges(query, REF) == []


def test_a_day_that_does_not_exist_falls_back_to_its_month() -> None:
    assert DateRange(d(2023, 2, 1), d(2023, 2, 28)) in time_ranges("on February 30, 2023", REF)


def test_a_pasted_calendar_is_not_a_time_filter() -> None:
    many = " ".join(f"in {y}" for y in range(2000, 2000 + MAX_RANGES + 1))
    assert time_ranges(many, REF) == []


def test_range_membership() -> None:
    r = DateRange(d(2023, 5, 1), d(2023, 5, 31))
    assert d(2023, 5, 31) in r and d(2023, 6, 1) not in r and "2023-05-02" not in r
