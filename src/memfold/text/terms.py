"""Keyword terms for full-text search: lower-cased, lightly stemmed words plus CJK
character bigrams (SQLite FTS5's tokenizer cannot split unspaced Chinese text)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

CJK_RANGES = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\u3040-\u30ff"  # kana
    "\uac00-\ud7af"  # hangul
)  # written without spaces between words: a word boundary cannot be seen in them
_CJK = CJK_RANGES
# a word is a run of letters/digits that are not CJK: "用Python写代码" is 用, python, 写代码
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’][^\W_{_CJK}]+)*", re.UNICODE)
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")

# Function words that carry no topic; removing them sharpens BM25 on questions.
EN_STOP = frozenset(
    """a an the and or but if of to in on at by for from with about as into onto over under
    is am are was were be been being do does did doing done have has had having
    i me my mine myself you your yours yourself he him his she her hers it its we us our ours
    they them their theirs this that these those there here what which who whom whose when
    where why how whats s t can could would should will shall may might must
    not no nor so than too very just also any some all each every both either neither
    up down out off again further then once only own same such more most other
    let lets like get got gets go going went make made
    yes yeah oh ok okay hey hi hello wow um uh haha lol really thanks thank please
    """.split()
)
ZH_STOP_CHARS = frozenset("的了吗呢吧啊呀哦嗯是在我你他她它们这那有和与就也都还要会很什么怎么")
# characters of question words and particles: a query bigram holding one says little about the topic
ZH_QUERY_STOP = frozenset("的了吗呢吧啊呀哦嗯是什么哪怎谁为我你他她它们这那就也都还很")
# characters that say nothing of a topic standing alone (a query's single characters: ``_query_grams``)
ZH_ALONE_STOP = ZH_QUERY_STOP | ZH_STOP_CHARS | frozenset("不没个一")


# Version of the terms this module makes: stored keyword terms of an older version are rebuilt
# from their text when the index is opened (``index/terms_version.py``). Bump it with any change
# to ``terms`` that changes a stored document.
TERMS_VERSION = 2  # 2: inflections meet (moved/moving/moves -> move), Porter step 1 style

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LY_BEFORE = frozenset("cdeghkmnrt")  # quickly, lovely, friendly, monthly; not family, supply, butterfly
_LY_AFTER = ("ally", "fully", "ously", "lessly")  # Porter2's -alli, -fulli, -ousli, -lessli
_KEEP = frozenset("news always series species perhaps".split())
_ING_IE = {"dying": "die", "lying": "lie", "tying": "tie"}


def _has_vowel(stem: str) -> bool:
    return any(c in "aeiou" or (c == "y" and i > 0) for i, c in enumerate(stem))


def _is_vowel(word: str, i: int) -> bool:
    c = word[i]
    return c in "aeiou" or (c == "y" and i > 0 and word[i - 1] not in _VOWELS)


def _short(stem: str) -> bool:
    """A short word (Porter2): no syllable after the first vowel-consonant pair, ending in a short
    syllable (consonant-vowel-consonant, the last not w/x/y; or vowel-consonant at the start):
    hop, mov, car, us; not cook, visit, open, fix."""
    n = len(stem)
    i = 0
    while i < n and not _is_vowel(stem, i):
        i += 1
    while i < n and _is_vowel(stem, i):
        i += 1
    if i < n - 1:  # more after the first vowel-consonant pair: R1 is not empty
        return False
    if n == 2:
        return _is_vowel(stem, 0) and not _is_vowel(stem, 1)
    return (n >= 3 and not _is_vowel(stem, n - 3) and _is_vowel(stem, n - 2) and not _is_vowel(stem, n - 1)
            and stem[-1] not in "wxy")


def _undo_ed_ing(stem: str) -> str:
    """What is left after -ed/-ing: restore a dropped e (moved -> move, hoping -> hope, created ->
    create), undo a doubled consonant (planned -> plan, hopping -> hop)."""
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if stem.endswith(_DOUBLES):
        return stem[:-1]
    if _short(stem):
        return stem + "e"
    return stem


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Inflections of an English word to one term (plural, -ed, -ing, some -ly), Porter step 1 style:
    move/moves/moved/moving -> move, care/caring -> care (car stays car), hop/hopping -> hop,
    hope/hoping -> hope. Same function at index and query time; other scripts pass through."""
    if len(word) <= 3 or not word.isascii() or word in _KEEP:
        return word
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ies", "ied")):
        return word[:-3] + ("y" if len(word) > 4 else "ie")  # ponies -> pony, tried -> try, dies -> die
    if word.endswith("es") and len(word) >= 5:
        if word.endswith(("ches", "shes", "xes", "zes")) or (word.endswith("oes") and len(word) >= 6):
            return word[:-2]  # churches, wishes, boxes, heroes (shoes -> shoe)
        return word[:-1]  # moves -> move, houses -> house
    if word.endswith("s"):
        if word.endswith(("ss", "us", "is")) or not _has_vowel(word[:-2]):
            return word  # glass, bus, analysis, yes
        return word[:-1]
    if word.endswith("eed"):
        return word[:-1] if len(word) > 5 and _has_vowel(word[:-3]) else word  # agreed -> agree; need, speed
    if word.endswith("ed") and _has_vowel(word[:-2]):  # used -> use; shed stays
        return _undo_ed_ing(word[:-2])
    if word.endswith("ing") and len(word) >= 5:
        if word in _ING_IE:
            return _ING_IE[word]
        if _has_vowel(word[:-3]):
            return _undo_ed_ing(word[:-3])  # sing, bring, spring stay
        return word
    if word.endswith("ly") and len(word) >= 6 and (word[-3] in _LY_BEFORE or word.endswith(_LY_AFTER)):
        return word[:-2]  # quickly -> quick, really -> real, hopefully -> hopeful, seriously -> serious
    return word


