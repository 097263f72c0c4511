"""The in-process search structures fold their delta and compact their dead slots as they are
changed (thresholds lowered), and search the same before and after: BM25 and cosine recomputed by
brute force from the live rows are the oracle."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from memfold.index.keywords import K1, B, KeywordIndex, bm25_weights
from memfold.index.topk import best_positions, best_positive
from memfold.index.vectors import VectorMatrix, best_set

WORDS = ("apple river stone cloud violin tiger copper lantern meadow rocket harbor pepper glacier canyon orchid "
         "falcon marble velvet thunder bamboo saddle comet walnut ember prism quartz").split()


def _bm25(corpus: dict[str, str], query: list[str]) -> dict[str, float]:
    docs = {mid: d.split() for mid, d in corpus.items()}
    n = len(docs)
    avgdl = sum(map(len, docs.values())) / n
    out: dict[str, float] = {}
    for mid, toks in docs.items():
        tf = Counter(toks)
        score = 0.0
        for t in dict.fromkeys(query):
            if tf[t]:
                df = sum(1 for d in docs.values() if t in d)
                idf = math.log1p((n - df + 0.5) / (df + 0.5))
                score += idf * tf[t] * (K1 + 1) / (tf[t] + K1 * (1 - B + B * len(toks) / avgdl))
        if score > 0:
            out[mid] = score
    return out


def _same_keyword_results(k: KeywordIndex, corpus: dict[str, str], rng: random.Random) -> None:
    assert len(k) == len(corpus)
    for _ in range(8):
        query = rng.sample(WORDS, 3)
        got = dict(k.search(query, len(corpus) + 5))
        want = _bm25(corpus, query)
        assert got.keys() == want.keys()
        assert all(got[m] == pytest.approx(want[m], rel=1e-5) for m in want)
    # each row's terms as the index holds them (the keyword feedback reads them instead of tokenising)
    some = rng.sample(sorted(corpus), min(6, len(corpus))) + ["gone"]
    held = k.doc_terms(some)
    assert held.keys() == set(some) - {"gone"}
    assert all(held[m] == Counter(corpus[m].split()) for m in held)


def test_keyword_index_folds_its_delta_and_compacts_dead_slots(monkeypatch) -> None:
    monkeypatch.setattr(KeywordIndex, "FOLD_MIN_POSTINGS", 40)
    monkeypatch.setattr(KeywordIndex, "COMPACT_MIN_DEAD", 8)
    rng = random.Random(7)
    corpus = {f"m{i}": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for i in range(30)}
    k = KeywordIndex()
    k.upsert(list(corpus), list(corpus.values()))  # a load: straight into the base
    assert k.footprint()["delta_postings"] == 0 and k.base_n == 30
    _same_keyword_results(k, corpus, rng)
    # one row at a time goes to the delta, which is folded into the base past the threshold
    folds = 0
    for i in range(30, 80):
        mid, doc = f"m{i}", " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        before, bound = k.footprint()["delta_postings"], max(40, len(k.t_slot) // 4) + 9
        k.upsert([mid], [doc])
        corpus[mid] = doc
        after = k.footprint()
        assert after["delta_postings"] <= bound
        if after["delta_postings"] < before:
            folds += 1
            assert after["delta_postings"] == after["delta_rows"] == 0 and k.base_n == len(corpus)
        _same_keyword_results(k, corpus, rng)
    assert folds >= 3
    # changed rows leave dead slots; removals past the threshold (and half the slots) compact them away
    for mid in list(corpus)[:10]:
        corpus[mid] = " ".join(rng.choice(WORDS) for _ in range(4))
        k.upsert([mid], [corpus[mid]])
    _same_keyword_results(k, corpus, rng)
    compactions = 0
    for mid in list(corpus)[:70]:
        slots = k.footprint()["slots"]
        k.remove([mid])
        del corpus[mid]
        if k.footprint()["slots"] < slots:
            compactions += 1
            assert k.footprint()["slots"] == k.footprint()["live"] == len(corpus)
            # terms no live row uses any more have left the vocabulary
            assert k.footprint()["vocab"] == len({t for d in corpus.values() for t in d.split()})
        _same_keyword_results(k, corpus, rng)
    assert compactions >= 1
    assert k.footprint()["slots"] <= 2 * len(corpus) + 8 + 1


def test_keyword_index_snapshot_state_round_trip() -> None:
    """A snapshot's arrays give the same searches and row terms, also one cut before the per-row term
    frequencies were stored (they are derived from the postings then)."""
    rng = random.Random(11)
    corpus = {f"m{i}": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for i in range(40)}
    k = KeywordIndex()
    k.upsert(list(corpus)[:20], list(corpus.values())[:20])
    k.upsert(list(corpus)[20:], list(corpus.values())[20:])  # a delta, folded by ``state``
    state = k.state()
    old_format = {name: arr for name, arr in state.items() if name != "k_s_tf"}
    for st in (state, old_format):
        again = KeywordIndex.from_state(st)
        _same_keyword_results(again, corpus, rng)
        assert np.array_equal(again.s_tf, k.s_tf)


def _same_vector_results(v: VectorMatrix, rows: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    assert len(v) == len(rows)
    ids = list(rows)
    mat = np.stack([rows[m] for m in ids])
    for _ in range(5):
        q = rng.standard_normal(mat.shape[1]).astype(np.float32)
        q /= np.linalg.norm(q)
        exact = mat @ q
        order = sorted(range(len(ids)), key=lambda i: -exact[i])[:7]
        got = v.search(q, 7)
        assert [m for m, _ in got] == [ids[i] for i in order]
        assert [s for _, s in got] == pytest.approx([float(exact[i]) for i in order], abs=1e-5)


def _unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    x = rng.standard_normal(dim).astype(np.float32)
    return x / np.linalg.norm(x)


def test_vector_matrix_compacts_dead_rows(monkeypatch) -> None:
    monkeypatch.setattr(VectorMatrix, "COMPACT_MIN_DEAD", 6)
    rng = np.random.default_rng(3)
    dim = 16
    rows = {f"v{i}": _unit(rng, dim) for i in range(40)}
    v = VectorMatrix(dim)
    v.upsert(list(rows), np.stack(list(rows.values())))
    _same_vector_results(v, rows, rng)
    compactions = 0
    for mid in list(rows)[:32]:
        before = v.footprint()["rows"]
        v.remove([mid])
        del rows[mid]
        if v.footprint()["rows"] < before:
            compactions += 1
            assert v.footprint()["rows"] == v.footprint()["ids"] == len(rows) and v.dead == 0
        _same_vector_results(v, rows, rng)
    assert compactions >= 1
    assert v.footprint()["rows"] <= 2 * len(rows) + 6 + 1
    # a removed id may come back, changed rows are replaced in place; results stay exact
    for mid in ("v0", "v39"):
        rows[mid] = _unit(rng, dim)
        v.upsert([mid], rows[mid][None, :])
    _same_vector_results(v, rows, rng)


def test_keyword_index_row_terms_after_the_vocabulary_is_renumbered(monkeypatch) -> None:
    """Compaction drops unused terms and renumbers the rest; new terms then refill the vocabulary to
    its old size: a row's terms must still be read through the new numbering."""
    monkeypatch.setattr(KeywordIndex, "COMPACT_MIN_DEAD", 2)
    k = KeywordIndex()
    k.upsert(["a", "b", "c", "d", "e", "f"], ["apple river", "stone cloud", "violin tiger", "copper lantern",
                                             "meadow rocket", "apple stone"])
    assert k.doc_terms(["a"]) == {"a": {"apple": 1, "river": 1}}  # the term list is built
    k.remove(["b", "c", "d", "e"])  # compacted: cloud, violin, tiger, copper, lantern, meadow, rocket leave
    k.upsert(["g", "h"], ["harbor pepper glacier canyon orchid falcon marble", "velvet"])
    assert len(k.vocab) > 3
    held = k.doc_terms(["a", "f", "g", "h"])
    assert held == {"a": {"apple": 1, "river": 1}, "f": {"apple": 1, "stone": 1},
                    "g": dict.fromkeys("harbor pepper glacier canyon orchid falcon marble".split(), 1), "h": {"velvet": 1}}


