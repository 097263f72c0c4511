"""Keyword terms for full-text search: lower-cased, lightly stemmed words plus CJK
character bigrams (SQLite FTS5's tokenizer cannot split unspaced Chinese text)."""

from __future__ import annotations

import re
import unicodedata

_CJK = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\u3040-\u30ff"  # kana
    "\uac00-\ud7af"  # hangul
)
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


def _stem(word: str) -> str:
    """A small suffix stripper: plural, -ing, -ed, -ly. Same function at index and query time."""
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, min_len in (("ies", 5), ("sses", 6), ("ing", 6), ("ed", 5), ("ly", 6), ("es", 5), ("s", 4)):
        if word.endswith(suffix) and len(word) >= min_len:
            if suffix == "ies":
                return word[:-3] + "y"
            if suffix == "sses":
                return word[:-2]
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "zes", "oes")):
                return word[:-1]
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            stem = word[: -len(suffix)]
            if suffix in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # running -> run, planned -> plan
            return stem
    return word


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def terms(text: str, *, query: bool = False) -> list[str]:
    """Terms of ``text``: stemmed words (stop words dropped) and, for CJK runs,
    character bigrams plus single characters of one-character runs.

    ``query=True`` also drops the Chinese function characters from the unigram fallback."""
    out: list[str] = []
    for tok in _TOKEN.findall(normalize(text)):
        if _CJK_RUN.match(tok):
            if len(tok) == 1:
                if not (query and tok in ZH_STOP_CHARS):
                    out.append(tok)
                continue
            grams = [tok[i : i + 2] for i in range(len(tok) - 1)]
            if query:
                kept = [g for g in grams if g[0] not in ZH_QUERY_STOP and g[1] not in ZH_QUERY_STOP]
                grams = kept or grams
            out.extend(grams)
        else:
            tok = tok.replace("’", "'").split("'")[0]
            if not tok or tok in EN_STOP:
                continue
            out.append(_stem(tok))
    return out


def fts_document(text: str) -> str:
    """Space-joined terms for an FTS5 column (tokenised again by unicode61, which keeps them whole)."""
    return " ".join(terms(text))
