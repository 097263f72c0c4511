"""What a batch of turns leaves in the SQLite index (real file, bundled model) after the write
path was made cheaper (session 6): each row's keyword terms are those of its text and context,
made once per text for the batch (``TermsMemo``) and inserted with the row in one ``executemany``;
a stored row in a batch is updated in place; an id twice in one upsert is one row, the later
version; an id of another namespace refuses the whole batch."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from memfold import Memory
from memfold.engine.storage import records as rec
from memfold.errors import MemoryIndexError
from memfold.text.terms import fts_document, keyword_text

TURNS = ["Anna moved to Lisbon in March.", "ΟΔΟΣ Σ and the café ﬁle", "我的2026年计划是去北京", "She’s painting the fence",
         "´ acute first", "用Python写代码", "Anna moved to Lisbon in March."]


def _rows(mem: Memory, user: str) -> list[tuple]:
    db = sqlite3.connect(mem.index.inner.path)
    try:
        return db.execute("SELECT id, content, context, terms, source_ids, embedding IS NOT NULL FROM memories "
                          "WHERE user_id = ? ORDER BY rowid", (user,)).fetchall()
    finally:
        db.close()


def test_a_batch_of_turns_stores_the_terms_of_each_text_and_its_context(mem: Memory):
    msgs = [{"role": "user", "content": t, "name": "Ann" if i % 2 else None, "turn_id": f"t{i}"}
            for i, t in enumerate(TURNS[:-1])]
    msgs = [{k: v for k, v in m.items() if v is not None} for m in msgs]
    msgs.insert(3, {"role": "assistant", "content": "Sure — noted, Ann."})
    mem.add(msgs, "u", infer=False)
    rows = _rows(mem, "u")
    assert [r[1] for r in rows] == TURNS[:-1]
    for _id, content, context, terms, _src, has_vector in rows:
        assert context, content  # each turn carries the day and the turn before
        assert terms == fts_document(keyword_text(content, context)), content
        assert has_vector
    assert mem.search("Lisbon", "u", limit=3)  # keyword-searchable at once


def test_a_stored_turn_in_a_later_batch_is_updated_in_place(mem: Memory):
    mem.add([{"role": "user", "content": TURNS[0], "turn_id": "a"}], "u", infer=False)
    first = _rows(mem, "u")
    mem.add([{"role": "user", "content": TURNS[0], "turn_id": "b"},
             {"role": "user", "content": "A new thing entirely about kayaks.", "turn_id": "c"}], "u", infer=False)
    rows = _rows(mem, "u")
    assert len(rows) == 2 and rows[0][0] == first[0][0]
    assert rows[0][4] == '["a", "b"]' and rows[0][3] == first[0][3]  # the sources grew, the terms stayed
    assert rows[1][3] == fts_document(keyword_text(rows[1][1], rows[1][2]))


def test_an_id_twice_in_one_upsert_is_one_row_the_later_version(mem: Memory):
    mem.add([{"role": "user", "content": "The boat is red.", "turn_id": "a"}], "u", infer=False)
    old = mem.index.get("u", [_rows(mem, "u")[0][0]])[0]
    vec = mem.index.iter_rows("u").__next__().vector
    new = old.with_(id=rec.new_id())
    later = new.with_(content="The boat is blue.")
    mem.index.upsert([rec.item(new, vec), rec.item(later, vec)])
    rows = _rows(mem, "u")
    assert [r[1] for r in rows] == ["The boat is red.", "The boat is blue."]
    assert rows[1][3] == fts_document(keyword_text("The boat is blue.", later.context))


def test_an_id_of_another_namespace_refuses_the_whole_batch(mem: Memory):
    mem.add([{"role": "user", "content": "The boat is red.", "turn_id": "a"}], "u", infer=False)
    theirs = mem.index.get("u", [_rows(mem, "u")[0][0]])[0]
    vec = next(mem.index.iter_rows("u")).vector
    fresh = theirs.with_(id=rec.new_id(), user_id="v", content="A fresh one.")
    with pytest.raises(MemoryIndexError, match="another namespace"):
        mem.index.upsert([rec.item(fresh, vec), rec.item(replace(theirs, user_id="v"), vec)])
    assert _rows(mem, "v") == []
