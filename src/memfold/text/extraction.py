"""Deterministic memory extraction for Chinese and English (SPEC §4.2, no LLM).

Rules: explicit requests ("remember…", "记住…", "别忘了…"), preferences ("I like/prefer…",
"我喜欢/偏好…"), attributes ("my X is Y", "我的X是Y"), commitments ("I will…", "提醒我…")
and dated events. Each rule yields the sentence in the user's own words.

A reply to a suggestion is not a commitment: "I'll check out that café", "I think I'll try it",
"I'll keep that in mind", "我会试试" say the user heard the advice, not that there is something to
do (``follow_up``). Without a date they are not extracted; the turn itself is still stored."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..models import MemoryType

_SENT_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")

_REMEMBER_EN = re.compile(r"^(?:please\s+|pls\s+)?(?:remember|don'?t forget|do not forget|note|keep in mind)"
                          r"(?:\s+(?:this|that|the following|this one)\s*[,:;\u2014-]|\s+that\b)?[,:\s]+(.+)$", re.I)
# "记住这个：…" / "别忘了这件事，…": the pointer word before the colon is not part of the memory
_REMEMBER_ZH = re.compile(r"^(?:请|请你|帮我)?(?:记住|记一下|记住一下|记下|记得|别忘了|不要忘了|不要忘记|别忘记)"
                          r"(?:(?:这个|这件事|这一点|这点|这些|以下(?:内容)?|下面(?:的|这些)?(?:内容|事)?)\s*[：:，,]"
                          r"|[：:，,\s])*(.+)$")
_PREF_EN = re.compile(r"\b(?:I|we)\s+(?:really\s+|do\s+|also\s+|usually\s+|always\s+)*"
                      r"(like|love|prefer|enjoy|adore|hate|dislike|can't stand|don't like|do not like)\s+(.+)", re.I)
_PREF_ZH = re.compile(r"我(?:们)?(?:很|最|特别|比较|非常|更|一直|也|还是|通常)*(喜欢|爱喝|爱吃|爱|偏好|偏爱|讨厌|不喜欢|不爱|习惯)(.+)")
# "我最喜欢的城市是成都": what is liked (城市) and the answer (成都), not "的城市是成都"
_PREF_ZH_BEST = re.compile(r"我(?:们)?(?:最|特别|比较|非常|一直)*(喜欢|爱|偏爱|讨厌|不喜欢)([^，。！？\s的]{0,4})的"
                           r"([^，。！？\s]{0,12}?)(?:是|为|：|:)(.+)")
_PREF_ZH2 = re.compile(r"(?:我的)?(.{1,12}?)偏好(?:是|为|：|:)(.+)")
_ATTR_EN = re.compile(r"\bmy\s+([a-z][a-z' -]{0,40}?)\s+(?:is|are|was)\s+(.+)", re.I)
_ATTR_ZH = re.compile(r"我的([^，。！？\s]{1,12}?)(?:是|叫|为)(.+)")
# family and pets are named without 的: "我女儿叫小美"
_ATTR_ZH_KIN = re.compile(r"我(女儿|儿子|孩子|宝宝|老婆|老公|妻子|丈夫|爸爸|妈妈|爸|妈|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|"
                          r"猫|狗)(?:叫|名叫|名字叫|的名字是)(.+)")
_TODO_EN = re.compile(r"\b(?:I(?:'ll| will| need to| have to| must| should| promise| plan to|'m going to| am going to)"
                      r"|remind me|don'?t let me forget|we(?:'ll| will| need to))\b", re.I)
_TODO_ZH = re.compile(r"(?:我要|我会|我得|我需要|我打算|我计划|我准备|提醒我|答应|记得要|待办|截止)")
# a reply to what was just suggested (``follow_up``): an intention to try, look at or weigh something,
# a hedged intention, one that points back at the advice, or one the user is unsure of
_FU_ADV = (r"(?:\s+(?:definitely|probably|certainly|also|just|really|totally|first|then|now|still|surely|likely|"
           r"actually|maybe|perhaps|happily|gladly|so|too))*")
_FU_VERB_EN = re.compile(
    r"\b(?:I|we)(?:'ll|\u2019ll| will|'m going to| am going to|'d like to| would like to| might| may| could| should)"
    + _FU_ADV + r"\s+(?:check\b|try\b|give\b|look\b|consider\b|think\b|keep\b[^.]{0,40}\bin mind|bear\b[^.]{0,40}\bin mind|"
    r"keep (?:that|this|these|those|it|them|your)\b|go (?:with|for)\b|stick (?:with|to)\b|research\b|search\b|explore\b|"
    r"browse\b|let you know\b|keep you\b|reach out\b|take (?:a look|note|your|that|this|these|those|it)\b|"
    r"follow (?:your|these|those|that|this|the tips|the advice|up)\b|see (?:if|what|how|whether)\b|ask (?:about|around)\b|"
    r"start (?:by|with)\b|definitely\b|(?:be sure|make sure) to (?:check|try|look|keep|let|follow)\b)", re.I)
_FU_HEDGE_EN = re.compile(r"\b(?:I|we)\s+(?:think|guess|suppose|figure|might|may)\b|\b(?:maybe|perhaps|probably)\b", re.I)
_FU_POINTER_EN = re.compile(
    r"\b(?:you(?:'ve|\u2019ve)? (?:mentioned|suggested|recommended|provided|listed|shared|gave|said)|your (?:suggestions?|"
    r"advice|tips|recommendations?|ideas|help)|(?:these|those) (?:tips|suggestions|ideas|options|recommendations|"
    r"resources|steps))\b", re.I)
_FU_UNSURE_EN = re.compile(r"\b(?:not sure|unsure|wondering|don't know|do not know|undecided)\b[^.]{0,20}\b(?:if|whether)\b",
                           re.I)
_FU_ZH = re.compile(r"(?:我|我们)(?:会|要|就|得|再|先|也|去|可以)*(?:试试|试一试|试一下|看看|看一看|看一下|考虑|想想|想一想|"
                    r"研究一下|查查|查一下|留意|参考)|(?:也许|可能|或许|大概)(?:我|我们)?(?:会|要)|不确定(?:要不要|是否|该不该)")
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE_EN = re.compile(rf"\b(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})"
                      r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|tomorrow|tonight|yesterday|next (?:week|month|year|"
                      r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|on (?:monday|tuesday|wednesday|thursday|"
                      r"friday|saturday|sunday)|this (?:weekend|week|friday|saturday|sunday))\b", re.I)
_DATE_ZH = re.compile(r"(?:\d{4}年|\d{1,2}月\d{1,2}[日号]|[一二三四五六七八九十\d]{1,3}月[一二三四五六七八九十\d]{1,3}[日号]|"
                      r"(?:下|这|本|上)?(?:周|星期|礼拜)[一二三四五六日天]|明天|后天|今晚|昨天|下周|下个月|明年)")
_QUESTION = re.compile(r"[?？]\s*$|^(?:what|when|where|who|why|how|do you|did you|can you|could you|is it|are you)\b", re.I)


@dataclass(frozen=True)
class Extracted:
    memory_type: MemoryType
    content: str
    importance: float
    structured_data: dict[str, Any] = field(default_factory=dict)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def classify(text: str) -> tuple[MemoryType, dict[str, Any]]:
    """The type a free text most likely is, and what structure the rules could read from it."""
    m = _PREF_ZH_BEST.search(text)
    if m:
        verb, key = m.group(1), (m.group(3) or m.group(2)).strip()
        pref = {"polarity": "dislike" if verb in ("讨厌", "不喜欢") else "like", "object": _trim(m.group(4))}
        return MemoryType.PREFERENCE, ({"key": key} if key else {}) | pref
    for pat, lang in ((_PREF_EN, "en"), (_PREF_ZH, "zh")):
        m = pat.search(text)
        if m:
            verb = m.group(1).lower()
            negative = verb in ("hate", "dislike", "can't stand", "don't like", "do not like", "讨厌", "不喜欢", "不爱")
            return MemoryType.PREFERENCE, {"polarity": "dislike" if negative else "like",
                                           "object": _trim(m.group(2))}
    m = _PREF_ZH2.search(text)
    if m:
        return MemoryType.PREFERENCE, {"key": m.group(1).strip(), "value": _trim(m.group(2))}
    if _TODO_EN.search(text) or _TODO_ZH.search(text):
        data: dict[str, Any] = {}
        when = _DATE_EN.search(text) or _DATE_ZH.search(text)
        if when:
            data["when"] = when.group(0)
        return MemoryType.TODO, data
    for pat in (_ATTR_EN, _ATTR_ZH, _ATTR_ZH_KIN):
        m = pat.search(text)
        if m:
            return MemoryType.FACT, {"key": m.group(1).strip(), "value": _trim(m.group(2))}
    when = _DATE_EN.search(text) or _DATE_ZH.search(text)
    if when:
        return MemoryType.EVENT, {"when": when.group(0)}
    return MemoryType.NOTE, {}


def follow_up(sentence: str) -> bool:
    """An intention that answers a suggestion rather than commits to something: trying, looking at or
    weighing it ("I'll definitely check out those galleries", "I'll go with the blue one"), hedged
    ("I think I'll…", "maybe…"), pointing back at the advice ("your tips"), or unsure ("not sure if I
    should…"); "我会试试", "我考虑一下". Obligations ("I need to…", "remind me…") are not follow-ups."""
    return bool(_FU_VERB_EN.search(sentence) or _FU_HEDGE_EN.search(sentence) or _FU_POINTER_EN.search(sentence)
                or _FU_UNSURE_EN.search(sentence) or _FU_ZH.search(sentence))


def _trim(s: str) -> str:
    return s.strip().rstrip(".!。！，,;；").strip()


def extract(text: str) -> list[Extracted]:
    """Memories worth keeping from one user turn; [] for small talk and questions."""
    out: list[Extracted] = []
    for sent in sentences(text):
        explicit = _REMEMBER_EN.match(sent) or _REMEMBER_ZH.match(sent)
        if explicit:
            body = _trim(explicit.group(1))
            if body:
                mtype, data = classify(body)
                out.append(Extracted(mtype, body, 0.8, data))
            continue
        if _QUESTION.search(sent):
            continue
        mtype, data = classify(sent)
        if mtype is MemoryType.NOTE:
            continue
        if mtype is MemoryType.TODO and "when" not in data and follow_up(sent):
            continue  # a reply to advice, not a to-do (a dated one is a plan: kept)
        importance = {MemoryType.PREFERENCE: 0.7, MemoryType.TODO: 0.7, MemoryType.FACT: 0.6}.get(mtype, 0.5)
        out.append(Extracted(mtype, _trim(sent), importance, data))
    return out
