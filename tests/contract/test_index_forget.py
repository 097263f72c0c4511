"""Index contract, deleted means deleted: ``forget_text`` keeps the events of a deleted memory's
history without its words, takes the quoting fields out of other entries of the namespace (and
only of that namespace); ``superseded`` and ``quoting`` find the rows that hold the words too."""

from __future__ import annotations

from datetime import timedelta

from memfold.index.base import Index
from memfold.models import HistoryEntry

from .conftest import T0, item, rec, unit

SECRET = 'the vault "code" is Orrindale'


def _h(mid: str, action: str, old: str | None, new: str | None, minutes: int, user: str = "alice",
       **detail: object) -> HistoryEntry:
    return HistoryEntry(mid, user, action, T0 + timedelta(minutes=minutes), old, new, dict(detail))


def test_forget_text_keeps_events_not_words(index: Index) -> None:
    index.append_history([
        _h("a", "add", None, SECRET, 0, file="MEMORY.md", origin="text"),
        _h("a", "update", SECRET, SECRET + " now", 1),
        _h("a", "forget", SECRET + " now", None, 2, query="vault Orrindale", by="query"),
        _h("b", "merge", SECRET, "the vault moved", 3, incoming=SECRET, rule="llm", supersedes="a"),
        _h("c", "add", None, "I like tea", 4, file="MEMORY.md"),
        _h("a", "add", None, SECRET, 5, user="bob"),
        _h("d", "add", None, "bob quotes " + SECRET, 6, user="bob"),
    ])
    assert index.forget_text("alice", ["a"], [SECRET, SECRET + " now"]) == 4
    a = index.history("alice", "a")
    assert [e.action for e in a] == ["add", "update", "forget"]
    assert all(e.old_content is None and e.new_content is None for e in a)
    assert [e.detail for e in a] == [{"file": "MEMORY.md", "origin": "text", "words_removed": True},
                                     {"words_removed": True}, {"by": "query", "words_removed": True}]
    [b] = index.history("alice", "b")
    assert (b.old_content, b.new_content) == (None, "the vault moved")
    assert b.detail == {"rule": "llm", "supersedes": "a", "words_removed": True}
    assert index.history("alice", "c")[0].new_content == "I like tea" and "words_removed" not in \
        index.history("alice", "c")[0].detail
    assert index.history("bob", "a")[0].new_content == SECRET  # another namespace is not touched
    assert index.history("bob", "d")[0].new_content == "bob quotes " + SECRET


def test_superseded_and_quoting_find_the_other_holders(index: Index) -> None:
    index.upsert([item(rec("new", "meeting at 11"), unit(1)),
                  item(rec("old", "meeting at 10", is_active=False, superseded_by="new"), unit(1, 1), terms=None),
                  item(rec("older", "meeting at 9", is_active=False, superseded_by="old"), unit(1, 2), terms=None),
                  item(rec("t2", "and then lunch", file="", context="2024-05-01 May 2024 Ann: meeting at 11"),
                       unit(0, 1)),
                  item(rec("x", "other", user_id="bob", is_active=False, superseded_by="new"), unit(0, 0, 1),
                       terms=None)])
    assert [r.id for r in index.superseded("alice", ["new"])] == ["old"]
    assert [r.id for r in index.superseded("alice", ["old", "new"])] == ["old", "older"]
    assert index.superseded("alice", []) == []
    assert [r.id for r in index.quoting("alice", ["meeting at 11"])] == ["t2"]
    assert index.quoting("alice", ["meeting at 12"]) == [] and index.quoting("bob", ["meeting at 11"]) == []


def test_a_short_text_is_only_looked_for_whole(index: Index) -> None:
    index.append_history([_h("a", "add", None, "ok", 0), _h("b", "merge", "ok", "I booked it", 1),
                          _h("c", "add", None, "I booked it", 2)])
    assert index.forget_text("alice", ["a"], ["ok"]) == 2
    assert index.history("alice", "b")[0].old_content is None  # "ok" itself, not the "ok" of "booked"
    assert index.history("alice", "b")[0].new_content == "I booked it"
    assert index.history("alice", "c")[0].new_content == "I booked it"


def test_turns_of_finds_the_active_turns_by_their_key(index: Index) -> None:
    index.upsert([item(rec("t1", "I like jazz", file="", source_ids=("k1",)), unit(1)),
                  item(rec("t2", "and blues", file="", source_ids=("k2", "k1")), unit(1, 1)),
                  item(rec("t3", "old words", file="", source_ids=("k1",), is_active=False, superseded_by="m"),
                       unit(1, 2), terms=None),
                  item(rec("m", "I like jazz", source_ids=("k1",)), unit(0, 1)),
                  item(rec("t4", "bob's turn", user_id="bob", file="", source_ids=("k1",)), unit(0, 0, 1))])
    assert [r.id for r in index.turns_of("alice", ["k1"])] == ["t1"]  # the key is the first source id
    assert [r.id for r in index.turns_of("alice", ["k2", "k1", "nope"])] == ["t1", "t2"]
    assert index.turns_of("alice", []) == [] and index.turns_of("alice", ["zz"]) == []
    assert [r.id for r in index.turns_of("bob", ["k1"])] == ["t4"]
