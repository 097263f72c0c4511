"""The read path (SPEC §5): keyword + vector candidates (2k each, at least ``candidate_pool_min``),
weighted fusion, rescoring by similarity, recency of access and importance, then access statistics.

Two query-aware adjustments of the similarity, both policy keys (0 turns them off): a memory
spoken by someone the query names gains ``score_bonus_speaker``; a memory that is itself a
question loses ``score_penalty_question`` (it asks rather than tells). A multi-line query (a
conversation excerpt) is embedded whole plus ``query_last_line_weight`` × its last line."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Hashable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, cast

import numpy as np

from ...cache.answers import Prepared
from ...errors import IndexError_
from ...index.base import FileRecords, PinnedCounter, PreparedAnswers, SecondVectors, SharedReads, capability
from ...index.record_cache import own_copy
from ...index.rows import with_access
from ...limits import query_tail
from ...models import EPISODIC, FILE_MEMORY, DailyNote, MemoryRecord, Retrieval, SearchHit, fillable, utcnow
from ...policy import Policy
from ...providers.embedder import Embedder, embed_query
from ...text.terms import terms
from ...workspace.editsafe import split_marker
from ...workspace.userspace import daily_rel
from ..storage.records import index_text
from ..storage.store import UserStore
from .rank_cues import cue_bonus, query_cues
from .rank_keywords import with_feedback
from .rank_neighbours import NEIGHBOUR_WEIGHT, own_words_first, turn_relevance
from .rank_second import SecondModel, needed, with_second
from .rank_sessions import session_lift
from .rank_speakers import may_name_someone, vector_side_query
from .rank_wordvec import with_word_match
from .relevance import relevance, terms_held
from .search_scope import scoped
from .turns import one_place_per_turn, same_text

log = logging.getLogger("memfold.search")

_HIT_FIELDS = ("record", "score", "similarity", "keyword_score", "vector_score", "relevance", "related")
# a search makes ~30 hits: each by filling a bare instance's __dict__ when ``fillable`` allows it
_FILL_HIT = fillable(SearchHit, _HIT_FIELDS)


def _hit(record: MemoryRecord, score: float, similarity: float, keyword_score: float, vector_score: float,
         relevance: float = 1.0) -> SearchHit:
    if not _FILL_HIT:
        return SearchHit(record, score, similarity, keyword_score, vector_score, relevance)
    h = object.__new__(SearchHit)
    h.__dict__.update(record=record, score=score, similarity=similarity, keyword_score=keyword_score,
                      vector_score=vector_score, relevance=relevance, related=None)
    return h


def fuse(keyword: list[tuple[str, float]], vector: list[tuple[str, float]], keyword_weight: float
         ) -> dict[str, tuple[float, float, float]]:
    """Weighted score fusion: BM25 scaled by its maximum, cosine min-max scaled over the candidates.
    Returns id -> (fused, keyword part, vector part), in the order of the keyword candidates, then the
    vector-only ones (the index's order, so equal scores are ranked the same way in every run)."""
    out: dict[str, tuple[float, float, float]] = {}
    kmax = max((s for _, s in keyword), default=0.0)
    kw = {mid: (s / kmax if kmax > 0 else 0.0) for mid, s in keyword}
    vs = [s for _, s in vector]
    vmin, vmax = (min(vs), max(vs)) if vs else (0.0, 0.0)
    span = vmax - vmin
    vec = {mid: ((s - vmin) / span if span > 1e-9 else 1.0) for mid, s in vector}
    for mid in dict.fromkeys([*kw, *vec]):
        k, v = kw.get(mid, 0.0), vec.get(mid, 0.0)
        out[mid] = (keyword_weight * k + (1.0 - keyword_weight) * v, k, v)
    return out


def _same_words(extracted: str, turn: str) -> bool:
    """The extracted memory's words are the turn's, or contained in them (case and spaces aside)."""
    a, b = " ".join(extracted.casefold().split()), " ".join(turn.casefold().split())
    if a and a in b:
        return True
    ta, tb = set(terms(extracted)), set(terms(turn))
    return bool(ta) and len(ta & tb) / len(ta | tb) >= 0.8


def collapse_turn_copies(hits: list[SearchHit], absorbed: dict[str, list[MemoryRecord]] | None = None
                         ) -> list[SearchHit]:
    """One fact once. A turn collapses into a memory among the hits that came from it (the memory
    lists the turn's key among its sources; or, for memories written before turns had keys, a
    shared source id and the same words): the memory stays, at the better of the two places,
    carrying both records' source ids. Near-identical texts (the same words, case and punctuation
    aside) count once: the better placed stays, and a memory stands for a turn with its words.
    Archived records (``include_archived``) are shown as they are.
    ``hits`` best first; the order is kept. ``absorbed`` (filled when given): the id of each kept
    hit -> the records it now stands for (the relevance floor judges it by the best of them: a
    turn may hold the query's words that its extract left out)."""
    if len(hits) < 2:
        return hits
    typed = [h for h in hits if h.record.file != EPISODIC]
    by_key: dict[str, SearchHit] = {}
    for t in typed:
        for sid in t.record.source_ids:
            by_key.setdefault(sid, t)
    first_of: dict[str, SearchHit] = {}  # near-identical texts: the memory, else the best placed hit
    for h in hits:
        norm = same_text(h.record.content)
        held = first_of.get(norm)
        if norm and (held is None or (held.record.file == EPISODIC and h.record.file != EPISODIC)):
            first_of[norm] = h
    owner: dict[str, tuple[SearchHit, bool]] = {}  # dropped id -> (the hit that stands for it, carries its ids)
    for h in hits:
        r = h.record
        keeper: SearchHit | None = None
        carry = False
        if not r.is_active:  # an archived record found on purpose (looking back) shows its own words
            continue
        if r.file == EPISODIC:
            keeper = by_key.get(r.turn_key) if r.turn_key is not None else None
            if keeper is None and r.source_ids:  # memories stored before turns had keys
                keeper = next((t for t in typed if set(r.source_ids) & set(t.record.source_ids)
                               and _same_words(t.record.content, r.content)), None)
            carry = keeper is not None
        if keeper is None:
            twin = first_of.get(same_text(r.content))
            keeper = twin if twin is not None and twin is not h else None
        if keeper is not None and keeper.record.id not in owner:
            owner[r.id] = (keeper, carry)
    if not owner:
        return hits
    pos = {h.record.id: i for i, h in enumerate(hits)}
    keep_at: dict[str, int] = {}
    merged: dict[str, tuple[str, ...]] = {}
    for rid, (keeper, carry) in owner.items():
        kid = keeper.record.id
        keep_at[kid] = min(keep_at.get(kid, pos[kid]), pos[rid])
        if absorbed is not None:
            absorbed.setdefault(kid, []).append(hits[pos[rid]].record)
        if carry:
            ids = merged.get(kid, keeper.record.source_ids)
            merged[kid] = ids + tuple(x for x in hits[pos[rid]].record.source_ids if x not in ids)
    placed: list[tuple[int, int, SearchHit]] = []
    for i, h in enumerate(hits):
        if h.record.id in owner:
            continue
        at = keep_at.get(h.record.id, i)
        if at != i or h.record.id in merged:
            h = replace(h, record=h.record.with_(source_ids=merged.get(h.record.id, h.record.source_ids)),
                        score=max(h.score, hits[at].score))
        placed.append((at, i, h))
    return [h for _, _, h in sorted(placed, key=lambda x: (x[0], x[1]))]


def _own_words_first(hits: list[SearchHit], qset: set[str]) -> list[SearchHit]:
    """``rank_neighbours.own_words_first`` on ranked hits: a turn moved below a result holding the
    query's words in its own takes that result's score when its own was higher."""
    return in_order(hits, own_words_first([h.record for h in hits], qset))


def _one_place_per_turn(hits: list[SearchHit]) -> list[SearchHit]:
    """``turns.one_place_per_turn`` on ranked hits (a memory moved down takes the score above it
    when its own was higher)."""
    return in_order(hits, one_place_per_turn([h.record for h in hits]))


def in_order(hits: list[SearchHit], order: list[int]) -> list[SearchHit]:
    """``hits`` in ``order``, each score at most the one placed before it."""
    if order == list(range(len(hits))):
        return hits
    out: list[SearchHit] = []
    for i in order:
        h = hits[i]
        if out and h.score > out[-1].score:
            h = replace(h, score=out[-1].score)
        out.append(h)
    return out


def _relevance(r: MemoryRecord, cosine: float, qterms: set[str], held: dict[str, int], neighbour_weight: float
               ) -> float:
    """A record's calibrated relevance (``held``: query terms per id the index counted)."""
    turn = turn_relevance(r, cosine, qterms, neighbour_weight)
    if turn is not None:
        return turn
    n = held.get(r.id)
    return relevance(cosine, qterms, index_text(r) if n is None else "", n)


def query_vector(embedder: Embedder, query: str, last_line_weight: float) -> np.ndarray:
    """The query's vector; for a conversation excerpt (several lines with words), the whole text's
    vector plus ``last_line_weight`` times the last line's (the latest message says most), normalised."""
    vec = embed_query(embedder, [query])[0]
    if last_line_weight <= 0:
        return vec
    lines = [ln for ln in query.splitlines() if terms(ln)]
    if len(lines) < 2:
        return vec
    mixed = vec + last_line_weight * embed_query(embedder, [lines[-1]])[0]
    norm = float(np.linalg.norm(mixed))
    return (mixed / norm).astype(np.float32) if norm > 1e-9 else vec


def is_question(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


@lru_cache(maxsize=4096)
def speaker_terms(name: str) -> frozenset[str]:
    """A speaker's name as terms (a conversation's few names come back with every candidate turn)."""
    return frozenset(terms(name))


def adjustment(r: MemoryRecord, qterms: set[str], pol: Policy) -> float:
    """Query-aware change of a candidate's similarity: speaker named by the query, question turns."""
    delta = 0.0
    speaker = r.structured_data.get("speaker")
    if pol.score_bonus_speaker and isinstance(speaker, str) and not qterms.isdisjoint(speaker_terms(speaker)):
        delta += pol.score_bonus_speaker
    if pol.score_penalty_question and is_question(r.content):
        delta -= pol.score_penalty_question
    return delta


def archived_candidates(store: UserStore, user_id: str, qterms: list[str], qvec: np.ndarray,
                        keyword: list[tuple[str, float]], vector: list[tuple[str, float]], want: int
                        ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The candidate lists with the best ``want`` archived rows added: their stored vectors scored by
    cosine, their words by the share of query terms they hold (scaled to the best keyword score).
    A scan of the namespace's archived rows: an opt-in for looking back, not the everyday path."""
    qset = set(qterms)
    kmax = max((s for _, s in keyword), default=1.0) or 1.0
    kw: list[tuple[str, float]] = []
    vec: list[tuple[str, float]] = []
    for it in store.index.iter_rows(user_id):
        r = it.record
        if r.is_active:
            continue
        if qset:
            share = len(qset & set(terms(r.content))) / len(qset)
            if share > 0:
                kw.append((r.id, share * kmax))
        if it.vector is not None:
            vec.append((r.id, float(np.asarray(it.vector, dtype=np.float32) @ qvec)))
    kw = sorted(kw, key=lambda x: -x[1])[:want]
    vec = sorted(vec, key=lambda x: -x[1])[:want]
    return keyword + kw, sorted(vector + vec, key=lambda x: -x[1])[: max(want, len(vector))]


class Retriever:
    def __init__(self, store: Callable[[str], UserStore], policy: Callable[[str], Policy], stage: Any = None,
                 second: SecondModel | None = None):
        self._store = store
        self._policy = policy
        self.stage = stage  # the opt-in quality stage ([rerank]: rerank/stage.py); None: hits as ranked
        self.second = second  # the second model of [search] profile = "quality" (rank_second.py); None: off

    def search(self, query: str, user_id: str, *, limit: int | None = None, memory_type: str | None = None,
               record_access: bool = True, include_episodic: bool = True, now: datetime | None = None,
               collapse_copies: bool = True, include_archived: bool = False, expand: bool = True,
               pool: list[SearchHit] | None = None) -> list[SearchHit]:
        """``ranked_search``, its first hits re-ordered by the quality stage when one is configured."""
        args: dict[str, Any] = dict(memory_type=memory_type, include_episodic=include_episodic, now=now,
                                    collapse_copies=collapse_copies, include_archived=include_archived,
                                    expand=expand)
        if self.stage is None or pool is not None or not expand or not collapse_copies:
            return self.ranked_search(query, user_id, limit=limit, record_access=record_access, pool=pool, **args)
        hits = self.stage.search(lambda q, n: self.ranked_search(q, user_id, limit=n, record_access=False, **args),
                                 query, limit or self._policy(user_id).retrieve_limit, now or utcnow())
        if record_access and hits:
            self._record_access(self._store(user_id), user_id, hits, now or utcnow())
        return hits

    @scoped  # one scope of the index per search (fewer round trips on PostgreSQL: index/pg_scope.py)
    def ranked_search(self, query: str, user_id: str, *, limit: int | None = None, memory_type: str | None = None,
                      record_access: bool = True, include_episodic: bool = True, now: datetime | None = None,
                      collapse_copies: bool = True, include_archived: bool = False, expand: bool = True,
                      pool: list[SearchHit] | None = None) -> list[SearchHit]:
        """Ranked hits; with ``collapse_copies`` a turn and the memory extracted from it count once;
        with ``include_archived`` archived memories (merged, compressed, tidied away) are candidates too;
        without ``expand`` no pseudo-relevance feedback widens the keyword side (``forget`` asks so: what
        it removes must match the words asked, not terms borrowed from the best hits). ``pool`` (a
        diagnosis: ``memfold eval longmemeval --per-question``), when given, is filled with every scored
        candidate in rank order (copies collapsed), before the relevance floor and the cut at ``limit``."""
        store = self._store(user_id)
        pol = self._policy(user_id)
        k = limit or pol.retrieve_limit
        query = query_tail(query)  # bounded work however long the message a context is built for
        warm = getattr(store.embedder, "warm", None)
        if callable(warm):  # a first search loads the model while the index loads
            warm()
        store.sync(wait=False)
        qterms = terms(query, query=True)
        want = max(2 * k if memory_type is None and include_episodic else 8 * k, pol.candidate_pool_min)
        pin = capability(store.index, PinnedCounter)  # a cache: one reading of its change counter for both
        prepared = capability(store.index, PreparedAnswers) if not include_archived else None
        slot = prep = None
        early: list[MemoryRecord] = []
        # the candidates' records, shared with the index's record cache where it has one (not copied:
        # nothing here changes them; ``_above_floor`` copies the few it returns)
        shared = capability(store.index, SharedReads)
        read_rows = shared.get_shared if shared is not None else store.index.get
        with pin.pinned(user_id) if pin is not None else nullcontext():
            if prepared is not None:  # a cache: this search worked out before, at this counter (cache/answers.py)
                slot, prep = prepared.prepared(user_id, (query, k, memory_type, include_episodic, collapse_copies, expand))
                if prep is not None:
                    now = now or utcnow()
                    if not (prep.day == now.date() and (prep.policy is pol or prep.policy == pol)):
                        prep = None
                if prep is not None:  # the only part of the candidates that changes without a write of rows
                    stats = cast(Any, store.index).access_stats(user_id, [r.id for r, _, _, _ in prep.cands])
                    if len(stats) < len(prep.cands):  # a row not readable (cannot be at this counter): recompute
                        prep = None
            if prep is None:
                keyword = store.index.keyword_search(user_id, qterms, want) if qterms else []
                # the keyword candidates' rows, read now when the vector side needs their speakers (reused below)
                if pol.query_speaker_mask > 0 and keyword and may_name_someone(query):
                    early = read_rows(user_id, [m for m, _ in keyword])
                vquery = vector_side_query(query, set(qterms), early, pol)
                qvec = query_vector(store.embedder, vquery, pol.query_last_line_weight)
                vector = store.index.vector_search(user_id, qvec, want)
        second = capability(store.index, SecondVectors) if needed(self.second, pol) else None
        if prep is not None:
            return self._rescored(store, user_id, prep, stats, k, pol, now or utcnow(), collapse_copies, record_access,
                                  pool)
        if include_archived:
            keyword, vector = archived_candidates(store, user_id, qterms, qvec, keyword, vector, want)
        records = {r.id: r for r in early}

        def rows(ids: list[str]) -> dict[str, MemoryRecord]:  # the candidates' rows, each read once
            records.update((r.id, r) for r in read_rows(user_id, [m for m in ids if m not in records]))
            return records

        soft: dict[str, float] = {}  # word matches of this search's candidates (off at 0: none)
        cos2: dict[str, float | None] = {}  # cosines of the second model (off at 0 or without the profile: none)
        model2 = self.second if second is not None else None
        qvec2: list[np.ndarray] = []  # the query's vector of the second model, made when a candidate has one

        def query2() -> np.ndarray:
            if not qvec2 and model2 is not None:
                qvec2.append(model2.query_vector(vquery))
            return qvec2[0]

        def stored2(ids: list[str]) -> dict[str, np.ndarray]:
            return second.second_vectors(user_id, model2.name, ids) if second and model2 else {}

        def signals(fused: dict[str, tuple[float, float, float]]) -> dict[str, tuple[float, float, float]]:
            return with_second(with_word_match(fused, vquery, rows, pol, soft), query2 if model2 else None, stored2,
                               pol, cos2)

        fused = signals(fuse(keyword, vector, pol.fusion_keyword_weight))
        if expand and pol.keyword_feedback_weight > 0:  # pseudo-relevance feedback on the keyword side
            fused = signals(fuse(with_feedback(store, user_id, query, qterms, keyword, fused, want, pol),
                                 vector, pol.fusion_keyword_weight))
        fused = session_lift(store, user_id, qterms, qvec, fused, vector, pol)  # off at 0: unchanged
        cosines = dict(vector)
        cos_floor = min(cosines.values(), default=0.0)  # a keyword-only candidate's cosine is at most this
        qset = set(qterms)
        rows(list(fused))
        now = now or utcnow()
        cues = query_cues(query, now, pol)
        hits: list[SearchHit] = []
        score = self._scorer(pol, now)
        for mid, (sim, kpart, vpart) in fused.items():
            r = records.get(mid)
            if r is None or (not r.is_active and not include_archived):
                continue
            if memory_type is not None and r.memory_type.value != memory_type:
                continue
            if not include_episodic and r.file == EPISODIC:
                continue
            sim += adjustment(r, qset, pol) + cue_bonus(r, cues, pol)
            hits.append(_hit(r, score(r, sim), sim, kpart, vpart))
        if slot is not None:  # scored again by the next search of the same words at this counter
            prep = Prepared(pol, now.date(), [(h.record, h.similarity, h.keyword_score, h.vector_score) for h in hits],
                            cosines, cos_floor, qset)
        return self._ranked(store, user_id, hits, k, cosines, cos_floor, qset, pol, now, collapse_copies,
                            record_access, prep, slot, pool)

    def _rescored(self, store: UserStore, user_id: str, prep: Prepared, stats: dict[str, tuple[int, datetime | None]],
                  k: int, pol: Policy, now: datetime, collapse_copies: bool, record_access: bool,
                  pool: list[SearchHit] | None = None) -> list[SearchHit]:
        """A prepared answer's candidates scored again with their access statistics as they are now."""
        hits: list[SearchHit] = []
        score = self._scorer(pol, now)
        for r, sim, kpart, vpart in prep.cands:
            count, at = stats[r.id]
            r = with_access(r, count, at)
            hits.append(_hit(r, score(r, sim), sim, kpart, vpart))
        return self._ranked(store, user_id, hits, k, prep.cosines, prep.cos_floor, prep.qset, pol, now,
                            collapse_copies, record_access, prep, None, pool)

    def _ranked(self, store: UserStore, user_id: str, hits: list[SearchHit], k: int, cosines: dict[str, float],
                cos_floor: float, qset: set[str], pol: Policy, now: datetime, collapse_copies: bool,
                record_access: bool, prep: Prepared | None, slot: Hashable | None,
                pool: list[SearchHit] | None = None) -> list[SearchHit]:
        """Scored candidates sorted, collapsed and cut at the relevance floor; their accesses recorded."""
        hits.sort(key=lambda h: (-h.score, h.record.created_at, h.record.source_ids, h.record.content, h.record.id))
        hits = _own_words_first(hits, qset)
        absorbed: dict[str, list[MemoryRecord]] = {}
        hits = _one_place_per_turn(collapse_turn_copies(hits, absorbed)) if collapse_copies else hits
        if pool is not None:  # the caller's own records (the candidates' rows are shared with the record cache)
            pool.extend(_hit(own_copy(h.record), h.score, h.similarity, h.keyword_score, h.vector_score) for h in hits)
        judged = [r.id for h in hits[: k + k // 2] for r in (h.record, *absorbed.get(h.record.id, ()))]
        if prep is None:
            held = terms_held(store.index, user_id, judged, qset)
        else:  # what the index told of these ids before, asked again only for ids not asked yet
            ask = [i for i in dict.fromkeys(judged) if i not in prep.held]
            if ask:
                got = terms_held(store.index, user_id, ask, qset)
                prep.held.update({i: got.get(i, -1) for i in ask})  # -1: the index did not know it
            held = {i: prep.held[i] for i in judged if prep.held[i] >= 0}
        hits = self._above_floor(hits, k, cosines, cos_floor, qset, pol.min_score, held, absorbed,
                                 NEIGHBOUR_WEIGHT)
        if slot is not None and prep is not None:
            keep = capability(store.index, PreparedAnswers)
            if keep is not None:
                keep.keep_prepared(slot, prep)
        if record_access and hits:
            self._record_access(store, user_id, hits, now)
        return hits

    @staticmethod
    def _record_access(store: UserStore, user_id: str, hits: list[SearchHit], now: datetime) -> None:
        try:
            store.index.record_access(user_id, [h.record.id for h in hits], now)
        except IndexError_ as exc:  # a full disk, a read-only file: the answer stands, its statistics wait
            log.warning("search of %s: access statistics not written: %s", user_id, exc)

    @staticmethod
    def _above_floor(hits: list[SearchHit], k: int, cosines: dict[str, float], cos_floor: float,
                     qterms: set[str], min_score: float, held: dict[str, int] | None = None,
                     absorbed: dict[str, list[MemoryRecord]] | None = None, neighbour_weight: float = 1.0
                     ) -> list[SearchHit]:
        """The first ``k`` hits whose calibrated relevance reaches ``min_score``, each with its relevance
        (``held``: query terms per id, known to the index); a hit that stands for turns it absorbed
        (``collapse_turn_copies``) has the best relevance of itself and them; a turn matched through
        its neighbour's words is judged as ``rank_neighbours.turn_relevance`` says."""
        out: list[SearchHit] = []
        held = held or {}
        absorbed = absorbed or {}
        for h in hits:  # a text whose query terms the index counted (``held``) is not needed
            rel = max(_relevance(r, cosines.get(r.id, cos_floor), qterms, held, neighbour_weight)
                      for r in (h.record, *absorbed.get(h.record.id, ())))
            if rel >= min_score:  # the record handed out is the caller's own (its structured data a copy)
                out.append(_hit(own_copy(h.record), h.score, h.similarity, h.keyword_score, h.vector_score, rel))
                if len(out) >= k:
                    break
        return out

    @staticmethod
    def _scorer(pol: Policy, now: datetime) -> Callable[[MemoryRecord, float], float]:
        """The ranking score of a candidate (similarity, recency of access, importance), the policy's
        weights looked up once for all the candidates of a search."""
        w_sim, w_time, w_imp, tau = (pol.score_weight_similarity, pol.score_weight_time,
                                     pol.score_weight_importance, pol.decay_tau_days)
        exp = math.exp

        def score(r: MemoryRecord, similarity: float) -> float:
            ref = r.last_accessed_at or r.created_at
            days = max(0.0, (now - ref).total_seconds() / 86400.0)
            return w_sim * similarity + w_time * exp(-days / tau) + w_imp * r.importance
        return score

    def recent_notes(self, user_id: str, days: int, now: datetime | None = None) -> list[DailyNote]:
        """Daily notes of the last ``days`` days, oldest first, read from the index (no file reads)."""
        store = self._store(user_id)
        today = (now or datetime.now(timezone.utc)).date()
        out = []
        many = capability(store.index, FileRecords)  # PostgreSQL: one round trip for all days
        rels = [daily_rel(today - timedelta(days=back)) for back in range(days)]
        by_file = many.records_of_files(user_id, rels) if many is not None and days > 1 else None
        for back in range(days - 1, -1, -1):
            rel = rels[back]
            rows = by_file[rel] if by_file is not None else store.index.list_records(user_id, file=rel)
            if rows:
                out.append(DailyNote(date=(today - timedelta(days=back)).isoformat(), path=rel,
                                     text="\n".join(f"- {r.content}" for r in rows)))
        return out

    def retrieve(self, query: str | None, user_id: str, *, limit: int | None = None,
                 record_access: bool = True) -> Retrieval:
        pol = self._policy(user_id)
        store = self._store(user_id)
        if not query or not query.strip():
            store.sync(wait=False)
            full = split_marker(store.space.read(FILE_MEMORY))[0] if (store.space.dir / FILE_MEMORY).exists() else ""
            return Retrieval(hits=(), recent_notes=tuple(self.recent_notes(user_id, pol.recent_days)), full_text=full)
        hits = self.search(query, user_id, limit=limit, record_access=record_access)
        return Retrieval(hits=tuple(hits), recent_notes=tuple(self.recent_notes(user_id, pol.recent_days)))
