"""Soft word matching through static word vectors (issue 16, session 8), a policy key
(``word_match_weight``, 0 = off) and an optional extra (``pip install 'memfold[wordvec]'``).

The vocabulary gap: a question says "outdoor activities", the memory says "went hiking on the
trail". BM25 needs the same word; the sentence vector (USE) of a whole turn does not always
bridge it. A static table of word vectors does, word by word: each query word is matched with the
closest word of a candidate (cosine of their vectors) and each word of the candidate with the
closest query word; the candidate's *soft match* is the harmonic mean of the two averages (soft
recall and soft precision, as BERTScore does with contextual vectors). It is min-max scaled over
the fused candidates and mixed in: ``fused' = (1 - w) · fused + w · soft``. It only reorders the
candidates the keyword and vector sides already found (no new candidates, nothing stored).

The table is WordLlama's ``l2_supercat_256`` (MIT licence; 32,000 Llama-2 tokens × 256 dims,
16 MB in float16), bundled in the ``wordllama`` wheel. Its files are read directly (the
``safetensors`` and ``tokenizers`` packages it depends on): importing ``wordllama`` itself would
configure the root logger, and its loader looks for the tokenizer in a folder the wheel does not
have and then tries to download it. A word's vector is the mean of its tokens' rows, normalised.

The table is English-centric (the Llama-2 tokenizer spells most Chinese characters as raw bytes),
so only ASCII words take part, and a query whose letters are mostly CJK (a share of at least
``CJK_GATE``) is left as it is: measured on MADial zh, Chinese excerpts' few Latin words
(labels, loanwords) only added noise (docs/benchmarks.md, "Issue 16, session 8")."""

from __future__ import annotations

import importlib.util
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...models import MemoryRecord
from ...policy import Policy
from ...text.terms import CJK_RANGES, terms
from .rank_keywords import doc_terms

WEIGHTS = ("weights", "l2_supercat_256.safetensors")  # inside the installed wordllama package
TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
TENSOR = "embedding.weight"
CJK_GATE = 0.2  # a query whose letters are at least this share CJK is not soft-matched
MIN_QUERY_WORD = 3  # query words shorter than this are not matched ("go", "do": no meaning of their own)
TERM_CACHE = 16_384  # word vectors kept (256 float32 each: 16 MB at most)
TEXT_CACHE = 1_024  # candidate texts' word matrices kept (their words' vectors; a turn has ~15 words)
INSTALL_HINT = "word_match_weight > 0 needs the optional word vectors: pip install 'memfold[wordvec]'"

_CJK = re.compile(f"[{CJK_RANGES}]")

Fused = dict[str, tuple[float, float, float]]


def package_dir() -> Path:
    """The installed ``wordllama`` package's folder (found without importing it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(INSTALL_HINT)
    return Path(next(iter(spec.submodule_search_locations)))


class WordVectors:
    """The static table and its tokenizer, loaded on first use (one per process, ``word_vectors``)."""

    def __init__(self, folder: Path):
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(INSTALL_HINT) from exc
        weights, tokenizer = folder.joinpath(*WEIGHTS), folder.joinpath(*TOKENIZER)
        for p in (weights, tokenizer):
            if not p.is_file():
                raise ConfigError(f"{INSTALL_HINT} (missing {p})")
        self.table = np.ascontiguousarray(load_file(str(weights))[TENSOR])  # float16 as stored: 16 MB
        self.tokenizer: Any = Tokenizer.from_file(str(tokenizer))
        self.dim = int(self.table.shape[1])

    def embed(self, words: Sequence[str]) -> np.ndarray:
        """One normalised vector per word: the mean of its tokens' rows (zeros for a word of no token)."""
        out = np.zeros((len(words), self.dim), dtype=np.float32)
        for i, enc in enumerate(self.tokenizer.encode_batch(list(words), add_special_tokens=False)):
            if enc.ids:
                out[i] = self.table[np.asarray(enc.ids)].astype(np.float32).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


_lock = threading.Lock()
_loaded: dict[str, WordVectors] = {}


def word_vectors() -> WordVectors:
    """The process's table (read once; a clear error when the optional extra is not installed)."""
    with _lock:
        wv = _loaded.get("table")
        if wv is None:
            wv = _loaded["table"] = WordVectors(package_dir())
        return wv


_terms: OrderedDict[str, np.ndarray] = OrderedDict()  # word -> vector, least recently used first