def test_best_set_is_what_argpartition_picks() -> None:
    """The vector shortlist's selection: the same rows as ``argpartition`` of all the scores, on long
    arrays of distinct values, with dead rows (-inf), and with ties at the cut (then it is argpartition)."""
    rng = np.random.default_rng(5)
    for n, c in ((50_000, 1000), (40_000, 1000), (5_000, 1000), (100_000, 200)):
        vals = rng.standard_normal(n).astype(np.float32)
        vals[rng.choice(n, n // 10, replace=False)] = -np.inf
        assert np.array_equal(np.sort(best_set(vals, c)), np.sort(np.argpartition(-vals, c - 1)[:c]))
    tied = np.round(rng.standard_normal(60_000), 1).astype(np.float32)  # many values tied at the cut
    assert np.array_equal(best_set(tied, 1000), np.argpartition(-tied, 999)[:1000])


def test_best_positions_ranks_ties_by_position() -> None:
    """The keyword candidates' selection: the ``limit`` best scores, best first, equal scores by position
    (the slot: insertion order), on long arrays full of ties as BM25 over common terms gives them."""
    rng = np.random.default_rng(9)
    for n, limit in ((30_000, 20), (200, 20), (5_000, 40), (30_000, 1)):
        vals = rng.integers(0, 60, n).astype(np.float64)  # hundreds of rows tied at the top
        want = sorted(range(n), key=lambda i: (-vals[i], i))[:limit]
        assert best_positions(vals, limit).tolist() == want


def test_best_positive_is_the_ranked_positive_scores() -> None:
    """The keyword search's selection over the whole score array: the ``limit`` best positive scores,
    best first, equal scores by position, whether most of the array is positive (a search of common
    terms: the sample's floor), few of it (fewer positives than ``limit`` or than the sample needs) or
    none; ties at the cut and zeros everywhere else."""
    rng = np.random.default_rng(21)
    for n, limit, share in ((30_000, 20, 0.9), (30_000, 20, 0.02), (30_000, 20, 0.0005), (5_000, 40, 0.5),
                            (200, 20, 0.5), (30_000, 1, 0.3), (3_000, 30, 0.0), (100_000, 60, 0.25)):
        vals = np.where(rng.random(n) < share, rng.integers(1, 40, n), 0).astype(np.float64)
        want = sorted((i for i in range(n) if vals[i] > 0), key=lambda i: (-vals[i], i))[:limit]
        assert best_positive(vals, limit).tolist() == want, (n, limit, share)
    # the cut falls inside a run of equal scores that the sample's floor equals: all of them are ranked
    vals = np.where(rng.random(30_000) < 0.6, 1.0, 0.0)
    vals[[17, 4_000, 29_999]] = 2.0
    assert best_positive(vals, 20).tolist() == [17, 4_000, 29_999] + np.flatnonzero(vals == 1.0)[:17].tolist()


def test_keyword_search_of_common_terms_in_a_big_index_is_the_one_pass_search() -> None:
    """At more rows than the selection's sample needs (64 per wanted row), the search ranks only the
    rows at or above the sample's floor: the same answers, to the bit, as ranking every positive row,
    for common terms (most rows match), rare ones (fewer matches than wanted) and after removals."""
    rng = random.Random(5)
    k = KeywordIndex()
    docs = {f"m{i}": " ".join(rng.choice(WORDS[: rng.randint(2, len(WORDS))]) for _ in range(rng.randint(1, 10)))
            for i in range(6_000)}
    docs.update({f"r{i}": f"rare{i % 7} " + rng.choice(WORDS) for i in range(12)})
    k.upsert(list(docs), list(docs.values()))
    queries = [rng.sample(WORDS, rng.randint(1, 5)) for _ in range(30)] + [["rare3"], ["rare1", "rare2"], ["none"]]
    for step in range(3):
        for q in queries:
            for limit in (1, 10, 30):
                assert k.search(q, limit) == _one_pass_search(k, q, limit), (q, limit)
        k.remove(rng.sample(sorted(docs), 500))


def test_bm25_weights_are_the_formula_to_the_bit() -> None:
    """The in-place weighting gives exactly the bits of the formula written out (scores and their ties
    do not move)."""
    rng = np.random.default_rng(3)
    tf = rng.integers(1, 5, 5000).astype(np.float64)
    dl = rng.integers(1, 60, 5000).astype(np.float64)
    idf = rng.uniform(0.1, 9.0, 5000)
    for i in (idf, 2.345678):
        want = i * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / 17.3))
        assert np.array_equal(bm25_weights(tf, dl, 17.3, i), want)


