"""Index contract: every capability of ``index/base.py``. The required ones are all there (on the
bare backend and behind the hot cache); each optional one is provided by exactly the backends its
row below names, and does what its protocol says, asked for by type (``capability``) on the bare
index and on a ``CachedIndex`` wrapping it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memfold.cache import CachedIndex, LocalCache
from memfold.cache.answers import Prepared
from memfold.index.base import (
    OPTIONAL,
    REQUIRED,
    AccessStats,
    AllFileStates,
    ChangeCounter,
    DocTerms,
    ExpectedRows,
    FileRecords,
    HotSet,
    Index,
    IndexItem,
    PinnedCounter,
    PreparedAnswers,
    QueuedAccess,
    ReadOnlyMode,
    SearchFootprint,
    SearchScope,
    SecondVectors,
    SharedReads,
    StorageSize,
    TakenCounter,
    TermsHeld,
    TermsVersion,
    Transactions,
    capability,
    members,
)
from memfold.index.sqlite_rows import SqliteSource
from memfold.models import MemoryType
from memfold.text.terms import TERMS_VERSION, fts_document, terms

from .conftest import T0, item, rec, unit

BOTH = {"sqlite", "postgres"}
# which bare backends provide each optional capability
PROVIDERS: dict[Any, set[str]] = {
    ChangeCounter: BOTH, AccessStats: BOTH, SearchScope: BOTH, AllFileStates: BOTH, TakenCounter: {"postgres"},
    ExpectedRows: {"postgres"}, SharedReads: {"sqlite"}, FileRecords: {"postgres"}, Transactions: {"sqlite"},
    TermsHeld: BOTH, DocTerms: BOTH, ReadOnlyMode: {"sqlite"}, StorageSize: {"postgres"},
    SearchFootprint: {"sqlite"}, QueuedAccess: {"postgres"}, TermsVersion: set(), SecondVectors: BOTH,
    PinnedCounter: set(),
    PreparedAnswers: set(), HotSet: set()}
CACHE_OWN = {ChangeCounter, SearchScope, PinnedCounter, PreparedAnswers, HotSet}  # the cache provides them itself
CACHE_USES = {TakenCounter, ExpectedRows}  # the cache uses them and does not offer them
DAY1, DAY2 = "memory/2024-05-01.md", "memory/2024-05-02.md"
QT = terms("green tea", query=True)


@pytest.fixture(params=["bare", "cached"])
def wrapped(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def subject(index: Index, wrapped: str) -> Any:
    """The index, or a CachedIndex in front of it (not closed here: closing it closes the index,
    which the suite's fixture does)."""
    return index if wrapped == "bare" else CachedIndex(index, LocalCache(1000))


def provided(backend: str, wrapped: str, protocol: Any) -> bool:
    if wrapped == "cached":
        return protocol in CACHE_OWN or (backend in PROVIDERS[protocol] and protocol not in CACHE_USES)
    return backend in PROVIDERS[protocol]


def has(subject: Any, backend: str, wrapped: str, protocol: Callable[..., Any]) -> Any:
    """``capability(subject, protocol)``, checked against the table first."""
    got = capability(subject, protocol)
    assert (got is not None) == provided(backend, wrapped, protocol), (protocol, backend, wrapped)
    return got


def _load(ix: Any) -> None:
    ix.upsert([item(rec("a1", "Alice prefers green tea, green tea always"), unit(1.0)),
               item(rec("a2", "我喜欢喝咖啡，尤其是早上的拿铁"), unit(0.0, 1.0)),
               item(rec("d1", "went to the market", file=DAY1, memory_type=MemoryType.EVENT, minutes=1), unit(0.0, 0.0, 1.0)),
               item(rec("d2", "bought apples", file=DAY1, memory_type=MemoryType.EVENT, minutes=2), unit(0.0, 0.0, 0.0, 1.0)),
               item(rec("b1", "Bob drinks green tea too", "bob"), unit(1.0, 0.5))])


# ---- the contract itself --------------------------------------------------------------------------
def test_every_optional_capability_has_its_row() -> None:
    assert set(PROVIDERS) == set(OPTIONAL) and not set(REQUIRED) & set(OPTIONAL)
    for protocol in (*REQUIRED, *OPTIONAL):
        assert protocol.__doc__ and protocol.__doc__.startswith("Required." if protocol in REQUIRED else "Optional.")


def test_the_required_capabilities_are_all_there(subject: Any, wrapped: str) -> None:
    assert isinstance(subject, Index)
    assert all(isinstance(subject, p) for p in REQUIRED)
    if wrapped == "cached":  # defined by the class itself, nothing found by a fallback lookup
        assert not hasattr(CachedIndex, "__getattr__")
        assert all(hasattr(type(subject), name) for p in REQUIRED for name in members(p))


def test_each_optional_capability_is_where_its_row_says(subject: Any, backend: str, wrapped: str) -> None:
    for protocol in OPTIONAL:
        has(subject, backend, wrapped, protocol)
        assert (capability(subject, protocol) is not None) == isinstance(subject, protocol)  # as isinstance decides


# ---- each optional capability at work -------------------------------------------------------------
def test_change_counter(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, ChangeCounter)
    before = c.change_counter("alice")
    assert isinstance(before, int)
    _load(subject)
    assert c.change_counter("alice") > before and c.change_counter() >= c.change_counter("alice")
    assert c.instance_id() and c.instance_id() == c.instance_id()
    if wrapped == "cached":
        assert c.instance_id() == subject.inner.instance_id()


def test_access_stats(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, AccessStats)
    _load(subject)
    subject.record_access("alice", ["a1"], T0)
    assert c.access_stats("alice", ["a1", "a2", "nobody"]) == {"a1": (1, T0), "a2": (0, None)}
    assert c.access_stats("bob", ["a1"]) == {}  # another namespace's row


def test_search_scope(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, SearchScope)
    _load(subject)
    plain = subject.keyword_search("alice", QT, 5)
    with c.search_scope("alice"):
        assert subject.keyword_search("alice", QT, 5) == plain == [("a1", plain[0][1])]
        assert [r.id for r in subject.get("alice", ["a1", "a2"])] == ["a1", "a2"]
        with c.search_scope("alice"):  # nested: the outer scope stands
            assert subject.vector_search("alice", unit(1.0), 1)[0][0] == "a1"


def test_all_file_states(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, AllFileStates)
    subject.set_file_state("alice", "MEMORY.md", (1, 2))
    subject.set_file_state("alice", DAY1, (3, 4))
    subject.set_file_state("bob", "MEMORY.md", (5, 6))
    assert c.file_states("alice") == {"MEMORY.md": (1, 2), DAY1: (3, 4)}
    assert c.file_states("nobody") == {}


def test_taken_counter(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, TakenCounter)
    _load(subject)
    if backend != "postgres":
        return
    inner = subject if wrapped == "bare" else subject.inner
    files = capability(inner, AllFileStates)
    assert files is not None
    files.file_states("alice")
    if c is not None:  # handed over once, then asked again
        assert c.take_counter() == subject.change_counter("alice") and c.take_counter() is None
    else:  # the cache's search takes it instead of reading the counter again
        with subject.pinned("alice"):
            subject.keyword_search("alice", QT, 5)
        assert inner.take_counter() is None


def test_expected_rows(subject: Any, backend: str, wrapped: str, monkeypatch: pytest.MonkeyPatch) -> None:
    c = has(subject, backend, wrapped, ExpectedRows)
    _load(subject)
    if backend != "postgres":
        return
    if c is not None:
        with subject.search_scope("alice"):
            c.expect_rows("alice", ["a1", "a2"])
            assert [r.id for r in subject.get("alice", ["a2", "a1"])] == ["a2", "a1"]
        return
    told: list[list[str]] = []  # the cache tells the index which rows a search it answered reads next
    real = subject.inner.expect_rows
    monkeypatch.setattr(subject.inner, "expect_rows", lambda user_id, ids: told.append(list(ids)) or real(user_id, ids))
    with subject.search_scope("alice"):
        subject.keyword_search("alice", QT, 5)  # a miss: the index searched (and told itself)
    before = len(told)
    with subject.search_scope("alice"):
        subject.keyword_search("alice", QT, 5)  # a hit: the index did not search
    assert told[before:] == [["a1"]]


def test_shared_reads(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, SharedReads)
    _load(subject)
    if c is not None:
        assert c.get_shared("alice", ["a2", "a1", "b1"]) == subject.get("alice", ["a2", "a1", "b1"])
        assert [r.id for r in c.get_shared("alice", ["a2", "a1"])] == ["a2", "a1"]


def test_file_records(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, FileRecords)
    _load(subject)
    if c is not None:
        got = c.records_of_files("alice", [DAY1, DAY2])
        assert {f: [r.id for r in rows] for f, rows in got.items()} == {DAY1: ["d1", "d2"], DAY2: []}
        assert got[DAY1] == subject.list_records("alice", file=DAY1)


def test_transactions(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, Transactions)
    if c is None:
        return
    with c.transaction():
        subject.upsert([item(rec("t1", "kept"), unit(1.0))])
        with c.transaction():  # re-entrant: one transaction
            subject.upsert([item(rec("t2", "kept too"), unit(0.0, 1.0))])
        assert subject.change_counter("alice") is None  # inside: nothing settled a cache may keep
    with pytest.raises(RuntimeError), c.transaction():
        subject.upsert([item(rec("t3", "rolled back"), unit(1.0))])
        raise RuntimeError("undo")
    assert sorted(r.id for r in subject.list_records("alice")) == ["t1", "t2"]


def test_terms_held(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, TermsHeld)
    _load(subject)
    subject.keyword_search("alice", QT, 5)  # the namespace's keyword index, loaded by a search
    assert c.terms_held("alice", ["a1", "a2", "nobody"], QT) == {"a1": 2, "a2": 0}


def test_doc_terms(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, DocTerms)
    _load(subject)
    subject.keyword_search("alice", QT, 5)
    got = c.doc_terms("alice", ["a1", "nobody"])
    assert got == {"a1": dict(Counter(fts_document("Alice prefers green tea, green tea always").split()))}


def test_read_only_mode(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, ReadOnlyMode)
    if c is not None:
        assert c.read_only is False  # a workspace this process may write


def test_storage_size(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, StorageSize)
    if c is not None:
        _load(subject)
        assert c.storage_bytes() > 0


def test_search_footprint(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, SearchFootprint)
    if c is not None:
        _load(subject)
        subject.keyword_search("alice", QT, 5)
        assert "alice" in c.search_footprint()


def test_queued_access(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, QueuedAccess)
    if c is not None:
        _load(subject)
        subject.record_access("alice", ["a1"], T0)
        assert c.flush_access() >= 0 and c.flush_access() == 0  # nothing left queued
        assert subject.get("alice", ["a1"])[0].access_count == 1


def test_pinned_counter(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, PinnedCounter)
    if c is None:
        return
    _load(subject)
    with c.pinned("alice"):
        before = subject.keyword_search("alice", QT, 5)
        subject.upsert([item(rec("a3", "green tea again"), unit(0.5, 0.5))])
        assert subject.keyword_search("alice", QT, 5) == before  # one reading of the counter: as the search began
    assert "a3" in [i for i, _ in subject.keyword_search("alice", QT, 5)]  # the next search sees the write


def test_prepared_answers(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, PreparedAnswers)
    if c is None:
        return
    _load(subject)
    key, got = c.prepared("alice", ("green tea", 5))
    assert key is not None and got is None
    answer = Prepared(policy=None, day=T0.date(), cands=[], cosines={}, cos_floor=0.0, qset=set(QT))
    c.keep_prepared(key, answer)
    assert c.prepared("alice", ("green tea", 5)) == (key, answer)
    subject.upsert([item(rec("a3", "green tea again"), unit(0.5, 0.5))])
    assert c.prepared("alice", ("green tea", 5))[1] is None  # the index changed: not that answer


def test_hot_set(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, HotSet)
    _load(subject)
    subject.record_access("alice", ["a2"], T0)
    subject.record_access("alice", ["a2", "a1"], T0)
    assert [r.id for r in subject.most_accessed("alice", 5)] == ["a2", "a1"]
    if c is not None:
        assert [r.id for r in c.hot("alice")] == ["a2", "a1"]


def test_terms_version(subject: Any, backend: str, wrapped: str) -> None:
    """Not of a live index (it brings its terms up to date when it opens): of an index file read as it is."""
    assert has(subject, backend, wrapped, TermsVersion) is None
    if backend == "sqlite" and wrapped == "bare":
        _load(subject)
        with SqliteSource.open(subject.path) as source:
            held = capability(source, TermsVersion)
            assert held is not None and held.terms_version == TERMS_VERSION


def test_second_vectors(subject: Any, backend: str, wrapped: str) -> None:
    c = has(subject, backend, wrapped, SecondVectors)
    _load(subject)
    m, other = "model-b", "model-c"
    waiting = c.pending_second_vectors(m, 100)
    assert [r.id for r in waiting] == ["a1", "a2", "d1", "d2", "b1"]  # every active row, oldest first
    assert [r.id for r in c.pending_second_vectors(m, 2)] == ["a1", "a2"]
    counter = capability(subject, ChangeCounter)
    before = counter.change_counter("alice") if counter is not None else None
    vecs = np.eye(5, 3, dtype=np.float32)
    assert c.set_second_vectors(m, waiting, vecs) == 5
    if counter is not None:  # a search answer kept at the old counter is not served again
        assert counter.change_counter("alice") > before
    assert c.pending_second_vectors(m, 100) == []
    assert [r.id for r in c.pending_second_vectors(other, 100)] == ["a1", "a2", "d1", "d2", "b1"]
    got = c.second_vectors("alice", m, ["a1", "a2", "b1", "nobody"])
    assert set(got) == {"a1", "a2"}  # scoped by namespace
    assert np.allclose(got["a2"], vecs[1]) and got["a2"].dtype == np.float32
    assert c.second_vectors("alice", other, ["a1"]) == {}
    assert c.set_second_vectors(m, waiting[:1], vecs[1:2]) == 0  # already has one: left alone
    # new words: the vector goes; a vector of the old words is not taken
    old_a1 = waiting[0]
    subject.upsert([item(rec("a1", "Alice prefers black coffee now"), unit(1.0))])
    assert [r.id for r in c.pending_second_vectors(m, 100)] == ["a1"]
    assert c.set_second_vectors(m, [old_a1], vecs[:1]) == 0
    # other changes (access statistics, importance) keep it
    subject.record_access("alice", ["a2"], T0)
    subject.upsert([item(rec("a2", "我喜欢喝咖啡，尤其是早上的拿铁").with_(importance=0.9), None)])
    assert "a2" in c.second_vectors("alice", m, ["a2"])
    # deleted and archived rows have none and are not waited for
    subject.delete("alice", ["a2"])
    subject.upsert([IndexItem(record=rec("d1", "went to the market", file=DAY1, memory_type=MemoryType.EVENT,
                                         minutes=1).with_(is_active=False))])
    assert c.second_vectors("alice", m, ["a2"]) == {}
    assert [r.id for r in c.pending_second_vectors(m, 100)] == ["a1"]
