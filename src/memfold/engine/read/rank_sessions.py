"""Session keys for the read path (issue 16): a question that matches a conversation session as a
whole brings that session's turns into the candidates, so multi-hop and multi-session questions can
find evidence turns that share no word with the question and sit outside the vector top 2k.

A policy key, 0 = off (then nothing here runs):

- ``session_key_weight``: the turns of the ``SESSION_TOP`` sessions that best match the query
  gain ``w`` × the session's match (0–1); each such session also lends its ``PULL_PER_SESSION``
  turns closest to the query (cosine) that were not candidates, with their own vector part.

A session is what groups conversation turns in the product: the episodic turns sharing a
``session_id`` (``Memory.add(..., session_id=…)``), or, without one, the turns stored with one
time stamp (one ``add`` call, or one dated session of an imported conversation). Its keys need no
new embedding: the mean of its turns' vectors (a centroid) and one keyword document of its turns'
terms, scored by BM25 over the namespace's sessions; the two are fused like the turns' own scores.
A long session is keyed in segments of ``SEGMENT_TURNS`` consecutive turns (a cheap stand-in for
topic segments; it also bounds the turns a search scores to ``SESSION_TOP`` × ``SEGMENT_TURNS``).

Off by default: measured in docs/benchmarks.md ("Issue 16, session keys"), this form gains on
LoCoMo and LongMemEval and survives ``benchmarks/tune.py``'s cross-validation at 0.1, but not a
cross-validation that includes the choice among the variants tried (segments, sessions kept,
turns pulled), and every write makes the next search read the namespace again.

The keys are derived in memory from the index's rows, once per namespace and change counter (any
write rebuilds them at the next search: one read of the namespace's rows), and kept for at most
``CACHE_ROWS`` turns over all namespaces (least recently used first out); a namespace with more
turns than that is not keyed (also remembered per change counter: it is not read again until a
write), and an index without a change counter is never keyed."""

from __future__ import annotations

import math
import threading
import weakref
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...index.base import ChangeCounter, capability
from ...index.vectors import one_blas_thread
from ...models import EPISODIC
from ...policy import Policy
from ...text.terms import terms
from ..storage.store import UserStore

SESSION_TOP = 3  # sessions whose turns gain
PULL_PER_SESSION = 2  # turns of each such session pulled into the candidates
LIFT_CANDIDATES = True  # the sessions' turns already among the candidates gain too
SEGMENT_TURNS = 4  # a session is keyed in segments of this many consecutive turns (0: whole sessions)
CACHE_ROWS = 20_000  # turns kept over all namespaces (their vectors as float16); a larger namespace is not keyed
BM25_K1, BM25_B = 1.2, 0.75

Fused = dict[str, tuple[float, float, float]]


@dataclass
class SessionKeys:
    counter: int
    members: list[list[str]]  # per session: its turn ids
    vectors: list[np.ndarray]  # per session: its turns' vectors (float16, rows as members)
    centroids: np.ndarray  # (sessions, dim), normalised
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (sessions, counts)
    lengths: np.ndarray  # terms per session document
    session_of: dict[str, int]

    @property
    def rows(self) -> int:
        return len(self.session_of)


def group_key(source_session_id: str | None, created_at: Any) -> str:
    """The session a turn belongs to: its session id, else its time stamp (one add call)."""
    return f"s:{source_session_id}" if source_session_id else f"t:{created_at.isoformat()}"


def unkeyed(counter: int) -> SessionKeys:
    """No keys (no turns, or too many to key): remembered per change counter like keys are."""
    return SessionKeys(counter, [], [], np.zeros((0, 0), np.float32), {}, np.zeros(0), {})


def build(store: UserStore, user_id: str, counter: int, max_rows: int) -> SessionKeys:
    """The keys of a namespace from its stored rows; none when it has more than ``max_rows`` turns."""
    groups: dict[str, list[tuple[str, np.ndarray, list[str]]]] = {}
    n = 0
    for it in store.index.iter_rows(user_id):
        r = it.record
        if r.file != EPISODIC or not r.is_active or it.vector is None:
            continue
        n += 1
        if n > max_rows:
            return unkeyed(counter)
        groups.setdefault(group_key(r.source_session_id, r.created_at), []).append(
            (r.id, np.asarray(it.vector, dtype=np.float32), terms(r.content)))
    parts: list[list[tuple[str, np.ndarray, list[str]]]] = []
    for turns in groups.values():
        step = SEGMENT_TURNS if SEGMENT_TURNS > 0 else len(turns)
        parts.extend(turns[i:i + step] for i in range(0, len(turns), step))
    members, vectors, cents, lengths = [], [], [], []
    postings: dict[str, list[tuple[int, int]]] = {}  # term -> (session, count), as arrays below
    session_of: dict[str, int] = {}
    for g, turns in enumerate(parts):
        mat = np.stack([v for _, v, _ in turns])
        c = mat.mean(axis=0)
        norm = float(np.linalg.norm(c))
        cents.append(c / norm if norm > 1e-9 else c)
        members.append([mid for mid, _, _ in turns])
        vectors.append(mat.astype(np.float16))
        counts: Counter[str] = Counter(t for _, _, ts in turns for t in ts)
        lengths.append(sum(counts.values()))
        for t, c_ in counts.items():
            postings.setdefault(t, []).append((g, c_))
        session_of.update((mid, g) for mid, _, _ in turns)
    if not parts:
        return unkeyed(counter)
    arrays = {t: (np.array([g for g, _ in p], dtype=np.int64), np.array([c for _, c in p], dtype=np.float64))
              for t, p in postings.items()}
    return SessionKeys(counter, members, vectors, np.stack(cents).astype(np.float32), arrays,
                       np.asarray(lengths, dtype=np.float64), session_of)


