"""Time expressions in a query, resolved against a reference date into date ranges (en + zh).

``time_ranges("What did I do last May?", date(2024, 3, 1))`` → ``[DateRange(2023-05-01, 2023-05-31)]``.
Pure functions, no I/O. Understood:

- en: today, yesterday, the day before yesterday; N days / weeks / months / years ago (digits or
  words, "a", "a couple of", "a few"); last / this / next-less week, weekend, month, year; the past N
  days / weeks; (last) Monday … Sunday; a month name with or without a day and a year ("in May",
  "May 3, 2023", "3 May 2023", "May 2023"); a year ("in 2023"); from Month to Month.
- zh: 今天 昨天 前天 大前天; N天/周/星期/个月/年前 (数字或汉字); 上周 这周 本周 上个月 本月 去年 今年
  前年; (上)周X / 星期X / 礼拜X; X月 / X月X日(号); YYYY年(X月(X日)).

A month or weekday without a year or week means the latest one not after the reference date.
Ranges are inclusive. "N days ago" gets a day either side; "N weeks ago" three days either side:
people count loosely."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta

MAX_RANGES = 8  # a query naming more dates than this is not about a time


@dataclass(frozen=True)
class DateRange:
    start: date
    end: date

    def __contains__(self, d: object) -> bool:
        return isinstance(d, date) and self.start <= d <= self.end


MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
MONTHS["sept"] = 9
del MONTHS["may"]  # re-added below; "may" alone is a verb: only with a day, a year or "in"
MONTHS["may"] = 5
WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
                "couple of": 2, "few": 3, "several": 3}
ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
             "九": 9, "十": 10, "几": 3}
ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}

_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_NUM = r"(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|(?:a )?couple of|" \
       r"(?:a )?few|several)"
_UNIT = r"(day|week|month|year)s?"
_YEAR = r"((?:19|20)\d\d)"
_ZH_NUM = r"([0-9]+|[零〇一二两三四五六七八九十几]+)"
# a query without any of these names no time: the full scan is skipped
_EN_GATE = re.compile(r"\d|\b(?:ago|yesterday|today|tonight|morning|last|this|past|week|weekend|month|year|"
                      r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|day\b")
_ZH_GATE = re.compile(r"[天周月年拜晚期日号]")


def _num(text: str) -> int:
    text = text.lower().strip()
    return int(text) if text.isdigit() else NUMBER_WORDS.get(text, 1)


def _zh_num(text: str) -> int:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)
    value = 0
    for ch in text:
        value = value * 10 + ZH_DIGITS.get(ch, 0)
    return value


def _month_range(year: int, month: int) -> DateRange:
    return DateRange(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _add_months(d: date, months: int) -> tuple[int, int]:
    n = d.year * 12 + d.month - 1 + months
    return n // 12, n % 12 + 1


def _latest_month(month: int, ref: date) -> DateRange:
    year = ref.year if month <= ref.month else ref.year - 1
    return _month_range(year, month)


def _day(year: int, month: int, day: int) -> DateRange | None:
    try:
        d = date(year, month, day)
    except ValueError:
        return None
    return DateRange(d, d)


def _latest_day(month: int, day: int, ref: date) -> DateRange | None:
    r = _day(ref.year, month, day)
    if r is not None and r.start > ref:
        r = _day(ref.year - 1, month, day)
    return r


def _week_of(d: date) -> DateRange:
    start = d - timedelta(days=d.weekday())
    return DateRange(start, start + timedelta(days=6))


def _latest_weekday(weekday: int, ref: date, before_this_week: bool = False) -> DateRange:
    back = (ref.weekday() - weekday) % 7
    if before_this_week:
        d = _week_of(ref).start - timedelta(days=7) + timedelta(days=weekday)
    else:
        d = ref - timedelta(days=back)
    return DateRange(d, d)


def _ago(n: int, unit: str, ref: date) -> DateRange:
    if unit == "day":
        d = ref - timedelta(days=n)
        return DateRange(d - timedelta(days=1), d + timedelta(days=1))
    if unit == "week":
        d = ref - timedelta(weeks=n)
        return DateRange(d - timedelta(days=3), d + timedelta(days=3))
    if unit == "month":
        return _month_range(*_add_months(ref, -n))
    return DateRange(date(ref.year - n, 1, 1), date(ref.year - n, 12, 31))


def _clip(n: int) -> int:
    return max(0, min(n, 5000))


class _Found:
    """The ranges found so far and the spans of text they came from: a later, overlapping match
    (a shorter expression inside a longer one already read) is not taken."""

    def __init__(self) -> None:
        self.ranges: list[DateRange] = []
        self.spans: list[tuple[int, int]] = []

    def take(self, m: re.Match[str], r: DateRange | None) -> None:
        if r is not None and not any(a < m.end() and m.start() < b for a, b in self.spans):
            self.ranges.append(r)
            self.spans.append(m.span())


def _english(q: str, ref: date) -> list[DateRange]:
    found = _Found()
    take = found.take

    for m in re.finditer(r"\bthe day before yesterday\b", q):
        take(m, DateRange(ref - timedelta(days=2), ref - timedelta(days=2)))
    for m in re.finditer(r"\byesterday\b", q):
        take(m, DateRange(ref - timedelta(days=1), ref - timedelta(days=1)))
    for m in re.finditer(r"\b(today|tonight|this morning)\b", q):
        take(m, DateRange(ref, ref))
    for m in re.finditer(rf"\b{_NUM} {_UNIT} ago\b", q):
        take(m, _ago(_clip(_num(m.group(1))), m.group(2), ref))
    for m in re.finditer(rf"\b(?:the )?(?:past|last) {_NUM} {_UNIT}\b", q):
        n, unit = _clip(_num(m.group(1))), m.group(2)
        days = {"day": 1, "week": 7, "month": 31, "year": 366}[unit] * n
        take(m, DateRange(ref - timedelta(days=days), ref))
    for m in re.finditer(rf"\b(?:from|between) {_MONTH}(?: {_YEAR})? (?:to|and|through|until|till) {_MONTH}"
                         rf"(?: {_YEAR})?\b", q):
        a, b = MONTHS[m.group(1)[:3]], MONTHS[m.group(3)[:3]]
        yb = int(m.group(4)) if m.group(4) else _latest_month(b, ref).start.year
        ya = int(m.group(2)) if m.group(2) else (yb if a <= b else yb - 1)
        take(m, DateRange(_month_range(ya, a).start, _month_range(yb, b).end))
    for m in re.finditer(rf"\b{_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?,? {_YEAR}\b", q):
        take(m, _day(int(m.group(3)), MONTHS[m.group(1)[:3]], int(m.group(2))))
    for m in re.finditer(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH},? {_YEAR}\b", q):
        take(m, _day(int(m.group(3)), MONTHS[m.group(2)[:3]], int(m.group(1))))
    for m in re.finditer(rf"\b{_MONTH},? {_YEAR}\b", q):
        take(m, _month_range(int(m.group(2)), MONTHS[m.group(1)[:3]]))
    for m in re.finditer(rf"\b{_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?\b", q):
        if m.group(1) != "may" or re.search(r"\bon $", q[: m.start()]):
            take(m, _latest_day(MONTHS[m.group(1)[:3]], int(m.group(2)), ref))
    for m in re.finditer(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH}\b", q):
        take(m, _latest_day(MONTHS[m.group(2)[:3]], int(m.group(1)), ref))
    for m in re.finditer(rf"\b(last|this|in|during|of|since|early|late|mid|on) {_MONTH}\b|"
                         rf"\b(january|february|march|april|june|july|august|september|october|november|december)\b",
                         q):
        word, name = (m.group(1), m.group(2)) if m.group(2) else (None, m.group(3))
        month = MONTHS[name[:3]]
        r = _latest_month(month, ref)
        if word == "last" and r.start.month == ref.month and r.start.year == ref.year:
            r = _month_range(ref.year - 1, month)
        take(m, r)
    for m in re.finditer(rf"\b(?:in|during|of|since|for) {_YEAR}\b|\b{_YEAR}\b", q):
        y = int(m.group(1) or m.group(2))
        take(m, DateRange(date(y, 1, 1), date(y, 12, 31)))
    for m in re.finditer(r"\b(last|this|past) (week|weekend|month|year)\b", q):
        which, unit = m.group(1), m.group(2)
        if unit == "week":
            w = _week_of(ref)
            r = w if which == "this" else DateRange(w.start - timedelta(days=7), w.end - timedelta(days=7))
            if which == "past":
                r = DateRange(ref - timedelta(days=7), ref)
        elif unit == "weekend":
            sat = _latest_weekday(5, ref if which == "this" else ref - timedelta(days=1)).start
            r = DateRange(sat, sat + timedelta(days=1))
        elif unit == "month":
            r = _month_range(ref.year, ref.month) if which == "this" else _month_range(*_add_months(ref, -1))
        else:
            y = ref.year if which == "this" else ref.year - 1
            r = DateRange(date(y, 1, 1), date(y, 12, 31))
        take(m, r)
    for m in re.finditer(r"\b(last |this |on |on the )?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
                         r"(?!s)\b", q):
        which = (m.group(1) or "").strip()
        take(m, _latest_weekday(WEEKDAYS[m.group(2)], ref, before_this_week=which == "last"))
    return found.ranges


def _chinese(q: str, ref: date) -> list[DateRange]:
    found = _Found()
    take = found.take

    for word, back in (("大前天", 3), ("前天", 2), ("昨天", 1), ("昨晚", 1), ("今天", 0), ("今晚", 0)):
        for m in re.finditer(word, q):
            d = ref - timedelta(days=back)
            take(m, DateRange(d, d))
    for m in re.finditer(r"(\d{4})年(?:(\d{1,2})月(?:(\d{1,2})[日号])?)?", q):
        y = int(m.group(1))
        if m.group(3):
            take(m, _day(y, int(m.group(2)), int(m.group(3))))
        elif m.group(2) and 1 <= int(m.group(2)) <= 12:
            take(m, _month_range(y, int(m.group(2))))
        elif not m.group(2):
            take(m, DateRange(date(y, 1, 1), date(y, 12, 31)))
    for m in re.finditer(_ZH_NUM + r"(天|日|周|星期|礼拜|个月|个星期|个礼拜|年)(?:之|以)?前", q):
        n = _clip(_zh_num(m.group(1)))
        unit = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "个星期": "week",
                "个礼拜": "week", "个月": "month", "年": "year"}[m.group(2)]
        take(m, _ago(n, unit, ref))
    for m in re.finditer(r"(上|这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天末])", q):
        wd = ZH_WEEKDAYS[m.group(2)]
        r = _latest_weekday(wd, ref, before_this_week=m.group(1) == "上")
        take(m, DateRange(r.start, r.start + timedelta(days=1)) if m.group(2) == "末" else r)
    for m in re.finditer(r"(上上|上|这|本)(?:个)?(周|星期|礼拜|月)", q):
        if m.group(2) == "月":
            take(m, _month_range(*_add_months(ref, {"上上": -2, "上": -1}.get(m.group(1), 0))))
        else:
            w = _week_of(ref)
            shift = timedelta(days=7 * {"上上": 2, "上": 1}.get(m.group(1), 0))
            take(m, DateRange(w.start - shift, w.end - shift))
    for m in re.finditer(r"(?:周|星期|礼拜)([一二三四五六日天])", q):
        take(m, _latest_weekday(ZH_WEEKDAYS[m.group(1)], ref))
    for m in re.finditer(r"(前年|去年|今年)(?:" + _ZH_NUM + r"月(?:" + _ZH_NUM + r"[日号])?)?", q):
        y = ref.year - {"前年": 2, "去年": 1, "今年": 0}[m.group(1)]
        month = _zh_num(m.group(2)) if m.group(2) else 0
        if m.group(3) and 1 <= month <= 12:
            take(m, _day(y, month, _zh_num(m.group(3))))
        elif 1 <= month <= 12:
            take(m, _month_range(y, month))
        else:
            take(m, DateRange(date(y, 1, 1), date(y, 12, 31)))
    for m in re.finditer(_ZH_NUM + r"月(?:" + _ZH_NUM + r"[日号])?", q):
        month = _zh_num(m.group(1))
        if not 1 <= month <= 12:
            continue
        if m.group(2):
            take(m, _latest_day(month, _zh_num(m.group(2)), ref))
        elif not re.search(r"个$", q[: m.start()]):
            take(m, _latest_month(month, ref))
    return found.ranges


def time_ranges(query: str, ref: date) -> list[DateRange]:
    """The date ranges the query's time expressions name, measured from ``ref`` (at most ``MAX_RANGES``;
    none when the query names more, or none)."""
    q = " ".join(query.lower().split())
    out = (_english(q, ref) if _EN_GATE.search(q) else []) + (_chinese(query, ref) if _ZH_GATE.search(query) else [])
    return out if len(out) <= MAX_RANGES else []
