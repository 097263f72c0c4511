"""Requests not to remember something (seed 002: 用户说"忘了这个"时立即删除对应内容).

``find_request`` reads one message: "forget this", "forget that I like sushi", "don't remember
this", "忘了这个", "忘掉我的生日", "别记", "不要记住这个", "把这件事忘了". It tells what the request
points at: an explicit ``query`` ("I like sushi"), or — for "this/that/这个" — the rest of the
same message, or, when the message is nothing but the request, what was said just before.
Statements about forgetting ("I always forget my keys", "别忘了…", "don't forget…") are not requests."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .casefold import lower_as_regex

_DEMONSTRATIVE_EN = r"(?:this|that|it|these|those|all (?:of )?(?:this|that)|what i (?:just )?(?:said|told you)|the last (?:one|thing|message))"
_DEMONSTRATIVE_ZH = r"(?:这个|那个|这些|那些|这件事|那件事|这条|那条|它|刚才(?:说)?的(?:话|事|内容)?|刚刚(?:说)?的(?:话|事|内容)?|上一条|吧|了吧)"
_LEAD_EN = r"(?:^|[.!?;,]\s*)(?:(?:ok(?:ay)?|oh|actually|hmm|wait|no|and|but|so|also|just|please|pls|can you|could you|would you)[,\s]+)*"

_TAIL = r"\s*(?:please)?\s*[.!?。！？～~]*\s*$"
_EN_FORGET = re.compile(_LEAD_EN + r"forget(?:\s+(?:about|everything about))?\s+(.+?)\s*(?:from (?:your|the) memory)?" + _TAIL, re.I)
_EN_DELETE = re.compile(_LEAD_EN + r"(?:delete|erase|remove|drop)\s+(.+?)\s+from (?:your|the) memory" + _TAIL, re.I)
_EN_DONT_KEEP = re.compile(_LEAD_EN + r"(?:don'?t|do not|no need to)\s+(?:remember|memori[sz]e)(?:\s+(?:that|this|it))?\s*(.*?)"
                           + _TAIL, re.I)
# save/store/record take only "this/that/it" ("don't store passwords in plain text" is advice, not a request)
_EN_DONT_SAVE = re.compile(_LEAD_EN + r"(?:don'?t|do not|no need to)\s+(?:save|store|record|write down|keep)\s+"
                           r"((?:this|that|it)(?:\s+(?:one|down))?)(?:\s+(?:in|to) (?:your|the) memory)?" + _TAIL, re.I)
_EN_STOP = re.compile(_LEAD_EN + r"stop remembering\s+(.+?)" + _TAIL, re.I)
_EN_NOT = re.compile(r"\b(?:don'?t|do not|never|not|i|we|you|he|she|they|always|often|to)\s+(?:\w+\s+)?forget\b", re.I)
_EN_ASK = re.compile(r"\b(?:can|could|would|will)\s+you\s+(?:please\s+|just\s+)?forget\b", re.I)
_FILLER = re.compile(r"^(?:ok(?:ay)?|oh|ah|actually|hmm+|well|yes|yeah|no|sorry|wait|好的?|嗯+|哦|噢|算了|不过|其实|对了|哎|唉|啊|那个)$", re.I)
_ZH_LEAD = r"(?:^|(?<=[，,。！!；;]))\s*"
_ZH_FORGET = re.compile(_ZH_LEAD + r"(?:请|请你|你|帮我|麻烦你?)?(?:把(.+?))?(?:忘掉|忘记|忘了)(.*?)[吧]?[。！!？?～~]*\s*$")
_ZH_DELETE = re.compile(_ZH_LEAD + r"(?:请|请你|你|帮我|麻烦你?)?(?:把(.+?))?(?:删掉|删了|删除)(.*?)[吧]?[。！!？?～~]*\s*$")
_ZH_DONT_KEEP = re.compile(_ZH_LEAD + r"([^，,。！!；;]{0,12}?)(?:别|不要|不用|不必|无需|请勿|勿)(?:再)?(?:记住|记下|记录|记)"
                           r"(?!恨|仇|错|账|性|者|号|得|忆)(?:下来|下|住)?(.*?)[吧了]?[。！!～~]*\s*$")
_NOT_A_REQUEST_ZH = re.compile(r"(?:别|不要|不能|不会|没|可别)(?:忘|忘了|忘记)|(?:我|你|他|她|我们|他们)(?:又|总是|老是|经常|常常|竟然|居然|差点|都)?"
                               r"(?:忘|忘了|忘记)(?:了)?(?:吗|没|\s*$|[？?])")
_MEMORY_WORDS_ZH = re.compile(r"(?:的)?(?:记忆|记录|这条记忆)$")
_DEMO_EN = re.compile(rf"^(?:{_DEMONSTRATIVE_EN})(?:\s+(?:one|down|please|for me|too|as well))?$", re.I)
_DEMO_ZH = re.compile(rf"^(?:{_DEMONSTRATIVE_ZH})?$")
_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
# every request pattern above needs one of these (compared as ``re.I`` compares): most messages
# have none and skip the patterns (``tests/unit/test_forget_first_look.py``)
_HINTS = ("forget", "memory", "remember", "memori", "save", "store", "record", "write", "keep", "忘", "删", "记")


@dataclass(frozen=True)
class ForgetRequest:
    query: str | None  # what to forget, in the user's words; None = "this"
    rest: str  # the rest of the message once the request is taken out ('' = nothing else was said)

    @property
    def points_back(self) -> bool:
        """True when "this" can only mean what was said before this message."""
        return self.query is None and not self.rest


def _clean(s: str) -> str:
    return s.strip().strip(" ,，.。!！:：;；\"'“”‘’").strip()


def _target_en(raw: str) -> str | None:
    target = re.sub(r"^(?:that|about)\s+", "", _clean(raw), flags=re.I)
    return None if not target or _DEMO_EN.match(target) else target


def _target_zh(raw: str) -> str | None:
    target = _MEMORY_WORDS_ZH.sub("", re.sub(r"^(?:关于|有关)", "", _clean(raw)))
    target = re.sub(r"^(?:关于|有关)", "", target)
    return None if _DEMO_ZH.match(target) else target


def _sentence_request(s: str) -> tuple[int, str | None] | None:
    """Where in sentence ``s`` a request starts, and its query (None = "this"); None = no request."""
    for pat in (_EN_FORGET, _EN_DELETE, _EN_STOP):
        m = pat.search(s)
        if m and not (pat is _EN_FORGET and _EN_NOT.search(s[:m.end(1)]) and not _EN_ASK.search(s)):
            return m.start(), _target_en(m.group(1))
    for pat in (_EN_DONT_KEEP, _EN_DONT_SAVE):
        m = pat.search(s)
        if m:
            return m.start(), _target_en(m.group(1))
    if _NOT_A_REQUEST_ZH.search(s):
        return None
    m = _ZH_FORGET.search(s)
    if m:
        return m.start(), _target_zh(m.group(1) or m.group(2) or "")
    m = _ZH_DELETE.search(s)
    if m and ("记忆" in s or "记录" in s or _DEMO_ZH.match(_clean(m.group(1) or m.group(2) or "")) and m.start() == 0):
        return m.start(), _target_zh(m.group(1) or m.group(2) or "")
    m = _ZH_DONT_KEEP.search(s)
    if m:
        target, before = _clean(m.group(2) or ""), _clean(m.group(1) or "").removeprefix("把")
        if not target and before and not _DEMO_ZH.match(before):
            return m.start(), _target_zh(before)  # "我的生日别记"
        return m.start() + len(m.group(1) or ""), _target_zh(target)
    return None


def find_request(text: str, *, first_look: bool = True) -> ForgetRequest | None:
    """The forget request in a message, or None when the message asks nothing of the kind
    (``first_look=False``: every pattern runs, whatever words the message holds)."""
    if first_look and not any(map(lower_as_regex(text).__contains__, _HINTS)):
        return None
    sents = [s.strip() for s in _SPLIT.split(text) if s and s.strip()]
    for i, sent in enumerate(sents):
        found = _sentence_request(sent)
        if found is None:
            continue
        at, query = found
        head = _clean(sent[:at])
        if query is None and head and _DEMO_ZH.match(re.sub(r"^.*[，,]", "", head)):
            head = _clean(re.sub(r"[，,]?\s*(?:这个|那个|这些|那些|这件事|那件事|这条|那条)$", "", head))
        rest = " ".join(x for x in sents[:i] + [head] + sents[i + 1:] if x and not _FILLER.match(_clean(x))).strip()
        return ForgetRequest(query=query, rest=rest)
    return None