def vectors_of(words: Sequence[str]) -> np.ndarray:
    """The words' vectors, one row each; the words not seen lately are embedded in one batch (a bounded
    cache of ``TERM_CACHE`` words: the same words come back query after query)."""
    wv = word_vectors()
    if not words:
        return np.zeros((0, wv.dim), dtype=np.float32)
    with _lock:
        missing = [w for w in dict.fromkeys(words) if w not in _terms]
    fresh = dict(zip(missing, wv.embed(missing))) if missing else {}
    with _lock:
        rows = []
        for w in words:
            v = fresh.get(w)
            if v is None:
                v = _terms.get(w)
                if v is None:  # evicted by another thread meanwhile
                    v = fresh[w] = wv.embed([w])[0]
                else:
                    _terms.move_to_end(w)
            rows.append(v)
        for w, v in fresh.items():
            _terms[w] = v
        while len(_terms) > TERM_CACHE:
            _terms.popitem(last=False)
    return np.stack(rows)


def clear_caches() -> None:
    """Forget the cached word vectors and candidate matrices (the table stays loaded)."""
    with _lock:
        _terms.clear()
    text_matrix.cache_clear()


def term_cache_size() -> int:
    return len(_terms)


def matchable(word: str) -> bool:
    return word.isascii() and word.isalpha()


def mostly_cjk(text: str) -> bool:
    """At least ``CJK_GATE`` of the text's letters are CJK characters."""
    letters = sum(ch.isalpha() for ch in text)
    return letters > 0 and len(_CJK.findall(text)) / letters >= CJK_GATE


def query_words(query: str) -> list[str]:
    """The query's words that take part (distinct, ASCII letters, at least ``MIN_QUERY_WORD`` long);
    none for a mostly-CJK query."""
    if mostly_cjk(query):
        return []
    return [t for t in dict.fromkeys(terms(query, query=True)) if matchable(t) and len(t) >= MIN_QUERY_WORD]


@lru_cache(maxsize=TEXT_CACHE)
def text_matrix(text: str) -> np.ndarray:
    """The vectors of a text's matchable words, one row each (bounded cache: candidates recur)."""
    return vectors_of([t for t in doc_terms(text) if matchable(t)])


def soft_match(qvecs: np.ndarray, text: str) -> float:
    """The harmonic mean of two soft overlaps between the query words' vectors ``qvecs`` and the words
    of ``text``: each query word's best cosine with a word of the text, averaged (recall), and each word
    of the text's best cosine with a query word, averaged (precision). Recall alone favours long texts
    (more words, more chances): measured, it returned 326 tokens at k = 10 on LoCoMo against 317.
    0 when either side has no word."""
    words = text_matrix(text)
    if not len(qvecs) or not len(words):
        return 0.0
    sims = qvecs @ words.T
    recall = float(sims.max(axis=1).mean())  # how well the query's words are met
    precision = float(sims.max(axis=0).mean())  # how much of the text is about them
    return 2 * recall * precision / (recall + precision) if recall + precision > 1e-9 else 0.0


def with_word_match(fused: Fused, query: str, records: Callable[[list[str]], Mapping[str, MemoryRecord]],
                    pol: Policy, memo: dict[str, float] | None = None) -> Fused:
    """``fused`` with each candidate's soft match mixed in by ``word_match_weight`` (unchanged at 0, for
    a query without matchable words, and for a mostly-CJK query). ``records``: the candidates' rows by id
    (the read path's, so none is read twice); a candidate's content is matched, not its context. ``memo``:
    soft matches already worked out for this query (the fusion is redone after the feedback)."""
    w = pol.word_match_weight
    if w <= 0 or not fused:
        return fused
    qwords = query_words(query)
    if not qwords:
        return fused
    memo = {} if memo is None else memo
    todo = [m for m in fused if m not in memo]
    if todo:
        qvecs = vectors_of(qwords)
        rows = records(todo)
        memo.update((m, soft_match(qvecs, r.content) if (r := rows.get(m)) is not None else 0.0) for m in todo)
    soft = {m: memo[m] for m in fused}
    lo, hi = min(soft.values()), max(soft.values())
    span = hi - lo
    return {m: ((1.0 - w) * f + w * ((soft[m] - lo) / span if span > 1e-9 else 0.0), k, v)
            for m, (f, k, v) in fused.items()}
