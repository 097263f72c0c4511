"""Keyword terms made faster (``text/terms.py``): ``terms`` gives what the tokenizer always gave
(the algorithm as it was, below, is the reference), and ``TermsMemo`` — a batch's keyword
documents with each text's terms made once — gives exactly ``fts_document(keyword_text(…))``,
also where a cut at a space or a newline could have joined or changed tokens."""

from __future__ import annotations

import re
import unicodedata

import pytest

from memfold.eval.bench import synthetic_queries, synthetic_texts
from memfold.text import terms as T
from memfold.text.terms import TermsMemo, fts_document, keyword_text, terms

_CJK_RUN = re.compile(rf"^[{T._CJK}]+$")


def reference_terms(text: str, *, query: bool = False) -> list[str]:
    """``terms`` before it was made faster (session 6), kept as the reference."""
    out: list[str] = []
    for tok in T._TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if _CJK_RUN.match(tok):
            if len(tok) == 1:
                if not (query and tok in T.ZH_STOP_CHARS):
                    out.append(tok)
                continue
            grams = [tok[i: i + 2] for i in range(len(tok) - 1)]
            if query:
                kept = [g for g in grams if g[0] not in T.ZH_QUERY_STOP and g[1] not in T.ZH_QUERY_STOP]
                grams = kept or grams
            out.extend(grams)
        else:
            tok = tok.replace("’", "'").split("'")[0]
            if not tok or tok in T.EN_STOP:
                continue
            out.append(T._stem(tok))
    return out


# pieces that are hard at a cut: final sigma, combining marks, NFKC expansions (´ is " ́", ﬁ is fi),
# full-width forms, apostrophes, CJK next to Latin and digits, kana, hangul, empty and blank texts
EDGES = ["ΟΔΟΣ", "Σ", "ὈΔΥΣΣΕΎΣ said", "\u0301accent first", "e\u0301te\u0301", "´ acute", "ﬁle ﬀ ½ ㎏", "ＡＢＣ１２３",
         "don’t stop", "it's Bob's", "用Python写代码", "我的2026年计划", "カタカナ ひらがな", "한국어 문장", "", " ", "\n",
         "a  double  space", "tab\there", "end with space ", " start with space", "İstanbul ıs", "Kelvin K"]


def _corpus() -> list[str]:
    return synthetic_texts(1500) + synthetic_queries(300) + EDGES


@pytest.mark.parametrize("query", [False, True])
def test_terms_are_those_of_the_reference_tokenizer(query):
    texts = _corpus()
    texts += [f"{a}\n{b}" for a, b in zip(texts, texts[1:])] + [t.upper() for t in texts]
    differ = [t for t in texts if terms(t, query=query) != reference_terms(t, query=query)]
    assert not differ, differ[:5]


def _turn_contexts(texts: list[str], speaker: str = "") -> list[tuple[str, str]]:
    """(content, context) as the write path makes them for consecutive user turns."""
    out, prev = [], ""
    for t in texts:
        day = "2026-11-27 November 2026"
        ctx = f"{day} {prev}\n{speaker}".strip() if prev else f"{day} {speaker}".strip()
        out.append((t, ctx))
        prev = (speaker if speaker else "") + t
    return out


@pytest.mark.parametrize("speaker", ["", "Ann: ", "小王: "])
def test_the_batch_memo_gives_the_documents_of_the_texts(speaker):
    texts = _corpus()
    pairs = _turn_contexts(texts + EDGES[::-1] + [e + " " + f for e in EDGES for f in EDGES[:6]], speaker)
    pairs += [(c, "") for c, _ in pairs[:50]] + [("x", "one two three four five " + texts[0]), ("y", texts[1] + " tail"),
                                                  ("z", "a\n\nb"), (texts[2], f"day {texts[2]}\n{texts[3]}")]
    memo = TermsMemo()
    differ = [(c, x) for c, x in pairs if memo.document(c, x) != fts_document(keyword_text(c, x))]
    assert not differ, differ[:5]


def test_the_batch_memo_is_bounded():
    memo = TermsMemo(max_texts=50)
    for c, x in _turn_contexts(synthetic_texts(400)):
        assert memo.document(c, x) == fts_document(keyword_text(c, x))
        assert len(memo) <= 50


def test_the_word_cache_of_a_long_lived_process_is_bounded():
    limit = T._word_term.cache_info().maxsize
    assert limit == 65536
    terms(" ".join(f"w{i}x" for i in range(limit + 1000)))
    assert T._word_term.cache_info().currsize <= limit
