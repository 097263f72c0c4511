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
