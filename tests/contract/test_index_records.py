"""Index contract: writing, reading, updating, archiving and deleting records, scoped by user_id."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

import numpy as np
import pytest

from memfold.errors import MemoryIndexError
from memfold.index.base import Index, IndexItem
from memfold.models import MemoryType

from .conftest import DIM, T0, item, rec, unit


def test_round_trip_keeps_every_field(index: Index) -> None:
    r = rec("m1", "我的猫叫 Mochi, likes tuna", memory_type=MemoryType.PREFERENCE, importance=0.83,
            confidence=0.61, access_count=4, last_accessed_at=T0 + timedelta(days=2, microseconds=7),
            structured_data={"pet": {"name": "Mochi", "ages": [1, 2.5]}, "语言": "中文", "ok": True, "none": None},
            source_ids=("t1", "t2"), agent_id="planner", source_session_id="s-9", superseded_by=None,
            context="speaker: Ann", file="learnings.md")
    index.upsert([item(r, unit(1, 0))])
    [got] = index.get("alice", ["m1"])
    assert got == r
    assert got.created_at.utcoffset() == timedelta(0) and got.last_accessed_at.tzinfo is not None


def test_rows_read_by_a_search_keep_every_field(index: Index) -> None:
    """The rows a search reads (PostgreSQL: with the nearest rows, and by ``get`` in the search's
    scope, ``structured_data`` sent as text and decoded here) equal the records written: nested and
    flat objects, a long one, an empty one."""
    data = [{"pet": {"name": "Mochi", "ages": [1, 2.5]}, "语言": "中文", "ok": True, "none": None},
            {"role": "user", "speaker": "Ann", "n": 3, "x": 1e-7}, {"long": "y" * 400, "k": [1, {"a": None}]}, {}]
    recs = [rec(f"s{i}", f"tuna note {i}", structured_data=d, source_ids=(f"t{i}",), access_count=i)
            for i, d in enumerate(data)]
    index.upsert([item(r, unit(1, i)) for i, r in enumerate(recs)])
    scope = getattr(index, "search_scope", None)
    with scope("alice") if callable(scope) else contextlib.nullcontext():
        index.keyword_search("alice", ["tuna"], 2)  # noted: its rows come with the nearest rows
        assert {mid for mid, _ in index.vector_search("alice", unit(1, 0), 4)} == {r.id for r in recs}
        got = index.get("alice", [r.id for r in reversed(recs)])
    assert got == list(reversed(recs))
    assert [g.structured_data for g in got] == list(reversed(data))


def test_get_keeps_request_order_and_skips_unknown(index: Index) -> None:
    index.upsert([item(rec(f"m{i}", f"memory number {i}"), unit(1, i)) for i in range(3)])
    assert [r.id for r in index.get("alice", ["m2", "nope", "m0"])] == ["m2", "m0"]
    assert index.get("alice", []) == []


def test_list_orders_by_first_insert_and_filters(index: Index) -> None:
    index.upsert([item(rec("b", "second written first"), unit(1))])
    index.upsert([item(rec("a", "a todo", memory_type=MemoryType.TODO), unit(0, 1)),
                  item(rec("c", "a daily note", file="memory/202405/20240501.md"), unit(0, 0, 1))])
    index.upsert([item(rec("b", "second, updated later"), None)])  # an update keeps the row's place
    assert [r.id for r in index.list_records("alice")] == ["b", "a", "c"]
    assert [r.id for r in index.list_records("alice", memory_type="todo")] == ["a"]
    assert [r.id for r in index.list_records("alice", file="memory/202405/20240501.md")] == ["c"]
    assert [r.id for r in index.list_records("alice", limit=2)] == ["b", "a"]
    assert [r.id for r in index.list_records("alice", limit=2, offset=2)] == ["c"]
    assert index.list_records("alice", offset=3) == []
    assert index.count("alice") == 3


def test_namespaces_never_see_each_other(index: Index) -> None:
    index.upsert([item(rec("a1", "shared words about coffee", "alice"), unit(1, 0)),
                  item(rec("b1", "shared words about coffee", "bob"), unit(1, 0))])
    for user, mine in (("alice", "a1"), ("bob", "b1")):
        assert [r.id for r in index.list_records(user)] == [mine]
        assert index.get(user, ["a1", "b1"])[0].id == mine and len(index.get(user, ["a1", "b1"])) == 1
        assert [m for m, _ in index.keyword_search(user, ["coffee"], 10)] == [mine]
        assert [m for m, _ in index.vector_search(user, unit(1, 0), 10)] == [mine]
        assert [m for m, _ in index.vector_search_many(user, np.stack([unit(1, 0)]), 10)[0]] == [mine]
        assert list(index.content_hashes(user, "MEMORY.md")) == [mine]
        assert index.count(user) == 1 and index.stats(user)["total"] == 1
    assert index.list_records("carol") == [] and index.keyword_search("carol", ["coffee"], 5) == []
    assert index.vector_search("carol", unit(1, 0), 5) == []
    assert index.user_ids() == ["alice", "bob"]
    # a call scoped to one namespace cannot touch another's rows
    index.delete("alice", ["b1"])
    index.record_access("alice", ["b1"], T0)
    assert index.get("bob", ["b1"])[0].access_count == 0


def test_an_id_belongs_to_one_namespace(index: Index) -> None:
    index.upsert([item(rec("m1", "alice's memory"), unit(1))])
    with pytest.raises(MemoryIndexError):
        index.upsert([item(rec("m1", "bob takes it over", "bob"), unit(1))])
    assert index.get("alice", ["m1"])[0].content == "alice's memory"


def test_new_rows_need_a_vector_of_the_index_dimension(index: Index) -> None:
    with pytest.raises(MemoryIndexError):
        index.upsert([item(rec("m1", "no vector"), None)])
    with pytest.raises(MemoryIndexError):
        index.upsert([item(rec("m2", "short vector"), np.ones(DIM - 1, dtype=np.float32))])
    assert index.count("alice") == 0


def test_a_failed_batch_writes_nothing(index: Index) -> None:
    with pytest.raises(MemoryIndexError):
        index.upsert([item(rec("ok", "fine"), unit(1)), item(rec("bad", "missing vector"), None)])
    assert index.get("alice", ["ok", "bad"]) == []


def test_update_keeps_stored_vector_terms_and_hash_when_not_given(index: Index) -> None:
    index.upsert([item(rec("m1", "original kiwi text"), unit(1, 0), content_hash="h1"),
                  item(rec("m2", "another banana"), unit(0, 1), content_hash="h2")])
    r = rec("m1", "edited text", importance=0.9)
    index.upsert([IndexItem(record=r, vector=None, terms=None, content_hash="")])
    [got] = index.get("alice", ["m1"])
    assert got.content == "edited text" and got.importance == 0.9
    assert index.content_hashes("alice", "MEMORY.md") == {"m1": "h1", "m2": "h2"}
    assert [m for m, _ in index.keyword_search("alice", ["kiwi"], 5)] == ["m1"]  # old terms still there
    top, score = index.vector_search("alice", unit(1, 0), 1)[0]
    assert top == "m1" and score == pytest.approx(1.0, abs=1e-5)
    # new vector, terms and hash replace the stored ones
    index.upsert([item(r, unit(0, 0, 1), terms="mango", content_hash="h3")])
    assert index.keyword_search("alice", ["kiwi"], 5) == []
    assert [m for m, _ in index.keyword_search("alice", ["mango"], 5)] == ["m1"]
    assert index.vector_search("alice", unit(0, 0, 1), 1)[0][0] == "m1"
    assert index.content_hashes("alice", "MEMORY.md")["m1"] == "h3"


def test_archived_rows_are_kept_but_not_searchable(index: Index) -> None:
    r = rec("m1", "archived kiwi fact")
    index.upsert([item(r, unit(1, 0)), item(rec("m2", "live kiwi fact"), unit(0.9, 0.1))])
    index.upsert([IndexItem(record=r.with_(is_active=False, superseded_by="m2"))])
    assert [m for m, _ in index.keyword_search("alice", ["kiwi"], 5)] == ["m2"]
    assert [m for m, _ in index.vector_search("alice", unit(1, 0), 5)] == ["m2"]
    assert [m for m, _ in index.vector_search_many("alice", np.stack([unit(1, 0)]), 5)[0]] == ["m2"]
    assert [x.id for x in index.list_records("alice")] == ["m2"]
    assert [x.id for x in index.list_records("alice", active_only=False)] == ["m1", "m2"]
    assert index.content_hashes("alice", "MEMORY.md") == {"m2": "h"}
    assert (index.count("alice"), index.count("alice", active_only=False)) == (1, 2)
    [got] = index.get("alice", ["m1"])
    assert not got.is_active and got.superseded_by == "m2"
    # re-activation without terms has nothing to search by; with terms it is searchable again
    with pytest.raises(MemoryIndexError):
        index.upsert([IndexItem(record=got.with_(is_active=True))])
    index.upsert([IndexItem(record=got.with_(is_active=True, superseded_by=None), terms="kiwi")])
    assert {m for m, _ in index.keyword_search("alice", ["kiwi"], 5)} == {"m1", "m2"}
    assert {m for m, _ in index.vector_search("alice", unit(1, 0), 5)} == {"m1", "m2"}


def test_delete_removes_rows_and_their_relations(index: Index) -> None:
    index.upsert([item(rec(f"m{i}", f"kiwi number {i}"), unit(1, i)) for i in range(3)])
    index.add_relation("alice", "m0", "m1", "refines", 0.7)
    index.add_relation("alice", "m2", "m0", "supports", 0.4)
    index.add_relation("alice", "m1", "m2", "contradicts", 1.0)
    index.delete("alice", ["m0", "unknown"])
    assert index.get("alice", ["m0"]) == []
    assert [m for m, _ in index.keyword_search("alice", ["kiwi"], 5)] in (["m1", "m2"], ["m2", "m1"])
    assert {m for m, _ in index.vector_search("alice", unit(1, 0), 5)} == {"m1", "m2"}
    assert index.relations("alice", "m0") == []
    assert [(x["source_id"], x["target_id"]) for x in index.relations("alice", "m2")] == [("m1", "m2")]
    index.delete("alice", [])
    assert index.count("alice") == 2


def test_record_access_counts_every_access(index: Index) -> None:
    index.upsert([item(rec("m1", "often read"), unit(1)), item(rec("m2", "read once"), unit(0, 1))])
    index.record_access("alice", ["m1", "m2"], T0 + timedelta(days=1))
    index.record_access("alice", ["m1"], T0 + timedelta(days=3))
    m1, m2 = index.get("alice", ["m1", "m2"])
    assert (m1.access_count, m1.last_accessed_at) == (2, T0 + timedelta(days=3))
    assert (m2.access_count, m2.last_accessed_at) == (1, T0 + timedelta(days=1))
    index.record_access("alice", [], T0)


def test_clear_files_keeps_episodic_and_archived_rows(index: Index) -> None:
    index.upsert([item(rec("f1", "file memory"), unit(1)),
                  item(rec("d1", "daily note", file="memory/202405/20240501.md"), unit(0, 1)),
                  item(rec("e1", "an episodic turn", file="", memory_type=MemoryType.EVENT), unit(0, 0, 1)),
                  item(rec("x1", "archived one"), unit(0, 0, 0, 1))])
    index.upsert([IndexItem(record=index.get("alice", ["x1"])[0].with_(is_active=False))])
    index.upsert([item(rec("z1", "bob's file memory", "bob"), unit(1))])
    index.set_file_state("alice", "MEMORY.md", (123, 45))
    index.set_file_state("bob", "MEMORY.md", (9, 9))
    index.clear_files("alice")
    assert sorted(r.id for r in index.list_records("alice", active_only=False)) == ["e1", "x1"]
    assert index.file_state("alice", "MEMORY.md") is None
    assert index.file_state("bob", "MEMORY.md") == (9, 9) and index.count("bob") == 1


def test_a_second_handle_sees_every_change(make_index) -> None:  # type: ignore[no-untyped-def]
    """Two processes share one index: searches of one follow the writes of the other."""
    a, b = make_index(), make_index()
    a.upsert([item(rec("m1", "kiwi one"), unit(1, 0)), item(rec("m2", "kiwi two"), unit(0, 1))])
    assert {m for m, _ in b.vector_search("alice", unit(1, 0), 5)} == {"m1", "m2"}  # b built its view now
    a.upsert([item(rec("m3", "kiwi three"), unit(1, 1))])
    a.delete("alice", ["m2"])
    a.upsert([IndexItem(record=a.get("alice", ["m1"])[0].with_(is_active=False))])
    assert [m for m, _ in b.vector_search("alice", unit(1, 0), 5)] == ["m3"]
    assert [m for m, _ in b.keyword_search("alice", ["kiwi"], 5)] == ["m3"]
    b.upsert([item(rec("m1", "kiwi one again"), unit(1, 0))])
    assert a.vector_search("alice", unit(1, 0), 1)[0][0] == "m1"


def test_remove_relation_of_one_kind_or_every_kind(index: Index) -> None:
    index.upsert([item(rec(f"m{i}", f"kiwi number {i}"), unit(1, i)) for i in range(3)])
    index.add_relation("alice", "m0", "m1", "supports", 0.7)
    index.add_relation("alice", "m0", "m1", "refines", 0.5)
    index.add_relation("alice", "m2", "m1", "supports", 0.4)
    assert index.remove_relation("bob", "m0", "m1") == 0  # another namespace's: untouched
    assert index.remove_relation("alice", "m0", "m1", "contradicts") == 0
    assert index.remove_relation("alice", "m0", "m1", "supports") == 1
    assert sorted((x["source_id"], x["relation"]) for x in index.relations("alice", "m1")) == [
        ("m0", "refines"), ("m2", "supports")]
    assert index.remove_relation("alice", "m0", "m1") == 1
    assert [x["source_id"] for x in index.relations("alice", "m1")] == ["m2"]


def test_usage_record_bounded_and_forgotten(index: Index) -> None:
    for i in range(5):
        index.log_usage("alice", T0 + timedelta(minutes=i), f"query {i}", [f"m{i}", "m9"] if i % 2 else [], 3, None)
    index.log_usage("bob", T0, "bob's query", ["m1"], 3, None)
    got = index.usage("alice", 10)
    assert [r["query"] for r in got] == ["query 4", "query 3", "query 2"]  # the newest 3 kept
    assert got[1]["ids"] == ["m3", "m9"] and got[0]["ids"] == []
    assert datetime.fromisoformat(got[0]["at"]) == T0 + timedelta(minutes=4)
    index.log_usage("alice", T0 + timedelta(days=10), "query 5", [], 3, T0 + timedelta(minutes=3))
    assert [r["query"] for r in index.usage("alice", 10)] == ["query 5", "query 4", "query 3"]  # older than since: gone
    assert index.forget_usage("alice", ["m3"]) == 1
    assert index.forget_usage("alice", [], ["QUERY 5"]) == 1  # a query holding the words, any case
    assert [r["query"] for r in index.usage("alice", 10)] == ["query 4"]
    assert index.forget_usage("alice", ["m9"], []) == 0 and index.usage("bob", 10)[0]["ids"] == ["m1"]
