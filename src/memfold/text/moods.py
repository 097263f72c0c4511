"""Mood words (issue 16, session 7): which of four broad moods — happy, anxious, sad, angry — a text
expresses, from a small Chinese and English lexicon. Read by ``engine/rank_cues.py``
(``score_bonus_mood``)."""

from __future__ import annotations

import re
from functools import lru_cache

MOODS: dict[str, tuple[str, ...]] = {
    "happy": ("开心", "高兴", "快乐", "愉快", "喜悦", "兴奋", "激动",
              "happy", "glad", "joy", "joyful", "excited", "delighted", "cheerful"),
    "anxious": ("焦虑", "紧张", "担心", "害怕", "不安", "恐惧",
                "anxious", "anxiety", "nervous", "worried", "afraid", "scared", "fear"),
    "sad": ("难过", "伤心", "失望", "沮丧", "失落", "悲伤", "委屈", "挫败",
            "sad", "upset", "disappointed", "frustrated", "unhappy"),
    "angry": ("生气", "愤怒", "气愤", "angry", "mad", "annoyed", "furious"),
}


_EN = {w: mood for mood, words in MOODS.items() for w in words if w.isascii()}
_ZH = tuple((w, mood) for mood, words in MOODS.items() for w in words if not w.isascii())
_EN_WORD = re.compile(r"[a-z]+")  # English words are matched whole: "madness" is not "mad"


@lru_cache(maxsize=8192)
def moods(text: str) -> frozenset[str]:
    """The moods ``text`` names (bounded cache: candidates' texts come back search after search).
    English words whole, Chinese words anywhere (no spaces between words); 10–20 µs for a 100-character text (loaded machine)."""
    found = {_EN[w] for w in _EN_WORD.findall(text.lower()) if w in _EN}
    if not text.isascii():
        found.update(mood for w, mood in _ZH if w in text)
    return frozenset(found)


def last_line(text: str) -> str:
    """The last line that holds anything: an excerpt's latest message, or the whole of a one-line question."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line
    return ""
