"""The foundation through the public Python API: store, find, isolate, reindex, reconcile, history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfold import ConfigError, InvalidInputError, Memory, MemoryType, NotFoundError, SecretRefusedError
from memfold.text import memory_markdown as md


def _first(mem: Memory, q: str, user: str = "alice") -> str:
    hits = mem.search(q, user)
    return hits[0].record.content if hits else ""


def test_issue_scenario_store_find_isolate_reindex(root: Path, embedder):
    mem = Memory(root=root, embedder=embedder)
    mem.init("alice", "zh")
    text = (root / "alice" / "MEMORY.md").read_text()
    assert "## 重要事件" in text and "## 偏好与习惯" in text
    mem.add("我喜欢喝无糖拿铁，大杯", "alice", memory_type="preference")
    mem.add("Project A is due on March 15", "alice")
    assert _first(mem, "咖啡偏好是什么") == "我喜欢喝无糖拿铁，大杯"
    assert _first(mem, "when is project A due") == "Project A is due on March 15"
    assert mem.search("咖啡偏好是什么", "bob") == []
    assert mem.search("when is project A due", "bob") == []
    mem.close()
    # delete the index entirely: the files rebuild it
    for p in root.glob("index.db*"):
        p.unlink()
    mem2 = Memory(root=root, embedder=embedder)
    counts = mem2.reindex()
    assert counts == {"alice": 2}
    assert _first(mem2, "咖啡偏好是什么") == "我喜欢喝无糖拿铁，大杯"
    assert _first(mem2, "when is project A due") == "Project A is due on March 15"
    mem2.close()


def test_memory_types_go_to_their_sections(mem: Memory, root: Path):
    mem.init("u", "en")
    ids = {}
    for t in MemoryType:
        res = mem.add(f"sample {t.value} memory number {len(ids)}", "u", memory_type=t)
        ids[t] = res.added[0].id
    memory_md = (root / "u" / "MEMORY.md").read_text()
    learnings = (root / "u" / "learnings.md").read_text()
    sections = {e.id: e.section for e in md.parse(memory_md)}
    assert sections[ids[MemoryType.EVENT]] == "events"
    assert sections[ids[MemoryType.PREFERENCE]] == sections[ids[MemoryType.PATTERN]] == "preferences"
    assert sections[ids[MemoryType.TODO]] == "todos"
    assert sections[ids[MemoryType.FACT]] == sections[ids[MemoryType.NOTE]] == "notes"
    assert ids[MemoryType.SKILL] in learnings and ids[MemoryType.SKILL] not in memory_md
    for t, mid in ids.items():
        assert mem.get(mid, "u").memory_type is t


def test_hand_edits_are_reconciled(mem: Memory, root: Path):
    mem.init("alice", "en")
    a = mem.add("I like green tea", "alice").added[0]
    b = mem.add("My cat is called Tom", "alice").added[0]
    path = root / "alice" / "MEMORY.md"
    text = path.read_text()
    # edit a line, delete another, add a new one by hand
    text = text.replace("I like green tea", "I like black coffee with oat milk")
    text = "\n".join(ln for ln in text.split("\n") if b.id not in ln)
    text = text.replace("<!-- Other information worth remembering -->",
                        "<!-- Other information worth remembering -->\n\n- My sister lives in Lisbon")
    path.write_text(text)
    hits = mem.search("what coffee do I drink", "alice")
    assert hits[0].record.id == a.id and "black coffee" in hits[0].record.content
    with pytest.raises(NotFoundError):
        mem.get(b.id, "alice")
    assert [h.action for h in mem.history(a.id, "alice")] == ["add", "edit"]
    assert mem.search("where does my sister live", "alice")[0].record.content == "My sister lives in Lisbon"
    # the new line got a stable id written into the file
    new = [e for e in md.parse(path.read_text()) if e.content == "My sister lives in Lisbon"][0]
    assert new.id and mem.get(new.id, "alice").content == "My sister lives in Lisbon"


def test_secrets_are_refused_and_stored_nowhere(mem: Memory, root: Path):
    mem.init("alice")
    with pytest.raises(SecretRefusedError, match="password"):
        mem.add("my password is hunter2xyz", "alice")
    res = mem.add([{"role": "user", "content": "the wifi password: Tr0ub4dor&3", "turn_id": "t1"},
                   {"role": "user", "content": "I like hiking", "turn_id": "t2"}], "alice")
    assert res.refused and "t1" in res.refused[0]
    assert {r.content for r in res.added} >= {"I like hiking"}
    mem.close()
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert b"hunter2xyz" not in data and b"Tr0ub4dor" not in data, p


def test_empty_and_bad_input(mem: Memory):
    with pytest.raises(InvalidInputError, match="data is empty"):
        mem.add("   \n ", "alice")
    with pytest.raises(InvalidInputError, match="memory type"):
        mem.add("x", "alice", memory_type="bogus")
    with pytest.raises(InvalidInputError, match="importance"):
        mem.add("x", "alice", importance=3)
    with pytest.raises(InvalidInputError, match="user_id"):
        mem.add("x", "../etc")
    with pytest.raises(InvalidInputError, match="message 0"):
        mem.add([{"role": "user"}], "alice")
    with pytest.raises(InvalidInputError, match="over the limit"):
        mem.add("x" * 30_000, "alice")
    with pytest.raises(InvalidInputError):
        mem.search("  ", "alice")


def test_near_duplicates_are_not_stored_twice(mem: Memory):
    first = mem.add("I like green tea", "alice").added[0]
    res = mem.add("I like green tea", "alice", source_ids=["s2"])
    assert res.added == () and res.merged[0].id == first.id
    assert set(mem.get(first.id, "alice").source_ids) == {"s2"}
    assert len(mem.get_all("alice")) == 1
    # episodic turns with the same words: one record carrying both turn ids
    ts = "2023-05-08T10:00:00"
    r1 = mem.add([{"role": "user", "content": "Haha, sounds great!", "turn_id": "D1:1", "timestamp": ts}], "bob")
    r2 = mem.add([{"role": "user", "content": "Haha, sounds great!", "turn_id": "D1:2", "timestamp": ts}], "bob")
    assert r2.added == () and r2.merged[0].id == r1.added[0].id
    assert mem.get(r1.added[0].id, "bob").source_ids == ("D1:1", "D1:2")


def test_changed_near_duplicate_replaces_and_archives(mem: Memory):
    old = mem.add("The meeting with Sarah is at 3 pm on Friday", "alice").added[0]
    pol = mem.policy("alice")
    mem2_text = "The meeting with Sarah is at 4 pm on Friday"
    sim = float(mem.embedder.embed([old.content])[0] @ mem.embedder.embed([mem2_text])[0])
    # the premise, checked rather than skipped: the bundled embedder puts the two past the threshold
    assert sim >= pol.dedupe_threshold, f"the embedder puts these at {sim:.3f} < threshold"
    new = mem.add(mem2_text, "alice").added[0]
    archived = mem.get(old.id, "alice")
    assert not archived.is_active and archived.superseded_by == new.id
    assert [h.record.id for h in mem.search("meeting with Sarah", "alice")] == [new.id]
    assert "archive" in [h.action for h in mem.history(old.id, "alice")]


def test_messages_store_turns_with_ids_and_extracted_memories(mem: Memory, root: Path):
    res = mem.add([
        {"role": "user", "content": "Hi! Remember that my dog is called Bob.", "turn_id": "D1:1",
         "timestamp": "2023-05-08T13:56:00"},
        {"role": "assistant", "content": "Got it!", "turn_id": "D1:2"},
        {"role": "user", "content": "我喜欢喝无糖拿铁", "turn_id": "D1:3"},
    ], "alice")
    turns = [r for r in res.added if r.file == ""]
    extracted = [r for r in res.added if r.file == "MEMORY.md"]
    assert [t.source_ids for t in turns] == [("D1:1",), ("D1:3",)]
    assert turns[0].created_at.year == 2023
    assert {(r.memory_type, r.source_ids) for r in extracted} == {
        (MemoryType.FACT, ("D1:1",)), (MemoryType.PREFERENCE, ("D1:3",))}
    text = (root / "alice" / "MEMORY.md").read_text()
    assert "my dog is called Bob" in text and "Hi! Remember" not in text  # turns are not file content


def test_a_reply_to_advice_is_stored_as_a_turn_not_as_a_todo(mem: Memory, root: Path):
    res = mem.add([
        {"role": "user", "content": "Any galleries you'd suggest?", "turn_id": "S1:1"},
        {"role": "assistant", "content": "Try The Art Cube and the city museum.", "turn_id": "S1:2"},
        {"role": "user", "content": "Thanks! I'll definitely check out those galleries. I need to renew my passport.",
         "turn_id": "S1:3"},
    ], "alice")
    turns = [r for r in res.added if r.file == ""]
    assert [t.source_ids for t in turns] == [("S1:1",), ("S1:3",)]  # the reply's words are kept in its turn
    todos = mem.get_all("alice", memory_type="todo")
    assert [r.content for r in todos] == ["I need to renew my passport"]
    assert "check out" not in (root / "alice" / "MEMORY.md").read_text()
    # still found: the turn answers for it
    assert "S1:3" in mem.search("galleries to check out", "alice", limit=3)[0].record.source_ids


def test_update_delete_forget_history_and_backups(mem: Memory, root: Path):
    a = mem.add("I like green tea", "alice").added[0]
    b = mem.add("My favourite city is Kyoto", "alice").added[0]
    upd = mem.update(a.id, "alice", content="I like jasmine tea", importance=0.9)
    assert upd.content == "I like jasmine tea" and upd.importance == 0.9
    assert "jasmine" in (root / "alice" / "MEMORY.md").read_text()
    assert [h.action for h in mem.history(a.id, "alice")] == ["add", "update"]
    # one backup before the second add (seed 001 §4.5: an append too), one before the update
    assert len(list((root / "alice" / "backups").glob("*_MEMORY.md"))) == 2
    gone = mem.forget("Kyoto", "alice")
    assert [g.id for g in gone] == [b.id]
    assert "Kyoto" not in (root / "alice" / "MEMORY.md").read_text()
    assert mem.history(b.id, "alice")[-1].action == "forget"
    mem.delete(a.id, "alice")
    assert mem.get_all("alice") == []
    with pytest.raises(NotFoundError):
        mem.delete("nope", "alice")


def test_backups_are_pruned(root: Path, embedder):
    mem = Memory(root=root, embedder=embedder, policy={"backup_keep": 2})
    r = mem.add("I like green tea", "alice").added[0]
    for i in range(5):
        mem.update(r.id, "alice", content=f"I like green tea, variant {i}")
    assert len(list((root / "alice" / "backups").glob("*_MEMORY.md"))) == 2
    mem.close()


def test_access_statistics_and_rescoring(mem: Memory):
    a = mem.add("My car is a blue Volvo", "alice").added[0]
    hits = mem.search("what car do I drive", "alice")
    assert hits[0].record.id == a.id
    rec = mem.get(a.id, "alice")
    assert rec.access_count == 1 and rec.last_accessed_at is not None
    mem.search("what car do I drive", "alice", record_access=False)
    assert mem.get(a.id, "alice").access_count == 1


def test_retrieve_without_query_returns_memory_md_and_recent_notes(mem: Memory):
    mem.init("alice")
    mem.add("I like green tea", "alice")
    note = mem.add_note("bought a new keyboard today", "alice")
    assert note.file.startswith("memory/") and note.file.endswith(".md")
    r = mem.retrieve(None, "alice")
    assert "I like green tea" in r.full_text
    assert r.recent_notes and "new keyboard" in r.recent_notes[0].text
    r2 = mem.retrieve("keyboard", "alice")
    assert r2.full_text is None and any("keyboard" in h.record.content for h in r2.hits)


def test_policy_sources_and_errors(root: Path, embedder):
    root.mkdir(parents=True)
    (root / "config.toml").write_text("[memory]\nretrieve_limit = 4\n")
    mem = Memory(root=root, embedder=embedder)
    assert mem.policy("alice").retrieve_limit == 4
    (root / "alice").mkdir()
    (root / "alice" / "policy_overrides.json").write_text(json.dumps({"retrieve_limit": 7}))
    assert mem.policy("alice").retrieve_limit == 7  # a changed file is read again (sessions keep theirs)
    mem.close()
    mem = Memory(root=root, embedder=embedder)
    assert mem.policy("alice").retrieve_limit == 7
    assert mem.policy("bob").retrieve_limit == 4
    mem.close()
    assert Memory(root=root, embedder=embedder, policy={"retrieve_limit": 9}).policy("alice").retrieve_limit == 9
    (root / "config.toml").write_text("[memory]\nretrieve_limt = 4\n")
    with pytest.raises(ConfigError, match="retrieve_limt"):
        Memory(root=root, embedder=embedder)
    (root / "config.toml").write_text("[memory]\ndedupe_threshold = 7\n")
    with pytest.raises(ConfigError, match="dedupe_threshold"):
        Memory(root=root, embedder=embedder)


def test_export_import_round_trip(root: Path, embedder, tmp_path: Path):
    mem = Memory(root=root, embedder=embedder)
    mem.add("I like green tea", "alice", importance=0.9)
    mem.add([{"role": "user", "content": "We met in Paris in 2019", "turn_id": "D1:1"}], "alice")
    old = mem.add("The meeting with Sarah is at 3 pm on Friday", "bob").added[0]
    mem.search("green tea", "alice")
    exported = sorted(mem.export(), key=lambda d: d["id"])
    mem.close()
    other = Memory(root=tmp_path / "copy", embedder=embedder)
    assert other.import_records(exported) == len(exported)
    again = sorted(other.export(), key=lambda d: d["id"])
    assert again == exported
    assert other.search("green tea", "alice")[0].record.content == "I like green tea"
    assert other.get(old.id, "bob").content == old.content
    other.close()


def test_index_built_with_another_embedder_asks_for_reindex(root: Path, embedder):
    from memfold import MemoryIndexError
    from memfold.index.sqlite import SqliteIndex

    Memory(root=root, embedder=embedder).close()
    with pytest.raises(MemoryIndexError, match="reindex"):
        SqliteIndex(root / "index.db", dim=384, embedder_name="other")


def test_update_refreshes_rule_derived_structure_only(mem: Memory):
    r = mem.add("my dog is called Bob", "alice").added[0]
    assert r.structured_data == {"key": "dog", "value": "called Bob"}
    assert mem.update(r.id, "alice", content="my dog is called Biscuit").structured_data == {
        "key": "dog", "value": "called Biscuit"}
    custom = mem.add("my cat is called Tom", "alice", structured_data={"pet": "cat"}).added[0]
    assert mem.update(custom.id, "alice", content="my cat is called Tim").structured_data == {"pet": "cat"}


def test_policy_arguments_replaced_on_an_open_memory(tmp_path):
    from memfold import Memory
    from memfold.errors import ConfigError

    with Memory(root=tmp_path / "ws", policy={"retrieve_limit": 3}) as mem:
        for i in range(6):
            mem.add(f"note {i} about the garden shed", "alice", infer=False)
        assert len(mem.search("garden shed", "alice")) == 3
        mem.use_policy_arguments({"retrieve_limit": 5})
        assert mem.policy("alice").retrieve_limit == 5 and len(mem.search("garden shed", "alice")) == 5
        with pytest.raises(ConfigError, match="no_such_key"):
            mem.use_policy_arguments({"no_such_key": 1})
        assert mem.policy("alice").retrieve_limit == 5  # the arguments before stay
