"""The usage record: each search's query (redacted), time and returned ids; bounded by count and
age (policy keys); deleted with the memories it names (delete, forget, delete_all) and with the
words a forget asked for; read back as the most used memories and the queries that found nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from memfold import Memory
from memfold.models import utcnow
from memfold.tools.dispatch import call

SECRET = "sk-proj-4fT9xQ2mB7vK1pL8nR3sW6yZ0aC5dE9gH2jK4mN7"


def test_each_search_is_recorded_redacted_and_read_back(mem: Memory) -> None:
    tea = mem.add("I like green tea", "alice").added[0]
    mem.add("My sister Lena lives in Porto", "alice")
    mem.search("what tea do I like", "alice")
    call(mem, "memory_search", {"query": "green tea"}, user_id="alice")  # the tools search the same way
    mem.search("quantum chromodynamics", "alice")
    mem.search("quantum chromodynamics", "alice")
    mem.search(f"my key is {SECRET} for the zebra api", "alice")
    mem.search("tea", "alice", record_access=False)  # a search that records nothing
    rows = mem.index.usage("alice", 100)
    assert [r["query"] for r in rows][:3] == ["my key is [redacted] for the zebra api", "quantum chromodynamics",
                                              "quantum chromodynamics"]
    assert all(SECRET not in r["query"] for r in rows) and len(rows) == 5
    assert rows[-1]["ids"][0] == tea.id and rows[1]["ids"] == []
    report = mem.usage("alice")
    assert report["searches"] == 5
    assert report["most_used"][0]["id"] == tea.id and report["most_used"][0]["count"] == 2
    assert report["most_used"][0]["content"] == "I like green tea"
    assert report["no_results"][0] == {"query": "quantum chromodynamics", "count": 2,
                                       "last": report["no_results"][0]["last"]}
    assert mem.stats("alice")["usage"] == report
    assert mem.usage("bob")["searches"] == 0  # one namespace's record is its own
    mem.reindex("alice")  # rebuilding the index from the files keeps the record
    assert mem.usage("alice") == report


def test_the_record_is_bounded_by_count_and_age(root: Path, embedder) -> None:
    mem = Memory(root=root, embedder=embedder, policy={"usage_max_entries": 3, "usage_max_age_days": 30})
    try:
        mem.add("I like green tea", "alice")
        mem.search("tea long ago", "alice", now=utcnow() - timedelta(days=40))
        assert [r["query"] for r in mem.index.usage("alice", 10)] == ["tea long ago"]
        mem.search("tea now", "alice")  # the entry older than 30 days goes
        assert [r["query"] for r in mem.index.usage("alice", 10)] == ["tea now"]
        for i in range(5):
            mem.search(f"tea {i}", "alice")
        assert [r["query"] for r in mem.index.usage("alice", 10)] == ["tea 4", "tea 3", "tea 2"]
    finally:
        mem.close()
    off = Memory(root=root, embedder=embedder, policy={"usage_max_entries": 0})  # 0: nothing more is recorded
    try:
        off.search("tea again", "alice")
        assert [r["query"] for r in off.index.usage("alice", 10)] == ["tea 4", "tea 3", "tea 2"]
    finally:
        off.close()


def test_the_record_is_deleted_with_the_memories_it_names(mem: Memory) -> None:
    tea = mem.add("I like green tea", "alice").added[0]
    lena = mem.add("My sister Lena lives in Porto", "alice").added[0]
    bike = mem.add("My bicycle is blue", "alice").added[0]
    mem.search("green tea", "alice")
    mem.search("where does Lena live", "alice")
    mem.search("my blue bicycle", "alice")
    mem.search("nothing about porcupines", "alice")
    names = lambda: {i for r in mem.index.usage("alice", 100) for i in r["ids"]}  # noqa: E731
    assert {tea.id, lena.id, bike.id} <= names()

    mem.delete(tea.id, "alice")
    assert tea.id not in names() and all("green tea" not in r["query"] for r in mem.index.usage("alice", 100))
    mem.forget(lena.id, "alice")
    assert lena.id not in names()
    mem.forget("porcupines", "alice", dry_run=False)  # a forget's words leave the queries that held them
    assert all("porcupines" not in r["query"] for r in mem.index.usage("alice", 100))
    mem.search("my blue bicycle", "alice")
    assert bike.id in names()
    md = mem.workspace.user("alice").dir / "MEMORY.md"  # a line deleted by hand takes its searches along
    md.write_text("\n".join(ln for ln in md.read_text(encoding="utf-8").split("\n") if "bicycle" not in ln),
                  encoding="utf-8")
    mem.get_all("alice")  # the next call reads the edit
    assert bike.id not in names()
    mem.add("I like black coffee", "alice")
    mem.search("black coffee", "alice")
    mem.delete_all("alice")
    assert mem.index.usage("alice", 100) == []
