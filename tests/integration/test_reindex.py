"""`reindex` rebuilds the index from the files without inventing history or losing statistics."""

from __future__ import annotations

from memfold import Memory

from ..conftest import run_cli


def test_reindex_keeps_access_statistics_and_writes_no_history(mem: Memory, root):
    r = mem.add("I keep my passport in the blue drawer", user_id="alice").added[0]
    other = mem.add("My sister lives in Lisbon", user_id="alice").added[0]
    for _ in range(3):
        assert mem.search("where is my passport", user_id="alice", limit=1)[0].record.id == r.id
    before = mem.get(r.id, user_id="alice")
    assert before.access_count == 3
    events = [h.action for h in mem.history(r.id, user_id="alice")]

    for _ in range(2):
        mem.reindex("alice")
    after = mem.get(r.id, user_id="alice")
    assert after.access_count == 3 and after.last_accessed_at == before.last_accessed_at
    assert after.created_at == before.created_at
    assert [h.action for h in mem.history(r.id, user_id="alice")] == events  # nothing invented
    assert [h.action for h in mem.history(other.id, user_id="alice")] == ["add"]


def test_reindex_records_what_changed_in_the_file(mem: Memory, root):
    r = mem.add("I keep my passport in the blue drawer", user_id="alice").added[0]
    path = root / "alice" / "MEMORY.md"
    mem.close()  # another process edits the file while nothing watches it
    text = path.read_text(encoding="utf-8").replace("blue drawer", "red suitcase")
    path.write_text(text, encoding="utf-8")
    m2 = Memory(root=root, embedder=mem.embedder)
    try:
        m2.reindex("alice")
        hist = m2.history(r.id, user_id="alice")
        assert [h.action for h in hist] == ["add", "edit"]
        assert hist[-1].old_content.endswith("blue drawer") and hist[-1].new_content.endswith("red suitcase")
    finally:
        m2.close()


def test_reindex_from_the_cli_twice_keeps_history(root):
    assert run_cli(root, "add", "I keep my passport in the blue drawer", "--user", "bob").returncode == 0
    for _ in range(2):
        assert run_cli(root, "reindex", "--user", "bob").returncode == 0
    out = run_cli(root, "list", "--user", "bob", "--json")
    import json
    rid = json.loads(out.stdout)[0]["id"]
    hist = json.loads(run_cli(root, "history", rid, "--user", "bob", "--json").stdout)
    assert [h["action"] for h in hist] == ["add"]