def _one_pass_search(k: KeywordIndex, terms: list[str], limit: int) -> list[tuple[str, float]]:
    """The search as it was before weighted postings were kept: every term's postings weighted in one
    pass (the reference the kept weights must reproduce to the bit)."""
    from memfold.index.keywords import idf_of

    avgdl = k.total_len / k.live if k.total_len > 0 else 1.0
    slot_parts, tf_parts, idfs, sizes = [], [], [], []
    for t in dict.fromkeys(terms):
        tid = k.vocab.get(t)
        if tid is None or k.df[tid] <= 0:
            continue
        size = 0
        if tid + 1 < len(k.t_ptr):
            a, b = int(k.t_ptr[tid]), int(k.t_ptr[tid + 1])
            if b > a:
                slot_parts.append(k.t_slot[a:b])
                tf_parts.append(k.t_tf[a:b])
                size = b - a
        delta = k._delta_postings(tid)
        if delta is not None:
            slot_parts.append(delta[0])
            tf_parts.append(delta[1])
            size += len(delta[0])
        if size:
            idfs.append(idf_of(k.live, int(k.df[tid])))
            sizes.append(size)
    if not slot_parts:
        return []
    slots = np.concatenate(slot_parts, dtype=np.int64)
    idf = np.repeat(np.array(idfs, dtype=np.float64), sizes)
    weights = bm25_weights(np.concatenate(tf_parts, dtype=np.float64), k.dl[slots], avgdl, idf)
    scores = np.bincount(slots, weights=weights, minlength=k.n)
    if k.live != k.n:
        scores[~k.alive[: k.n]] = 0.0
    cand = np.flatnonzero(scores > 0)
    if len(cand) > limit:
        cand = cand[best_positions(scores[cand], limit)]
    cand = cand[np.lexsort((cand, -scores[cand]))]
    return [(k.ids[s], float(s_)) for s, s_ in zip(cand.tolist(), scores[cand].tolist())]


