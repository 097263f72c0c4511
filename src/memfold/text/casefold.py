"""Lower-casing for substring tests that stand in for case-insensitive regular expressions."""

from __future__ import annotations

# what ``(?i)`` also takes for an ASCII letter: İ ı for i, ſ for s, the Kelvin sign for k
_FOLD = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
_FOLDED = ("\u0130", "\u0131", "\u017f", "\u212a")


def lower_as_regex(text: str) -> str:
    """``text`` lower-cased so that an ASCII word is in it exactly where ``(?i)`` would match it
    (one character for one: positions are kept)."""
    if not text.isascii() and any(map(text.__contains__, _FOLDED)):
        text = text.translate(_FOLD)
    return text.lower()
