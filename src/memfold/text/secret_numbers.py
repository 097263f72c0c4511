"""Number rules of the secret screen (``text/secrets.py``): payment card numbers (Luhn) and
Chinese resident ID numbers, unless the words just before name the number as something else."""

from __future__ import annotations

import re
from datetime import date

_CARD = re.compile(r"(?<![\d+.\-/])[2-6]\d{2,5}(?:([ .-]?)\d{3,6})(?:\1\d{3,6}){1,4}(?![\d\-/]|\.\d)")
_CARD_KW = re.compile(r"(?i)(?:card(?:\s+(?:number|no\.?|num))?|[\u4e00-\u9fff]{0,3}卡号?)\s*(?:is|:|：|是|为)?\s*"
                      r"((?:\d[ .-]?){11,18}\d)(?!\d)")
_ZH_ID = re.compile(r"(?<![\dA-Za-z])([1-9]\d{5})([ -]?)((?:19|20)\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])\2(\d{3}[\dXx])"
                    r"(?![\dA-Za-z])")
_PROVINCES = frozenset({11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46,
                        50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83, 91})
_NOT_SECRET_NUMBER = re.compile(r"(?i)(?:order|订单|单号|运单|快递|tracking|invoice|发票|ref(?:erence)?|serial|序列号|"
                                r"编号|isbn|issn|版本|version|ticket|工单|case|flight|航班|phone|tel|电话|手机|ext)"
                                r"[^\n]{0,16}$")
_ID_KW = re.compile(r"(?i)(?:身份证|证件|id\b|identity|card|卡)[^\n]{0,16}$")


def _luhn_ok(digits: str) -> bool:
    total, alt = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if alt:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        alt = not alt
    return total % 10 == 0


def _numbers_context_veto(text: str, start: int) -> bool:
    """A number named as an order / tracking / phone number just before it is not a secret
    (unless a card or ID word is nearer)."""
    before = text[max(0, start - 24):start]
    veto = _NOT_SECRET_NUMBER.search(before)
    if not veto:
        return False
    ident = _ID_KW.search(before)
    return not (ident and ident.start() > veto.start())


def card_spans(text: str) -> list[tuple[int, int]]:
    """Spans of payment card numbers: Luhn-valid digit runs not named as an order, phone… number,
    and any 12–19 digits after a card word."""
    out: list[tuple[int, int]] = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and _luhn_ok(digits) and not _numbers_context_veto(text, m.start()):
            out.append((m.start(), m.end()))
    for m in _CARD_KW.finditer(text):
        digits = re.sub(r"\D", "", m.group(1))
        if 12 <= len(digits) <= 19:
            out.append((m.start(1), m.end(1)))
    return out


def id_spans(text: str) -> list[tuple[int, int]]:
    """Spans of Chinese resident ID numbers: a known province, a real birth date."""
    out: list[tuple[int, int]] = []
    for m in _ZH_ID.finditer(text):
        if int(m.group(1)[:2]) not in _PROVINCES:
            continue
        try:
            date(int(m.group(3)), int(m.group(4)), int(m.group(5)))
        except ValueError:
            continue
        if _numbers_context_veto(text, m.start()):
            continue
        out.append((m.start(), m.end()))
    return out