def test_kept_term_weights_score_to_the_bit_and_stay_bounded(monkeypatch) -> None:
    """Searches repeat their common terms: each term's weighted postings are kept until the index
    changes. Every answer equals the one-pass search's exactly (ids, order and float scores), through
    loads, single upserts into the delta, folds, changed rows and removals; what is kept is cleared by
    every change and never exceeds its share of the postings."""
    monkeypatch.setattr(KeywordIndex, "FOLD_MIN_POSTINGS", 60)
    monkeypatch.setattr(KeywordIndex, "COMPACT_MIN_DEAD", 8)
    rng = random.Random(11)
    k = KeywordIndex()
    docs = {f"m{i}": " ".join(rng.choice(WORDS[: rng.randint(3, len(WORDS))]) for _ in range(rng.randint(1, 12)))
            for i in range(200)}
    k.upsert(list(docs), list(docs.values()))
    queries = [rng.sample(WORDS, rng.randint(1, 6)) for _ in range(12)] + [["nothing"], WORDS[:3] + ["nothing"]]
    kept_hits = 0
    for step in range(120):
        for q in rng.sample(queries, 5) * 2:  # again: the second time from the kept weights
            kept_hits += all(k.vocab.get(t) in k._memo for t in q if k.vocab.get(t) is not None and k.df[k.vocab[t]] > 0)
            assert k.search(q, 15) == _one_pass_search(k, q, 15)
            assert k._memo_size == sum(len(s) for s, _ in k._memo.values())
            # a term of the base keeps its weights only (its slots: a view of the postings), others both
            own = sum(w.nbytes + (0 if np.shares_memory(s, k.t_slot) else s.nbytes) for s, w in k._memo.values())
            assert k._memo_bytes == own
            assert k._memo_bytes <= KeywordIndex.MEMO_SHARE * KeywordIndex.POSTING_BYTES * (len(k.t_slot) + k.d_size)
        op = step % 4
        if op == 0:  # a new row (into the delta, folded past the threshold)
            mid = f"n{step}"
            docs[mid] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))
            k.upsert([mid], [docs[mid]])
        elif op == 1:  # a changed row
            mid = rng.choice(sorted(docs))
            docs[mid] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))
            k.upsert([mid], [docs[mid]])
        elif op == 2:  # a removal
            mid = rng.choice(sorted(docs))
            del docs[mid]
            k.remove([mid])
        else:  # a snapshot cut (folds the delta) and read back
            k = KeywordIndex.from_state(k.state())
        assert k._memo == {} and k._memo_size == 0  # every change forgets the kept weights
    assert kept_hits > 100


def test_every_terms_weights_of_the_base_are_kept_within_the_bound() -> None:
    """``MEMO_SHARE`` leaves room for the weights of every posting of the base (8 bytes each of the
    postings' 16): once every term has been searched, no search weighs a term again (at 0.25 the
    first terms searched filled the room and a third of a 2k bench index's lookups weighed again)."""
    rng = random.Random(5)
    k = KeywordIndex()
    docs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(400)]
    k.upsert([f"m{i}" for i in range(len(docs))], docs)
    words = [w for w in WORDS if w in k.vocab]
    for w in words:
        k.search([w], 10)
    assert len(k._memo) == len(words) and k._memo_bytes <= k.memo_budget()
    weighed: list[int] = []
    real = bm25_weights
    import memfold.index.keywords as kw

    def counted(*a, **kw_):  # noqa: ANN002, ANN003
        weighed.append(1)
        return real(*a, **kw_)

    kw.bm25_weights = counted
    try:
        for _ in range(3):
            k.search(rng.sample(words, 4), 10)
    finally:
        kw.bm25_weights = real
    assert weighed == []
