"""Index contract: history, relations, file states, the state store, stats and reopening."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memfold.errors import MemoryIndexError
from memfold.index.base import Index, IndexItem
from memfold.models import HistoryEntry, MemoryType

from .conftest import T0, item, rec, unit


def test_history_is_returned_in_append_order(index: Index) -> None:
    entries = [
        HistoryEntry("m1", "alice", "add", T0 + timedelta(minutes=5), None, "v1", {"file": "MEMORY.md"}),
        HistoryEntry("m1", "alice", "update", T0, "v1", "v2 改了", {"by": "hand", "n": [1, 2]}),
        HistoryEntry("m2", "alice", "add", T0, None, "other", {}),
        HistoryEntry("m1", "bob", "add", T0, None, "bob's m1", {}),
    ]
    index.append_history(entries[:2])
    index.append_history(entries[2:])
    index.append_history([HistoryEntry("m1", "alice", "delete", T0 - timedelta(days=1), "v2 改了", None, {})])
    got = index.history("alice", "m1")
    assert [e.action for e in got] == ["add", "update", "delete"]  # the order written, not the timestamps
    assert got[:2] == entries[:2]
    assert index.history("bob", "m1") == [entries[3]]
    assert index.history("alice", "unknown") == []
    index.append_history([])


def test_history_survives_deletion_of_the_memory(index: Index) -> None:
    index.upsert([item(rec("m1", "short lived"), unit(1))])
    index.append_history([HistoryEntry("m1", "alice", "add", T0, None, "short lived", {})])
    index.delete("alice", ["m1"])
    assert [e.action for e in index.history("alice", "m1")] == ["add"]


def test_relations_are_scoped_and_replaced(index: Index) -> None:
    index.upsert([item(rec(f"m{i}", f"memory {i}"), unit(1, i)) for i in range(3)])
    index.add_relation("alice", "m1", "m0", "contradicts", 1.0)
    index.add_relation("alice", "m2", "m0", "supports", 0.3)
    index.add_relation("alice", "m2", "m0", "supports", 0.9)  # same edge: replaced
    rels = sorted(index.relations("alice", "m0"), key=lambda x: x["source_id"])
    assert [(x["source_id"], x["target_id"], x["relation"], x["strength"]) for x in rels] == [
        ("m1", "m0", "contradicts", 1.0), ("m2", "m0", "supports", 0.9)]
    assert all(isinstance(x["created_at"], str) for x in rels)
    assert [x["target_id"] for x in index.relations("alice", "m1")] == ["m0"]
    assert index.relations("bob", "m0") == []


def test_file_states(index: Index) -> None:
    assert index.file_state("alice", "MEMORY.md") is None
    index.set_file_state("alice", "MEMORY.md", (1_700_000_000_123_456_789, 2048))
    index.set_file_state("alice", "MEMORY.md", (1_700_000_000_999_999_999, 4096))
    index.set_file_state("alice", "learnings.md", (5, 6))
    assert index.file_state("alice", "MEMORY.md") == (1_700_000_000_999_999_999, 4096)
    assert index.file_state("bob", "MEMORY.md") is None
    index.set_file_state("alice", "MEMORY.md", None)
    index.set_file_state("alice", "never-set.md", None)
    assert index.file_state("alice", "MEMORY.md") is None and index.file_state("alice", "learnings.md") == (5, 6)


def test_state_store(index: Index) -> None:
    value = {"messages": [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "hi"}],
             "summary": "", "n": 3, "ratio": 0.75, "flag": False, "nested": {"a": None}}
    index.put_state("alice", "session", "s2", value)
    index.put_state("alice", "session", "s1", {"v": 1})
    index.put_state("alice", "pins", "agent-a", {"recent": ["x", "y"]})
    index.put_state("bob", "session", "s1", {"v": "bob"})
    assert index.get_state("alice", "session", "s2") == value
    assert index.list_state("alice", "session") == ["s1", "s2"]
    assert index.list_state("alice", "pins") == ["agent-a"]
    assert index.get_state("bob", "session", "s1") == {"v": "bob"}
    index.put_state("alice", "session", "s1", {"v": 2})
    assert index.get_state("alice", "session", "s1") == {"v": 2}
    index.delete_state("alice", "session", "s1")
    index.delete_state("alice", "session", "never")
    assert index.get_state("alice", "session", "s1") is None
    assert index.list_state("alice", "session") == ["s2"]
    assert index.get_state("carol", "session", "s2") is None and index.list_state("carol", "session") == []


def test_stats(index: Index) -> None:
    assert index.stats("alice") == {"total": 0, "active": 0, "archived": 0, "episodic": 0, "by_type": {},
                                    "avg_importance": None}
    index.upsert([item(rec("a", "a fact", importance=0.2), unit(1)),
                  item(rec("b", "a todo", memory_type=MemoryType.TODO, importance=0.6), unit(0, 1)),
                  item(rec("c", "a turn", memory_type=MemoryType.EVENT, file="", importance=0.7), unit(0, 0, 1)),
                  item(rec("d", "old fact", importance=0.5), unit(1, 1))])
    index.upsert([IndexItem(record=index.get("alice", ["d"])[0].with_(is_active=False))])
    assert index.stats("alice") == {"total": 4, "active": 3, "archived": 1, "episodic": 1,
                                    "by_type": {"fact": 1, "todo": 1, "event": 1}, "avg_importance": 0.5}
    assert index.stats("bob")["total"] == 0


def test_reopened_index_keeps_everything(make_index) -> None:  # type: ignore[no-untyped-def]
    a = make_index()
    a.upsert([item(rec("m1", "persisted kiwi"), unit(1))])
    a.append_history([HistoryEntry("m1", "alice", "add", T0, None, "persisted kiwi", {})])
    a.put_state("alice", "session", "s", {"k": 1})
    a.set_file_state("alice", "MEMORY.md", (1, 2))
    a.close()
    b = make_index()
    assert b.get("alice", ["m1"])[0].content == "persisted kiwi"
    assert [m for m, _ in b.keyword_search("alice", ["kiwi"], 5)] == ["m1"]
    assert b.vector_search("alice", unit(1), 1)[0][0] == "m1"
    assert len(b.history("alice", "m1")) == 1 and b.get_state("alice", "session", "s") == {"k": 1}
    assert b.file_state("alice", "MEMORY.md") == (1, 2)


def test_an_index_built_by_another_embedder_is_refused(make_index) -> None:  # type: ignore[no-untyped-def]
    make_index(dim=8, embedder_name="model-a").close()
    with pytest.raises(MemoryIndexError, match="reindex"):
        make_index(dim=8, embedder_name="model-b")
    with pytest.raises(MemoryIndexError, match="reindex"):
        make_index(dim=16, embedder_name="model-a")
