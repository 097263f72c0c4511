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


def _pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    # English words whole (\b), Chinese words anywhere (no spaces between words)
    alts = [rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w) for w in words]
    return re.compile("|".join(alts), re.IGNORECASE)


_PATTERNS = {mood: _pattern(words) for mood, words in MOODS.items()}


@lru_cache(maxsize=8192)
def moods(text: str) -> frozenset[str]:
    """The moods ``text`` names (bounded cache: candidates' texts come back search after search)."""
    return frozenset(m for m, p in _PATTERNS.items() if p.search(text))


def last_line(text: str) -> str:
    """The last line that holds anything: an excerpt's latest message, or the whole of a one-line question."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line
    return ""
