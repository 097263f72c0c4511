"""An in-process inverted index of one namespace's keyword terms, scored with BM25 in numpy and
updated incrementally (the keyword twin of ``vectors.VectorMatrix``).

BM25 as both backends define it (SPEC §5): k1 1.2, b 0.75; N, the average length and document
frequencies count the namespace's searchable rows only (another user's data never changes your
scores); idf = ln(1 + (N − df + 0.5)/(df + 0.5)) (Lucene's form: positive however small the
namespace, where SQLite FTS5's ln((N − df + 0.5)/(df + 0.5)) floored at 1e-6 made every term of
more than half of a small user's memories worthless); a row's length is its number of terms.

Postings live in a compressed base (CSR by term, built in bulk with numpy) plus a small delta of
recent rows; the delta is folded into the base when it grows past a fraction of it. A changed or
removed row leaves its slot dead (masked at scoring) and dead slots are compacted away in bulk."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from .keyword_docs import KeywordDocs
from .topk import best_positive

K1, B = 1.2, 0.75


def bm25_weights(tf: np.ndarray, dl: np.ndarray, avgdl: float, idf: float | np.ndarray) -> np.ndarray:
    """idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · dl / avgdl)), operation by operation as written
    (the same bits), in two arrays instead of seven temporaries (a search weighs up to hundreds of
    thousands of postings at 100k rows)."""
    w = np.multiply(idf, tf)
    w *= K1 + 1.0
    den = np.multiply(dl, B)
    den /= avgdl
    den += 1.0 - B
    den *= K1
    den += tf
    w /= den
    return w


def idf_of(n: int, df: int) -> float:
    return float(np.log1p((n - df + 0.5) / (df + 0.5)))


class KeywordIndex(KeywordDocs):
    # the delta is folded into the base past this many postings (or a quarter of the base), and dead
    # slots are compacted away past this many (and half the slots): sizes stay proportional to the data
    FOLD_MIN_POSTINGS = 20_000
    COMPACT_MIN_DEAD = 1024
    # the weighted postings of the terms searched since the last change are kept (common terms' lists
    # come back query after query) in at most this share of the bytes of the index's postings
    # (``POSTING_BYTES`` each): a term of the base keeps its weights only (8 bytes a posting, its slots
    # are a view of ``t_slot``), one with delta postings its slots too (16). Half: room for the weights
    # of every posting of the base (at a quarter the first terms searched filled it, and on the 2k
    # bench a third of the lookups weighed their term again at every search; docs/benchmarks.md)
    MEMO_SHARE = 0.5
    POSTING_BYTES = 16  # t_slot, t_tf, s_tid, s_tf: 4 bytes each

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.df = np.zeros(0, dtype=np.int64)
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}  # id -> live slot
        self.dl = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.n = 0  # slots used
        self.live = 0
        self.total_len = 0.0
        # base postings: CSR by term over slots < base_n; the same pairs by slot for removals
        self.base_n = 0
        self.t_ptr = np.zeros(1, dtype=np.int64)
        self.t_slot = np.zeros(0, dtype=np.int32)
        self.t_tf = np.zeros(0, dtype=np.float32)
        self.s_ptr = np.zeros(1, dtype=np.int64)
        self.s_tid = np.zeros(0, dtype=np.int32)
        self.s_tf = np.zeros(0, dtype=np.float32)  # the term frequencies in ``s_tid``'s order
        # delta: slots >= base_n
        self.d_post: dict[int, list[tuple[int, int]]] = {}
        self.d_terms: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.d_size = 0
        self.d_arrays: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}  # d_post[tid] as arrays, by its length
        self.seq = 0
        self._words: list[str] | None = None  # term by id (``doc_terms``); rebuilt after a renumbering
        self._memo: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # term id -> weighted postings (``_weighted``)
        self._memo_size = 0  # postings in ``_memo``
        self._memo_bytes = 0  # bytes ``_memo``'s arrays hold of their own (a view of ``t_slot`` holds none)
        self._docs: dict[str, dict[str, int]] = {}  # id -> its terms with counts (``_doc``), until a change

    # ---- building ------------------------------------------------------------------
    def _tids(self, tokens: list[str]) -> np.ndarray:
        vocab = self.vocab
        for t in dict.fromkeys(tokens):  # new terms get the next ids; the mapping below runs in C
            if t not in vocab:
                vocab[t] = len(vocab)
        out = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        if len(vocab) > len(self.df):  # amortised growth: capacity at most doubles when it is exceeded
            grown = np.zeros(max(len(vocab), 2 * len(self.df), 64), dtype=np.int64)
            grown[: len(self.df)] = self.df
            self.df = grown
        return out

    def _grow_slots(self, need: int) -> None:
        cap = len(self.dl)
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 256)
        dl = np.zeros(new_cap, dtype=np.float64)
        dl[: self.n] = self.dl[: self.n]
        alive = np.zeros(new_cap, dtype=bool)
        alive[: self.n] = self.alive[: self.n]
        self.dl, self.alive = dl, alive

    def upsert(self, ids: Sequence[str], documents: Sequence[str]) -> None:
        """(Re)place rows: each document is its space-separated terms."""
        if not ids:
            return
        self._changed()
        if len(set(ids)) != len(ids):  # the last document of an id wins
            last = dict(zip(ids, documents))
            ids, documents = list(last), list(last.values())
        self.remove([mid for mid in ids if mid in self.pos])
        token_lists = [d.split() for d in documents]
        lens = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        flat = self._tids(list(chain.from_iterable(token_lists)))
        first = self.n
        self._grow_slots(self.n + len(ids))
        slots = np.arange(first, first + len(ids), dtype=np.int64)
        for i, mid in enumerate(ids):
            self.pos[mid] = first + i
        self.ids.extend(ids)
        self.n += len(ids)
        self.dl[first: self.n] = lens
        self.alive[first: self.n] = True
        self.live += len(ids)
        self.total_len += float(lens.sum())
        # unique (slot, term) pairs with their counts
        doc_of = np.repeat(slots, lens)
        vsize = max(len(self.vocab), 1)
        keys, tf = np.unique(doc_of * vsize + flat, return_counts=True)
        pair_slot, pair_tid = keys // vsize, keys % vsize
        np.add.at(self.df, pair_tid, 1)
        if first == 0 and self.base_n == 0 and not self.d_terms:
            self._set_base(pair_slot, pair_tid, tf)
            return
        bounds = np.searchsorted(pair_slot, slots, side="left").tolist() + [len(pair_slot)]
        tids_l, tf_l = pair_tid.tolist(), tf.tolist()
        for j, s in enumerate(slots.tolist()):
            a, b = bounds[j], bounds[j + 1]
            self.d_terms[s] = (pair_tid[a:b].astype(np.int32), tf[a:b].astype(np.float32))
            for k in range(a, b):
                self.d_post.setdefault(tids_l[k], []).append((s, tf_l[k]))
        self.d_size += len(pair_slot)
        if self.d_size > max(self.FOLD_MIN_POSTINGS, len(self.t_slot) // 4):
            self._fold()

    def _set_base(self, pair_slot: np.ndarray, pair_tid: np.ndarray, tf: np.ndarray) -> None:
        """Base postings from (slot, term, tf) triples sorted by slot."""
        self._changed()
        self.base_n = self.n
        self.s_tid = pair_tid.astype(np.int32)
        self.s_tf = tf.astype(np.float32)
        self.s_ptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(pair_slot, minlength=self.n), out=self.s_ptr[1:])
        order = np.argsort(pair_tid, kind="stable")
        self.t_slot = pair_slot[order].astype(np.int32)
        self.t_tf = tf[order].astype(np.float32)
        self.t_ptr = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(pair_tid, minlength=len(self.vocab)), out=self.t_ptr[1:])
        self.d_post, self.d_terms, self.d_size, self.d_arrays = {}, {}, 0, {}

    def _triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (slot, term, tf) of live slots, sorted by slot."""
        if self.base_n:
            counts = np.diff(self.s_ptr)
            slots = np.repeat(np.arange(self.base_n, dtype=np.int64), counts)
            parts = [(slots, self.s_tid.astype(np.int64), self.s_tf)]
        else:
            parts = []
        for s in sorted(self.d_terms):
            tids, tfs = self.d_terms[s]
            parts.append((np.full(len(tids), s, dtype=np.int64), tids.astype(np.int64), tfs))
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
        slot = np.concatenate([p[0] for p in parts])
        tid = np.concatenate([p[1] for p in parts])
        tf = np.concatenate([p[2] for p in parts])
        keep = self.alive[slot]
        return slot[keep], tid[keep], tf[keep]

    def _fold(self) -> None:
        """Fold the delta into the base and drop dead slots (renumbering the live ones)."""
        slot, tid, tf = self._triples()
        live = np.flatnonzero(self.alive[: self.n])
        renum = np.full(self.n, -1, dtype=np.int64)
        renum[live] = np.arange(len(live))
        self.ids = [self.ids[i] for i in live.tolist()]
        self.pos = {mid: i for i, mid in enumerate(self.ids)}
        self.dl = np.ascontiguousarray(self.dl[live])
        self.alive = np.ones(len(live), dtype=bool)
        self.n = self.live = len(live)
        new_slot = renum[slot]
        # terms no live row uses any more leave the vocabulary (it stays proportional to the live data)
        used = np.flatnonzero(self.df[: len(self.vocab)] > 0)
        if len(used) < len(self.vocab):
            renum_t = np.full(len(self.vocab), -1, dtype=np.int64)
            renum_t[used] = np.arange(len(used))
            words = list(self.vocab)
            self.vocab = {words[i]: j for j, i in enumerate(used.tolist())}
            self._words = None
            self.df = np.ascontiguousarray(self.df[used])
            tid = renum_t[tid]
        order = np.lexsort((tid, new_slot))
        self._set_base(new_slot[order], tid[order], tf[order].astype(np.float32))

    def _terms_of(self, slot: int) -> np.ndarray:
        if slot < self.base_n:
            return self.s_tid[self.s_ptr[slot]: self.s_ptr[slot + 1]]
        return self.d_terms[slot][0]

    def remove(self, ids: Sequence[str]) -> None:
        if ids:
            self._changed()
        for mid in ids:
            s = self.pos.pop(mid, None)
            if s is None or not self.alive[s]:
                continue
            self.alive[s] = False
            self.live -= 1
            self.total_len -= float(self.dl[s])
            np.subtract.at(self.df, self._terms_of(s).astype(np.int64), 1)
            if s >= self.base_n:
                del self.d_terms[s]  # its postings stay in d_post, masked by ``alive``
        dead = self.n - self.live
        if dead > self.COMPACT_MIN_DEAD and dead > self.n // 2:
            self._fold()

    # ---- snapshot (index/snapshot.py) --------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Live rows only: the delta is folded in and dead slots dropped first."""
        if self.d_terms or self.d_post or self.live != self.n:
            self._fold()
        vocab = list(self.vocab)
        return {"k_ids": np.array(self.ids, dtype=str).reshape(-1), "k_vocab": np.array("\n".join(vocab)),
                "k_dl": self.dl[: self.n], "k_df": self.df[: len(vocab)], "k_t_ptr": self.t_ptr,
                "k_t_slot": self.t_slot, "k_t_tf": self.t_tf, "k_s_ptr": self.s_ptr, "k_s_tid": self.s_tid,
                "k_s_tf": self.s_tf}

    @classmethod
    def from_state(cls, st: dict[str, np.ndarray]) -> "KeywordIndex":
        k = cls()
        k.ids = st["k_ids"].tolist()
        text = str(st["k_vocab"])
        k.vocab = {t: i for i, t in enumerate(text.split("\n"))} if text else {}
        k.n = k.live = k.base_n = len(k.ids)
        k.pos = {mid: i for i, mid in enumerate(k.ids)}
        k.dl = np.asarray(st["k_dl"], dtype=np.float64)
        k.alive = np.ones(k.n, dtype=bool)
        k.total_len = float(k.dl.sum())
        k.df = np.asarray(st["k_df"], dtype=np.int64)
        k.t_ptr, k.t_slot, k.t_tf = st["k_t_ptr"], st["k_t_slot"], st["k_t_tf"]
        k.s_ptr, k.s_tid = st["k_s_ptr"], st["k_s_tid"]
        # a snapshot cut before ``s_tf`` existed: term-major -> slot-major (postings sort by term, then slot)
        k.s_tf = st["k_s_tf"] if "k_s_tf" in st else k.t_tf[np.argsort(k.t_slot, kind="stable")]
        if len(k.dl) != k.n or len(k.df) != len(k.vocab) or len(k.t_ptr) != len(k.vocab) + 1 \
                or len(k.s_ptr) != k.n + 1 or len(k.t_slot) != len(k.s_tid) or len(k.s_tf) != len(k.s_tid):
            raise ValueError("inconsistent keyword arrays")
        return k

    def __len__(self) -> int:
        return self.live

    def footprint(self) -> dict[str, int]:
        """Sizes that must stay proportional to the live data (the soak test checks them)."""
        return {"live": self.live, "slots": self.n, "slot_capacity": len(self.dl), "vocab": len(self.vocab),
                "df_capacity": len(self.df), "delta_postings": self.d_size, "delta_rows": len(self.d_terms),
                "postings": len(self.t_slot) + self.d_size, "kept_postings": self._memo_size,
                "kept_bytes": self._memo_bytes,
                "nbytes": int(sum(a.nbytes for a in (self.df, self.dl, self.alive, self.t_ptr, self.t_slot,
                                                     self.t_tf, self.s_ptr, self.s_tid, self.s_tf)))}

    # ---- search --------------------------------------------------------------------
    def _delta_postings(self, tid: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The delta's postings of a term as (slots, tfs) arrays, converted once per change of its list
        (a term's list only grows until the delta is folded: its length tells whether it changed)."""
        extra = self.d_post.get(tid)
        if not extra:
            return None
        got = self.d_arrays.get(tid)
        if got is None or got[0] != len(extra):
            d = np.asarray(extra, dtype=np.int64)
            got = self.d_arrays[tid] = (len(extra), d[:, 0], d[:, 1].astype(np.float32))
        return got[1], got[2]

    def _weighted(self, tid: int, avgdl: float) -> tuple[np.ndarray, np.ndarray] | None:
        """A term's postings (slots, then the delta's) with their BM25 weights; kept until the index
        changes (``_memo``), within ``memo_budget()`` bytes. Weighing a term alone gives
        each posting the bits the one pass over every term's postings gave (the same operations on the
        same operands, element by element: ``bm25_weights``)."""
        got = self._memo.get(tid)
        if got is not None:
            return got
        slot_parts, tf_parts = [], []
        if tid + 1 < len(self.t_ptr):
            a, b = int(self.t_ptr[tid]), int(self.t_ptr[tid + 1])
            if b > a:
                slot_parts.append(self.t_slot[a:b])
                tf_parts.append(self.t_tf[a:b])
        delta = self._delta_postings(tid)
        if delta is not None:
            slot_parts.append(delta[0])
            tf_parts.append(delta[1])
        if not slot_parts:
            return None
        # a base term's slots stay the view of ``t_slot`` they are (int32: ``bincount`` reads them as it
        # read the int64 copy, value for value); delta postings make a copy of both
        slots = slot_parts[0] if len(slot_parts) == 1 else np.concatenate(slot_parts, dtype=np.int64)
        weights = bm25_weights(np.concatenate(tf_parts, dtype=np.float64), self.dl[slots], avgdl,
                               idf_of(self.live, int(self.df[tid])))
        own = weights.nbytes + (0 if len(slot_parts) == 1 and delta is None else slots.nbytes)
        if self._memo_bytes + own <= self.memo_budget():
            self._memo[tid] = (slots, weights)
            self._memo_size += len(slots)
            self._memo_bytes += own
        return slots, weights

    def memo_budget(self) -> int:
        """Bytes the kept weights may hold: ``MEMO_SHARE`` of the bytes of the index's postings."""
        return int(self.MEMO_SHARE * self.POSTING_BYTES * (len(self.t_slot) + self.d_size))

    def _changed(self) -> None:
        """Rows, lengths or slots changed: every kept weight is stale."""
        self._memo.clear()
        self._memo_size = 0
        self._memo_bytes = 0
        self._docs.clear()

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        if self.live == 0 or limit <= 0:
            return []
        avgdl = self.total_len / self.live if self.total_len > 0 else 1.0
        # every term's weighted postings, term after term: the sums below add them in the same order as
        # one BM25 pass per term
        slot_parts, weight_parts = [], []
        for t in dict.fromkeys(terms):
            tid = self.vocab.get(t)
            if tid is None or self.df[tid] <= 0:
                continue
            got = self._weighted(tid, avgdl)
            if got is not None:
                slot_parts.append(got[0])
                weight_parts.append(got[1])
        if not slot_parts:
            return []
        # term after term, each row's weights added in place: the additions ``bincount`` made over the
        # terms' postings concatenated, in the same order (a term holds a row once), without the copy
        scores = np.zeros(self.n)
        for slots, weights in zip(slot_parts, weight_parts):
            np.add.at(scores, slots, weights)
        if self.live != self.n:
            scores[~self.alive[: self.n]] = 0.0
        # best first; equal scores by slot (insertion order), as stable as the SQL backends' tie-break
        cand = best_positive(scores, limit)
        return [(self.ids[s], float(scores[s])) for s in cand.tolist()]