class KeyCache:
    """Session keys per index and namespace, bounded by the turns they hold, rebuilt when the
    namespace's change counter moves."""

    def __init__(self, max_rows: int = CACHE_ROWS):
        self.max_rows = max_rows
        self._lock = threading.Lock()
        self._by_index: weakref.WeakKeyDictionary[Any, OrderedDict[str, SessionKeys]] = weakref.WeakKeyDictionary()

    def rows(self) -> int:
        with self._lock:
            return sum(k.rows for per in self._by_index.values() for k in per.values())

    def get(self, store: UserStore, user_id: str) -> SessionKeys | None:
        index = store.index
        counter_of = capability(index, ChangeCounter)
        if counter_of is None:
            return None
        counter = counter_of.change_counter(user_id)
        if counter is None:  # inside a write transaction: nothing settled to key
            return None
        with self._lock:
            per = self._by_index.setdefault(index, OrderedDict())
            keys = per.get(user_id)
            if keys is not None and keys.counter == counter:
                per.move_to_end(user_id)
                return keys
            per.pop(user_id, None)
            keys = per[user_id] = build(store, user_id, counter, self.max_rows)
            self._evict(keep=(index, user_id))
            return keys

    def _evict(self, keep: tuple[Any, str]) -> None:
        total = sum(k.rows for per in self._by_index.values() for k in per.values())
        for index, per in list(self._by_index.items()):
            for uid in list(per):
                if total <= self.max_rows:
                    return
                if (index, uid) != keep:
                    total -= per.pop(uid).rows


CACHE = KeyCache()


def session_scores(keys: SessionKeys, qterms: list[str], qvec: np.ndarray, keyword_weight: float) -> np.ndarray:
    """Each session's match to the query, 0–1: BM25 of its document scaled by the best, and the
    cosine of its centroid min-max scaled over the sessions, weighted like the turns' fusion."""
    g = len(keys.members)
    bm = np.zeros(g)
    avg = float(keys.lengths.mean()) or 1.0
    for t in set(qterms):
        post = keys.postings.get(t)
        if not post:
            continue
        where, tf = post
        idf = math.log(1.0 + (g - len(where) + 0.5) / (len(where) + 0.5))
        bm[where] += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * keys.lengths[where] / avg))
    top = bm.max() if g else 0.0
    kw = bm / top if top > 0 else bm
    cos = keys.centroids @ qvec.astype(np.float32)
    span = float(cos.max() - cos.min()) if g else 0.0
    vec = (cos - cos.min()) / span if span > 1e-9 else np.ones(g)
    return keyword_weight * kw + (1.0 - keyword_weight) * vec


def session_lift(store: UserStore, user_id: str, qterms: list[str], qvec: np.ndarray, fused: Fused,
                 vector: list[tuple[str, float]], pol: Policy) -> Fused:
    """``fused`` with the turns of the best-matching sessions lifted and a few of them pulled in
    (unchanged when the key is off, the namespace is not keyed or has fewer than two sessions)."""
    w = pol.session_key_weight
    if w <= 0:
        return fused
    keys = CACHE.get(store, user_id)
    if keys is None or len(keys.members) < 2:
        return fused
    with one_blas_thread():  # small products: BLAS threads would only wait on each other (index/vectors.py)
        return _lift(keys, qterms, qvec, fused, vector, pol, w)


def _lift(keys: SessionKeys, qterms: list[str], qvec: np.ndarray, fused: Fused, vector: list[tuple[str, float]],
          pol: Policy, w: float) -> Fused:
    scores = session_scores(keys, qterms, qvec, pol.fusion_keyword_weight)
    top = [int(g) for g in np.argsort(-scores, kind="stable")[:SESSION_TOP]]
    bonus = {g: w * float(scores[g]) for g in top}
    out = dict(fused)
    for mid, (sim, k, v) in fused.items() if LIFT_CANDIDATES else ():
        g = keys.session_of.get(mid)
        if g in bonus:
            out[mid] = (sim + bonus[g], k, v)
    if PULL_PER_SESSION <= 0:
        return out
    cos = [c for _, c in vector]
    vmin, span = (min(cos), max(cos) - min(cos)) if cos else (0.0, 0.0)
    q16 = qvec.astype(np.float32)
    for g in top:
        own = keys.vectors[g].astype(np.float32) @ q16
        pulled = 0
        for j in np.argsort(-own, kind="stable"):
            mid = keys.members[g][int(j)]
            if mid in out:
                continue
            part = min(1.0, max(0.0, (float(own[j]) - vmin) / span)) if span > 1e-9 else 0.0
            out[mid] = ((1.0 - pol.fusion_keyword_weight) * part + bonus[g], 0.0, part)
            pulled += 1
            if pulled >= PULL_PER_SESSION:
                break
    return out
