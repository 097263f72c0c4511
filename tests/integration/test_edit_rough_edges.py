"""Rough edges of issue 11 in the edit use cases and the context: an update that changes
nothing writes nothing, importance and type changes show in history, ``forget`` by words finds
what the search ranks first when it is clearly relevant (and nothing unrelated), a daily note
appears once in the context."""

from __future__ import annotations

from pathlib import Path

import pytest

from memfold import Memory

from ..conftest import run_cli


def _backups(root: Path, user: str) -> list[Path]:
    return sorted((root / user / "backups").glob("*"))


def test_update_without_change_writes_nothing(mem: Memory, root: Path):
    r = mem.add("I like green tea", "alice").added[0]
    text = (root / "alice" / "MEMORY.md").read_text()
    for kwargs in ({}, {"content": "I like green tea"}, {"importance": r.importance},
                   {"memory_type": r.memory_type.value}):
        same = mem.update(r.id, "alice", **kwargs)
        assert same == mem.get(r.id, "alice") and same.updated_at == r.updated_at, kwargs
    assert [h.action for h in mem.history(r.id, "alice")] == ["add"]
    assert _backups(root, "alice") == []
    assert (root / "alice" / "MEMORY.md").read_text() == text


def test_importance_and_type_changes_show_in_history(mem: Memory):
    r = mem.add("I like green tea", "alice", importance=0.5).added[0]
    mem.update(r.id, "alice", importance=0.9)
    last = mem.history(r.id, "alice")[-1]
    assert last.action == "update" and last.detail.get("importance") == [0.5, 0.9]
    mem.update(r.id, "alice", memory_type="fact")
    last = mem.history(r.id, "alice")[-1]
    assert last.action == "update" and last.detail.get("type") == "fact"


def test_cli_update_without_change_says_unchanged(root: Path, embedder):
    with Memory(root=root, embedder=embedder) as m:
        r = m.add("I like green tea", "alice").added[0]
    out = run_cli(root, "update", r.id, "--user", "alice")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"unchanged {r.id}"), out.stdout
    assert not (root / "alice" / "backups").exists() or _backups(root, "alice") == []


def test_daily_note_found_by_search_appears_once_in_context(mem: Memory):
    mem.add("I like green tea", "alice")
    mem.add_note("Dentist appointment moved to Thursday afternoon", "alice")
    msgs = mem.build_context("when is my dentist appointment?", "alice")
    system = msgs[0]["content"]
    assert "## Recent notes" in system
    assert system.count("Dentist appointment moved to Thursday afternoon") == 1, system


_MEMORIES = ["Left the car on level 3 of the airport garage, spot B12", "车停在机场停车场三楼B12号位", "I like sushi",
             "My daughter is called Mei", "我女儿叫小美", "I work as a nurse", "我在医院当护士",
             "Meeting with Bob on Friday", "Our car is a red Toyota"]


@pytest.fixture
def stocked(mem: Memory) -> Memory:
    for t in _MEMORIES:
        mem.add(t, "alice", infer=False)
    return mem


@pytest.mark.parametrize("query, expected", [
    ("where I parked the car", ["Left the car on level 3 of the airport garage, spot B12"]),
    ("我把车停哪了", ["车停在机场停车场三楼B12号位"]),
    ("我停车的位置", ["车停在机场停车场三楼B12号位"]),
    ("my daughter", ["My daughter is called Mei"]),
    ("the weather tomorrow", []),
    ("I like pizza", []),
    ("my son's name", []),
    ("明天天气", []),
    ("我喜欢吃披萨", []),
])
def test_forget_finds_the_clearly_relevant_top_hit_and_nothing_unrelated(stocked: Memory, query: str,
                                                                          expected: list[str]):
    if expected:  # the search ranks the memory at the top
        assert expected[0] in [h.record.content for h in stocked.search(query, "alice", record_access=False)[:2]]
    preview = [r.content for r in stocked.forget(query, "alice", dry_run=True)]
    assert preview == expected
    assert [r.content for r in stocked.forget(query, "alice")] == expected  # the dry run says what happens
    left = {r.content for r in stocked.get_all("alice")}
    assert left == set(_MEMORIES) - set(expected)


def test_forget_request_in_a_conversation_uses_the_same_rule(stocked: Memory):
    res = stocked.add([{"role": "user", "content": "forget where I parked the car"}], "alice")
    assert [r.content for r in res.forgotten] == ["Left the car on level 3 of the airport garage, spot B12"]


def test_one_chat_client_shared_by_writer_and_sessions_and_closed(root: Path, embedder,
                                                                  monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMFOLD_LLM__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMFOLD_LLM__MODEL", "m")
    m = Memory(root=root, embedder=embedder)
    chat = m.chat_model
    assert chat is not None and m.writer.llm.chat is chat
    assert m.session("s1", "alice").summarizer.chat is chat
    m.close()
    assert chat._client.is_closed
