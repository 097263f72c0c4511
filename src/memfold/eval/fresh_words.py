"""Synthetic facts and questions with never-seen words, in English and Chinese: every call brings
new keyword terms, the load that once made the keyword index grow without bound. Used by the soak
test and ``benchmarks/soak.py``."""

from __future__ import annotations

import random

SYLLABLES = "ka lo mi ren tu vash pel dor quin sab fet gri hol jun mox".split()
CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]


class FreshWords:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.n = 0

    def en(self) -> str:
        self.n += 1
        return "".join(self.rng.choice(SYLLABLES) for _ in range(3)) + str(self.n)

    def zh(self) -> str:
        return "".join(self.rng.choice(CJK) for _ in range(3))

    def fact(self, lang: str) -> str:
        if lang == "zh":
            return f"我的朋友{self.zh()}喜欢去{self.zh()}喝{self.zh()}茶"
        return f"My friend {self.en()} likes walking to {self.en()} with {self.en()}"

    def query(self, lang: str) -> str:
        return f"{self.zh()}在哪里" if lang == "zh" else f"where does {self.en()} go"
