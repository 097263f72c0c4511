"""Index contract: the row iterators (``RowSource``) yield every stored row with named fields, in
the order written, batch after batch; ``copy_index`` copies an index through them alone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import numpy as np

from memfold.index.base import Index, RowSource
from memfold.index.rows import FileState, RelationRow, StateDoc
from memfold.index.transfer import copy_index
from memfold.models import HistoryEntry, MemoryType

from .conftest import T0, item, rec, unit


def _fill(index: Index) -> list[str]:
    """Five rows of alice (one archived, one episodic turn), one of bob, their history and the rest."""
    index.upsert([item(rec("a1", "I drink green tea", importance=0.8, structured_data={"drink": "茶"},
                           source_ids=("t9",)), unit(1, 0), content_hash="h1"),
                  item(rec("b1", "Bob keeps bees", "bob"), unit(0, 1), content_hash="hb")])
    index.upsert([item(rec("a2", "I drink oolong tea", minutes=1), unit(1, 1), content_hash="h2"),
                  item(rec("a3", "we talked about parrots", file="", context="speaker: Ann", minutes=2),
                       unit(0, 0, 1), content_hash="h3"),
                  item(rec("a4", "我的生日是五月三日", minutes=3), unit(0, 1, 1), content_hash="h4"),
                  item(rec("a5", "I live in Lyon", minutes=4), unit(1, 0, 1), content_hash="h5")])
    index.upsert([item(rec("a1", "I drink green tea", is_active=False, superseded_by="a2", importance=0.8,
                           structured_data={"drink": "茶"}, source_ids=("t9",)), None, terms=None, content_hash="")])
    index.record_access("alice", ["a2"], T0 + timedelta(days=1))
    index.append_history([HistoryEntry(f"a{i}", "alice", "add", T0 + timedelta(minutes=5 - i), None, f"v{i}",
                                       {"n": i}) for i in range(1, 6)])
    index.append_history([HistoryEntry("b1", "bob", "add", T0, None, "Bob keeps bees", {})])
    index.append_history([HistoryEntry("a2", "alice", "replace", T0, "I drink green tea", "I drink oolong tea",
                                       {"old_id": "a1"})])
    index.add_relation("alice", "a2", "a1", "contradicts", 1.0)
    index.set_file_state("alice", "MEMORY.md", (1_700_000_000_123_456_789, 2048))
    index.set_file_state("alice", "learnings.md", (5, 6))
    index.put_state("alice", "session", "s1", {"messages": [{"role": "user", "content": "你好"}]})
    index.put_state("carol", "agent", "planner", {"pins": ["x"]})  # a namespace with nothing else
    return ["a1", "a2", "a3", "a4", "a5"]


def test_row_iterators_yield_every_stored_row_in_batches(index: Index) -> None:
    ids = _fill(index)
    assert isinstance(index, RowSource)
    rows = list(index.iter_rows("alice", batch=2))
    assert [r.record.id for r in rows] == ids  # the order first written, across three batches
    assert [r.record for r in rows] == index.list_records("alice", active_only=False)
    vectors = {"a1": unit(1, 0), "a2": unit(1, 1), "a3": unit(0, 0, 1), "a4": unit(0, 1, 1), "a5": unit(1, 0, 1)}
    for r in rows:
        assert r.vector is not None and r.vector.dtype == np.float32
        np.testing.assert_allclose(r.vector, vectors[r.record.id], atol=1e-6)
        assert r.content_hash == "h" + r.record.id[1]
    by_id = {r.record.id: r for r in rows}
    assert by_id["a1"].terms is None and not by_id["a1"].record.is_active  # archived: not keyword-searchable
    assert by_id["a4"].terms == item(rec("a4", "我的生日是五月三日"), None).terms
    assert by_id["a2"].record.access_count == 1 and by_id["a3"].record.file == ""
    assert [r.record.id for r in index.iter_rows("bob")] == ["b1"]
    assert sorted(r.record.id for r in index.iter_rows(batch=1)) == sorted([*ids, "b1"])
    assert list(index.iter_rows("carol")) == []

    history = list(index.iter_history("alice", batch=2))
    assert [(e.memory_id, e.action) for e in history] == [*((i, "add") for i in ids), ("a2", "replace")]
    assert history[0] == index.history("alice", "a1")[0] and history[-1] == index.history("alice", "a2")[-1]
    assert [e.memory_id for e in index.iter_history(batch=3)] == ["a1", "a2", "a3", "a4", "a5", "b1", "a2"]
    assert list(index.iter_relations("alice")) == [RelationRow("alice", "a2", "a1", "contradicts", 1.0)]
    assert list(index.iter_relations("bob")) == []
    assert list(index.iter_file_states("alice")) == [FileState("alice", "MEMORY.md", 1_700_000_000_123_456_789, 2048),
                                                     FileState("alice", "learnings.md", 5, 6)]
    assert list(index.iter_states()) == [
        StateDoc("alice", "session", "s1", {"messages": [{"role": "user", "content": "你好"}]}),
        StateDoc("carol", "agent", "planner", {"pins": ["x"]})]
    assert index.namespaces() == ["alice", "bob", "carol"]
    assert index.user_ids() == ["alice", "bob"]


def test_copy_index_reads_only_the_row_iterators(make_index: Callable[..., Index]) -> None:
    source = make_index()
    _fill(source)
    target = make_index(name="copy")
    report = copy_index(source, target)
    assert report.memories == {"alice": 5, "bob": 1, "carol": 0}
    assert (report.history, report.relations, report.files, report.states) == (7, 1, 2, 2)
    for u in ("alice", "bob", "carol"):
        assert target.list_records(u, active_only=False) == source.list_records(u, active_only=False)
        assert [(r.record, r.terms, r.content_hash) for r in target.iter_rows(u)] == \
            [(r.record, r.terms, r.content_hash) for r in source.iter_rows(u)]
    assert target.history("alice", "a2") == source.history("alice", "a2")
    assert target.get_state("carol", "agent", "planner") == {"pins": ["x"]}
    assert target.file_state("alice", "MEMORY.md") == (1_700_000_000_123_456_789, 2048)
    assert [m for m, _ in target.keyword_search("alice", ["oolong"], 5)] == ["a2"]
    assert [m for m, _ in target.vector_search("alice", unit(1, 1), 1)] == ["a2"]
    assert target.keyword_search("alice", ["green"], 5) == []  # the archived row stays out of search
    assert target.count("alice") == 4 and target.count("alice", active_only=False) == 5
    assert {r.memory_type for r in target.list_records("alice")} == {MemoryType.FACT}
