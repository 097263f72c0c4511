"""The terms of single rows of a ``KeywordIndex`` (``keywords.py``), read from its postings instead of
tokenising the rows' texts again: ``terms_held`` (the relevance floor's keyword coverage) and
``doc_terms`` (the feedback's terms of the top hits). The rows a search asks about are kept until the
index's next change, at most ``DOCS_KEPT`` of them: the next searches ask for the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

import numpy as np


class KeywordDocs:
    """Mixed into ``KeywordIndex``, whose build and search state it reads (and whose ``_changed``
    empties ``_docs`` at every change)."""

    # the terms of the rows the read path asked about are kept until the next change, at most this
    # many rows (the first kept leave first)
    DOCS_KEPT = 4096

    vocab: dict[str, int]
    pos: dict[str, int]
    alive: np.ndarray
    base_n: int
    s_ptr: np.ndarray
    s_tid: np.ndarray
    s_tf: np.ndarray
    d_terms: dict[int, tuple[np.ndarray, np.ndarray]]
    _words: list[str] | None
    _docs: dict[str, dict[str, int]]

    def terms_held(self, ids: Sequence[str], terms: Sequence[str]) -> dict[str, int]:
        """For each of ``ids`` in the index, how many of the distinct ``terms`` its document holds
        (the relevance floor's keyword coverage, without tokenising the row's text again)."""
        wanted = set(terms)
        out: dict[str, int] = {}
        for mid in ids:
            doc = self._doc(mid)
            if doc is not None:
                out[mid] = len(wanted.intersection(doc)) if wanted else 0
        return out

    def doc_terms(self, ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """For each of ``ids`` in the index, its document's terms with their counts (in term-id order,
        not the text's): what tokenising the row's indexed text gives, without tokenising it."""
        out: dict[str, dict[str, int]] = {}
        for mid in ids:
            doc = self._doc(mid)
            if doc is not None:
                out[mid] = dict(doc)  # the caller's own
        return out

    def _doc(self, mid: str) -> dict[str, int] | None:
        """The terms (with counts) of the live row ``mid``, kept until the next change (``DOCS_KEPT``
        rows at most); None when the index does not hold it."""
        doc = self._docs.get(mid)
        if doc is not None:
            return doc
        s = self.pos.get(mid)
        if s is None or not self.alive[s]:
            return None
        words = self._words
        if words is None or len(words) != len(self.vocab):
            if words is None or len(words) > len(self.vocab):
                words = list(self.vocab)
            else:  # new terms only: ids are handed out in order
                words.extend(islice(self.vocab, len(words), None))
            self._words = words
        if s < self.base_n:
            a, b = int(self.s_ptr[s]), int(self.s_ptr[s + 1])
            tids, tfs = self.s_tid[a:b], self.s_tf[a:b]
        else:
            tids, tfs = self.d_terms[s]
        doc = dict(zip(map(words.__getitem__, tids.tolist()), tfs.astype(np.int64).tolist()))
        kept = self._docs
        if len(kept) >= self.DOCS_KEPT:
            del kept[next(iter(kept))]
        kept[mid] = doc
        return doc
