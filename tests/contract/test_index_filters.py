"""Index contract: a filter (``memfold.filters``) gives the same rows on SQLite and PostgreSQL, tested
in SQL by ``list_records(where_filter=)`` and ``matching_ids``."""

from __future__ import annotations

from typing import Any

import pytest

from memfold import filters
from memfold.errors import InvalidInputError
from memfold.index.base import Index
from memfold.models import MemoryType

from .conftest import item, rec, unit

ROWS: list[dict[str, Any]] = [
    dict(mid="a", content="Trip to Kyoto in May", memory_type=MemoryType.EVENT, importance=0.9, minutes=0,
         agent_id="planner", source_session_id="s1",
         structured_data={"topic": "travel", "priority": 8, "tags": ["japan", "Spring"], "done": False}),
    dict(mid="b", content="Likes green tea", memory_type=MemoryType.PREFERENCE, importance=0.6, minutes=60,
         structured_data={"topic": "food", "priority": 3, "status": "active", "score": 0.5}),
    dict(mid="c", content="Dentist on Friday", memory_type=MemoryType.TODO, importance=0.4, minutes=120,
         agent_id="helper", structured_data={"topic": "health", "priority": "high", "done": True, "note": None}),
    dict(mid="d", content="我喜欢喝绿茶", memory_type=MemoryType.PREFERENCE, importance=0.2, minutes=180,
         structured_data={"topic": "food", "语言": "中文"}),
]


@pytest.fixture
def filled(index: Index) -> Index:
    recs = []
    for i, row in enumerate(ROWS):
        row = dict(row)
        recs.append(rec(row.pop("mid"), row.pop("content"), **row))
    index.upsert([item(r, unit(1, i)) for i, r in enumerate(recs)])
    index.upsert([item(rec("x", "other user's tea", user_id="bob", structured_data={"topic": "food"}), unit(0, 1))])
    return index


CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"topic": "food"}, {"b", "d"}),
    ({"metadata.topic": {"eq": "travel"}}, {"a"}),
    ({"topic": {"ne": "food"}}, {"a", "c"}),
    ({"status": {"ne": "active"}}, {"a", "c", "d"}),  # ne matches a memory without the key
    ({"priority": {"gte": 3, "lt": 8}}, {"b"}),  # numbers compare with numbers only ("high" is a text)
    ({"priority": {"gt": "a"}}, {"c"}),  # texts with texts
    ({"topic": {"in": ["travel", "health"]}}, {"a", "c"}),
    ({"topic": {"nin": ["travel", "health"]}}, {"b", "d"}),
    ({"tags": {"contains": "japan"}}, {"a"}),  # an item of a list
    ({"tags": {"icontains": "SPRING"}}, {"a"}),
    ({"topic": {"contains": "oo"}}, {"b", "d"}),  # a substring of a text
    ({"topic": {"icontains": "TRAV"}}, {"a"}),
    ({"done": True}, {"c"}),
    ({"done": False}, {"a"}),
    ({"note": None}, {"a", "b", "c", "d"}),  # null or missing
    ({"note": "*"}, set()),  # present and not null
    ({"status": "*"}, {"b"}),
    ({"语言": "中文"}, {"d"}),
    ({"type": "preference"}, {"b", "d"}),
    ({"memory_type": {"in": ["todo", "event"]}}, {"a", "c"}),
    ({"importance": {"gte": 0.6}}, {"a", "b"}),
    ({"created_at": {"gte": "2024-05-01T13:00:00+00:00"}}, {"b", "c", "d"}),
    ({"created_at": {"lt": "2024-05-01T14:00:00Z"}, "updated_at": {"gt": "2024-05-01"}}, {"a", "b"}),
    ({"agent_id": "planner"}, {"a"}),
    ({"agent_id": "*"}, {"a", "c"}),
    ({"session_id": {"in": ["s1", "s2"]}}, {"a"}),
    ({"content": {"icontains": "TEA"}}, {"b"}),
    ({"content": {"contains": "绿茶"}}, {"d"}),
    ({"OR": [{"topic": "travel"}, {"importance": {"lt": 0.3}}]}, {"a", "d"}),
    ({"NOT": [{"topic": "food"}, {"done": True}]}, {"a"}),
    ({"AND": [{"OR": [{"topic": "food"}, {"topic": "health"}]}, {"NOT": [{"status": "active"}]},
              {"importance": {"gte": 0.3}}]}, {"c"}),
]


@pytest.mark.parametrize("given,expected", CASES, ids=[str(c[0]) for c in CASES])
def test_a_filter_selects_the_same_rows_on_both_backends(filled: Index, given: dict[str, Any], expected: set[str]):
    f = filters.parse(given)
    assert {r.id for r in filled.list_records("alice", where_filter=f)} == expected
    assert filled.matching_ids("alice", ["a", "b", "c", "d", "x"], f) == expected  # never another namespace's row


def test_a_filtered_listing_pages_in_sql(filled: Index):
    f = filters.parse({"topic": {"in": ["food", "travel"]}})
    assert [r.id for r in filled.list_records("alice", where_filter=f, limit=2)] == ["a", "b"]
    assert [r.id for r in filled.list_records("alice", where_filter=f, limit=2, offset=2)] == ["d"]


def test_owners_names_the_namespace_of_an_id(filled: Index):
    assert filled.owners("x") == ["bob"] and filled.owners("a") == ["alice"] and filled.owners("zz") == []


@pytest.mark.parametrize("bad,words", [
    ({"topic": {"like": "x"}}, "unknown operator 'like'"),
    ({"importance": {"gte": "high"}}, "importance.gte must be a number"),
    ({"type": "feeling"}, "unknown memory type"),
    ({"created_at": {"gte": "last week"}}, "not an ISO 8601 date"),
    ({"topic": {"in": []}}, "non-empty list"),
    ({"OR": {"topic": "x"}}, "must be a list of objects"),
    ({"done": {"gt": True}}, "must be a number or a string"),
    ({'to"pic': 1}, "without quotes"),
    ({"agent_id": {"gt": "a"}}, "'gt' does not apply to agent_id"),
])
def test_a_bad_filter_is_refused_naming_the_problem(bad: dict[str, Any], words: str):
    with pytest.raises(InvalidInputError, match=words.replace("(", r"\(").replace(".", r"\.")):
        filters.parse(bad)


def test_a_filter_is_bounded_before_any_work():
    with pytest.raises(InvalidInputError, match="more than 64 conditions"):
        filters.parse({"OR": [{"k": i} for i in range(65)]})
    deep: dict[str, Any] = {"k": 1}
    for _ in range(10):
        deep = {"AND": [deep]}
    with pytest.raises(InvalidInputError, match="deeper than 8"):
        filters.parse(deep)
    with pytest.raises(InvalidInputError, match="at most 1000"):
        filters.parse({"k": {"in": list(range(1001))}})
