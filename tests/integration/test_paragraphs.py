"""Text written by hand outside bullets — a paragraph, or the seed-001 layout of a date heading
followed by the day's text — is memory too: indexed, found by search, deletable; the file keeps
the layout it was written in."""

from __future__ import annotations

from memfold import Memory

HAND = """

My car is parked on level 3 of the garage,
next to the elevator.

## 2026-11-02

Went to the dentist with Anna; the next check-up is in May.

## 2026-11-03

今天和小王去了成都，吃了很辣的火锅。
"""


def test_hand_written_paragraphs_are_found_and_the_file_keeps_its_layout(mem: Memory, root):
    mem.add("I like green tea", user_id="alice")
    path = root / "alice" / "MEMORY.md"
    path.write_text(path.read_text(encoding="utf-8") + HAND, encoding="utf-8")
    written = path.read_text(encoding="utf-8")

    hit = mem.search("where did I park the car", user_id="alice", limit=3)[0].record
    assert hit.content == "My car is parked on level 3 of the garage,\nnext to the elevator."
    dentist = mem.search("when is the next dentist check-up", user_id="alice", limit=3)[0].record
    assert dentist.content.startswith("Went to the dentist") and dentist.created_at.date().isoformat() == "2026-11-02"
    hotpot = next(h.record for h in mem.search("我们在成都吃了什么火锅", user_id="alice", limit=3) if "火锅" in h.record.content)
    assert hotpot.created_at.date().isoformat() == "2026-11-03"
    assert path.read_text(encoding="utf-8") == written  # no ids stamped into the paragraphs
    # the template's motto under the rule is not a memory
    assert not [r for r in mem.get_all("alice") if "Remember what matters" in r.content]

    mem.delete(hit.id, user_id="alice")
    after = path.read_text(encoding="utf-8")
    assert "level 3" not in after and "Went to the dentist" in after and "I like green tea" in after
    assert not [h for h in mem.search("where did I park the car", user_id="alice", limit=5) if h.record.id == hit.id]


def test_an_edited_paragraph_is_indexed_again(mem: Memory, root):
    mem.init("bob")
    path = root / "bob" / "MEMORY.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nThe spare key is under the blue flowerpot.\n", encoding="utf-8")
    assert "blue flowerpot" in mem.search("where is the spare key", user_id="bob", limit=1)[0].record.content
    path.write_text(path.read_text(encoding="utf-8").replace("blue flowerpot", "doormat"), encoding="utf-8")
    got = mem.search("where is the spare key", user_id="bob", limit=1)[0].record
    assert got.content == "The spare key is under the doormat."
    assert len([r for r in mem.get_all("bob") if "spare key" in r.content]) == 1
