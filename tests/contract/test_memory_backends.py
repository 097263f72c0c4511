"""The engine on each index backend: the same Memory calls give the same results."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import NotFoundError
from memfold.index.base import Index

FACTS = ["I prefer green tea over coffee", "我喜欢在周末去爬山", "My dog is called Biscuit",
         "下周五要交季度报告", "Remember to renew the passport in March"]


@pytest.fixture
def open_memory(make_index: Callable[..., Index], embedder, tmp_path: Path) -> Iterator[Callable[..., Memory]]:  # type: ignore[no-untyped-def]
    """``open_memory(name)``: a Memory on workspace ``tmp_path/name`` and index ``name`` of this backend."""
    opened: list[Memory] = []

    def open_(name: str = "main") -> Memory:
        m = Memory(root=tmp_path / name, embedder=embedder,
                   index=make_index(dim=embedder.dim, embedder_name=embedder.name, name=name))
        opened.append(m)
        return m

    yield open_
    for m in opened:
        m.close()


def test_add_search_update_delete_history(open_memory) -> None:  # type: ignore[no-untyped-def]
    mem = open_memory()
    ids = {f: mem.add(f, "alice").added[0].id for f in FACTS}
    mem.add("Bob likes green tea too", "bob")
    assert mem.search("what tea does she like", "alice", limit=1)[0].record.id == ids[FACTS[0]]
    assert mem.search("爬山", "alice", limit=1)[0].record.id == ids[FACTS[1]]
    assert mem.search("季度报告什么时候交", "alice", limit=1)[0].record.id == ids[FACTS[3]]
    assert all(h.record.user_id == "alice" for h in mem.search("green tea", "alice", record_access=False))
    seen = mem.get(ids[FACTS[2]], "alice").access_count
    assert mem.search("dog name", "alice", limit=1)[0].record.id == ids[FACTS[2]]
    assert mem.get(ids[FACTS[2]], "alice").access_count == seen + 1
    mid = ids[FACTS[2]]
    mem.update(mid, "alice", content="My dog is called Pretzel")
    assert "called Pretzel <!--" in mem.show("alice") and mem.get(mid, "alice").content.endswith("Pretzel")
    assert mem.search("Pretzel", "alice", limit=1)[0].record.id == mid
    mem.delete(mid, "alice")
    with pytest.raises(NotFoundError):
        mem.get(mid, "alice")
    assert [e.action for e in mem.history(mid, "alice")] == ["add", "update", "delete"]
    assert len(mem.get_all("alice")) == len(FACTS) - 1


def test_hand_edits_and_near_duplicates(open_memory) -> None:  # type: ignore[no-untyped-def]
    mem = open_memory()
    r = mem.add("My favourite colour is blue", "alice").added[0]
    path = mem.workspace.user("alice").dir / "MEMORY.md"
    path.write_text(path.read_text(encoding="utf-8").replace("blue", "green") + "- 我住在杭州\n", encoding="utf-8")
    assert mem.get(r.id, "alice").content == "My favourite colour is green"
    assert mem.search("住在哪里 杭州", "alice", limit=1)[0].record.content == "我住在杭州"
    again = mem.add("My favourite colour is green", "alice")
    assert again.added == () and [x.id for x in again.merged] == [r.id]


def test_conversation_turns_and_reindex(open_memory) -> None:  # type: ignore[no-untyped-def]
    mem = open_memory()
    msgs = [{"role": "user", "content": "I just adopted a parrot named Kiwi", "turn_id": "t1"},
            {"role": "assistant", "content": "Congratulations!"},
            {"role": "user", "content": "记住：我对花生过敏", "turn_id": "t2"}]
    res = mem.add(msgs, "alice")
    assert res.added
    before = {r.id: r.content for r in mem.get_all("alice")}
    episodic = {i for i, r in ((r.id, r) for r in mem.get_all("alice")) if r.file == ""}
    assert episodic and set(before) - episodic
    counts = mem.reindex("alice")
    assert counts["alice"] == len(set(before) - episodic)
    assert {r.id: r.content for r in mem.get_all("alice")} == before  # ids follow the files; turns stay
    assert mem.search("parrot", "alice", limit=3)[0].record.content.endswith("parrot named Kiwi")
    assert any("花生" in h.record.content for h in mem.search("花生过敏", "alice", limit=3))


def test_export_import_into_a_fresh_workspace(open_memory) -> None:  # type: ignore[no-untyped-def]
    src = open_memory("src")
    for f in FACTS:
        src.add(f, "alice")
    src.add([{"role": "user", "content": "We talked about the garden today"}], "alice")
    src.add("Carol's note", "carol")
    src.search("tea", "alice")
    rows = list(src.export())
    dst = open_memory("dst")
    assert dst.import_records(rows) == len(rows)
    key = lambda d: (d["user_id"], d["id"])  # noqa: E731
    strip = lambda d: {k: v for k, v in d.items() if k != "updated_at"}  # noqa: E731
    assert sorted(map(strip, dst.export()), key=key) == sorted(map(strip, rows), key=key)
    assert dst.search("周末爬山", "alice", limit=1)[0].record.content == FACTS[1]
    assert dst.users() == ["alice", "carol"]


def test_metadata_filters_delete_all_and_reset(open_memory) -> None:  # type: ignore[no-untyped-def]
    """``metadata=`` on add, ``filters=`` on search and get_all (tested by the index in SQL),
    ``delete_all`` of one namespace, a ``reset`` that must be confirmed, and calls about one
    memory without its namespace."""
    from memfold.errors import ArgumentError

    mem = open_memory()
    tea = mem.add("I prefer green tea over coffee", "alice", metadata={"topic": "drinks", "priority": 2}).added[0]
    hike = mem.add("我喜欢在周末去爬山", "alice", metadata={"topic": "sport", "priority": 7}).added[0]
    turns = mem.add([{"role": "user", "content": "My dog is called Biscuit"}], "alice",
                    metadata={"topic": "pets"}, run_id="r1")
    assert turns.added and all(r.structured_data["topic"] == "pets" and r.source_session_id == "r1" for r in turns.added)
    mem.add("Bob likes green tea too", "bob", metadata={"topic": "drinks"})
    assert {r.id for r in mem.get_all("alice", filters={"topic": "drinks"})} == {tea.id}
    assert {r.id for r in mem.get_all("alice", filters={"priority": {"gte": 5}})} == {hike.id}
    assert {r.id for r in mem.get_all("alice", filters={"session_id": "r1"})} == {r.id for r in turns.added}
    hits = mem.search("green tea and the dog Biscuit", "alice", filters={"NOT": [{"topic": "drinks"}]})
    assert hits and tea.id not in {h.record.id for h in hits}
    assert [h.record.id for h in mem.search("green tea", "alice", filters={"topic": {"in": ["drinks"]}})] == [tea.id]
    assert mem.get(hike.id).content == hike.content  # no user given: found in the namespace that holds it
    assert mem.history(hike.id)[0].action == "add"
    with pytest.raises(NotFoundError, match="no user_id was given, and neither user 'default' nor any other"):
        mem.delete("nosuchid0001")
    with pytest.raises(TypeError, match="was given as user_id"):
        mem.update(tea.id, "I like dogs")
    with pytest.raises(ArgumentError, match="needs user_id"):
        mem.delete_all()
    with pytest.raises(TypeError, match="confirm=True"):
        mem.reset()
    gone = mem.delete_all("alice", filters={"topic": "pets"})
    assert {r.id for r in gone} == {r.id for r in turns.added}
    assert len(mem.delete_all("alice")) == 2 and mem.get_all("alice") == []
    assert "green tea" not in mem.show("alice")  # deleted from the file too
    assert len(mem.get_all("bob")) == 1
    assert mem.reset(confirm=True) == 1 and mem.get_all("bob") == []