def normalize(text: str) -> str:
    # NFKC leaves ASCII as it is: only lower-case it
    return text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).lower()


@lru_cache(maxsize=65536)
def _word_term(word: str) -> str:
    """The term of a (normalised, non-CJK) word; "" for a stop word."""
    word = word.replace("’", "'").split("'")[0]
    return "" if not word or word in EN_STOP else _stem(word)


def _query_grams(run: str, grams: list[str]) -> list[str]:
    """A query's terms of one CJK run: the bigrams without a function character. When every bigram
    holds one (我的猫, 我的车: only 我的 and 的猫), the run's other characters stand alone (猫, 车) rather
    than 我的 deciding what matches; a run of function characters only keeps its bigrams."""
    kept = [g for g in grams if g[0] not in ZH_QUERY_STOP and g[1] not in ZH_QUERY_STOP]
    if kept:
        return kept
    return [c for c in dict.fromkeys(run) if c not in ZH_ALONE_STOP] or grams


def terms(text: str, *, query: bool = False) -> list[str]:
    """Terms of ``text``: stemmed words (stop words dropped) and, for CJK runs,
    character bigrams plus single characters of one-character runs.

    ``query=True`` also drops the Chinese function characters from the unigram fallback."""
    out: list[str] = []
    for run in _TOKEN.findall(normalize(text)):
        if run.isascii() or not _CJK_RUN.match(run):  # a token is a CJK run or has no CJK at all
            term = _word_term(run)
            if term:
                out.append(term)
        elif len(run) == 1:
            if not (query and run in ZH_STOP_CHARS):
                out.append(run)
        else:
            grams = [run[i : i + 2] for i in range(len(run) - 1)]
            if query:
                grams = _query_grams(run, grams)
            out.extend(grams)
    return out


def keyword_text(content: str, context: str = "") -> str:
    """The text of a memory that is keyword-indexed: its context (if any), then its content."""
    return f"{context}\n{content}" if context else content


def fts_document(text: str) -> str:
    """Space-joined terms for an FTS5 column (tokenised again by unicode61, which keeps them whole)."""
    return " ".join(terms(text))


class TermsMemo:
    """The keyword documents of a batch of records, each text's terms made once: a turn's context
    quotes the turn before it (``"<day> <previous turn>"``), whose terms are already known as
    that turn's content. Exact: a text's terms are its pieces' terms when it is cut at a space or
    a newline (neither joins two tokens, nor NFKC nor lower-casing across it). Bounded:
    ``max_texts`` texts (then it starts over)."""

    def __init__(self, max_texts: int = 4096):
        self.max_texts = max_texts
        self._terms: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self._terms)

    def terms(self, text: str) -> list[str]:
        got = self._terms.get(text)
        if got is None:
            if len(self._terms) >= self.max_texts:
                self._terms.clear()
            got = self._terms[text] = terms(text)
        return got

    def document(self, content: str, context: str = "") -> str:
        """``fts_document(keyword_text(content, context))``."""
        if not context:
            return " ".join(self.terms(content))
        out: list[str] = []
        for line in context.split("\n"):
            out.extend(self._line(line))
        out.extend(self.terms(content))
        return " ".join(out)

    def _line(self, line: str) -> list[str]:
        """A context line's terms: a known text after its first few words (a date) is reused."""
        head, rest = "", line
        for _ in range(4):
            if rest in self._terms:
                return (terms(head) if head else []) + self._terms[rest]
            word, sep, rest = rest.partition(" ")
            if not sep:
                break
            head = f"{head} {word}" if head else word
        return terms(line)
