"""Issue 10 §5: one bad line or argument must not lock a user out; every public entry point checks
its arguments (engine/storage/guard.py) and raises InvalidInputError naming the argument."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import InvalidInputError, NotFoundError
from memfold.text import memory_markdown as md

from ..conftest import run_cli


@pytest.fixture(params=["sqlite", "postgres"])
def backend_mem(request: pytest.FixtureRequest, root: Path, embedder):
    """A Memory on the SQLite index, or on PostgreSQL (a fresh schema of the test server)."""
    index = None
    if request.param == "postgres":
        from memfold.index.postgres import PostgresIndex

        index = PostgresIndex(request.getfixturevalue("pg_dsn"), dim=embedder.dim, embedder_name=embedder.name)
    m = Memory(root=root, embedder=embedder, index=index)
    yield m
    m.close()


def _line_of(path: Path, memory_id: str) -> str:
    return next(ln for ln in path.read_text(encoding="utf-8").splitlines() if f"mf:{memory_id}" in ln)


def test_bullet_copied_from_another_users_file_gets_a_new_id(backend_mem: Memory, root: Path):
    mem = backend_mem
    alice = mem.add("My favourite colour is green", "alice").added[0]
    mem.add("I live in Paris", "bob")
    bob_file = root / "bob" / "MEMORY.md"
    bob_file.write_text(bob_file.read_text(encoding="utf-8") + _line_of(root / "alice" / "MEMORY.md", alice.id) + "\n",
                        encoding="utf-8")

    bob = mem.get_all("bob")  # failed with "memory id … belongs to another namespace" before
    copy = next(r for r in bob if r.content == alice.content)
    assert copy.id != alice.id
    assert f"mf:{copy.id}" in bob_file.read_text(encoding="utf-8")  # the new id is written into bob's file
    assert f"mf:{alice.id}" not in bob_file.read_text(encoding="utf-8")
    # every later command of both users keeps working, and alice's memory is untouched
    assert mem.search("favourite colour", "bob")[0].record.id == copy.id
    mem.add("I have a cat", "bob")
    assert mem.get(alice.id, "alice").content == alice.content
    assert mem.get(alice.id, "alice").user_id == "alice"
    with pytest.raises(NotFoundError):
        mem.get(alice.id, "bob")
    assert [h.action for h in mem.history(copy.id, "bob")] == ["add"]


def test_import_gives_a_foreign_id_a_new_one_and_keeps_working(backend_mem: Memory):
    mem = backend_mem
    alice = mem.add("I play the violin", "alice").added[0]
    row = dict(alice.to_dict(), user_id="bob", content="I play the cello")
    assert mem.import_records([row]) == 1
    (copy,) = [r for r in mem.get_all("bob")]
    assert copy.content == "I play the cello" and copy.id != alice.id
    assert mem.get(alice.id, "alice").content == "I play the violin"
    mem.add("I like jazz", "bob")  # bob is not locked out
    assert {r.content for r in mem.get_all("bob")} == {"I play the cello", "I like jazz"}


def test_import_with_the_same_id_for_two_users_keeps_both(mem: Memory):
    rows = [{"id": "sameid000001", "user_id": "alice", "content": "alice likes tea", "memory_type": "preference"},
            {"id": "sameid000001", "user_id": "bob", "content": "bob likes coffee", "memory_type": "preference"}]
    assert mem.import_records(rows) == 2
    assert [r.content for r in mem.get_all("alice")] == ["alice likes tea"]
    assert [r.content for r in mem.get_all("bob")] == ["bob likes coffee"]
    assert mem.get_all("bob")[0].id != "sameid000001"


@pytest.mark.parametrize("field, value, message", [
    ("importance", 99, "importance must be a number between 0 and 1, got 99"),
    ("importance", "high", "importance must be a number between 0 and 1, got 'high'"),
    ("confidence", -0.5, "confidence must be a number between 0 and 1"),
    ("access_count", -3, "access_count must be a whole number of at least 0"),
    ("is_active", "yes", "is_active must be True or False"),
    ("memory_type", "bogus", "unknown memory type 'bogus'"),
    ("user_id", "con", "reserved device name"),
    ("user_id", "alice\n", "whitespace"),
    ("structured_data", [1, 2], "structured_data must be a JSON object"),
    ("source_ids", "t1", "source_ids must be a list of strings"),
    ("file", "../../etc/passwd", "file must be MEMORY.md"),
    ("created_at", "yesterday", "created_at must be an ISO 8601 time"),
])
def test_import_checks_every_row_before_writing(mem: Memory, root: Path, field: str, value, message: str):
    mem.add("I like green tea", "alice")
    before = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    good = {"id": "good00000001", "user_id": "alice", "content": "I own a red bicycle", "memory_type": "fact"}
    bad = dict(good, id="bad000000001", content="I own a blue boat", **{field: value})
    with pytest.raises(InvalidInputError, match=re.escape("record 2") + ".*" + re.escape(message)):
        mem.import_records([good, bad])
    assert (root / "alice" / "MEMORY.md").read_text(encoding="utf-8") == before  # nothing written
    assert [r.content for r in mem.get_all("alice")] == ["I like green tea"]
    assert not (root / "con").exists()


def test_cli_import_of_out_of_range_importance_is_refused(root: Path, tmp_path: Path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "x00000000001", "user_id": "alice", "content": "I like tea",
                                "importance": 99}) + "\n", encoding="utf-8")
    res = run_cli(root, "import", str(rows))
    assert res.returncode == 1, res.stderr
    assert "importance must be a number between 0 and 1, got 99" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("user_id, why", [
    ("alice\n", "whitespace"), (" alice", "whitespace"), ("alice ", "whitespace"),
    ("con", "reserved device name"), ("NUL", "reserved device name"), ("aux.txt", "reserved device name"),
    ("com1", "reserved device name"), ("a.", "ends with '.'"), ("a..b", "'..'"), ("al\x00ice", "control character"),
    ("al\tice", "control character"), ("", "empty"), ("-x", "starts with '-'"), ("a/b", "path separator"),
    ("a\\b", "path separator"), (".alice", "starts with '.'"), ("_memfold", "starts with '_'"),
    ("COM¹", "reserved device name"), ("小明\u202e", "invisible formatting character"),
    ("Jo\u200bsé", "invisible formatting character"), ("al ice", "has no spaces"), ("😀", "starts with"),
    ("x" * 129, "129 characters"), ("明" * 86, "258 bytes"), ("..", "'..'"), ("小明/..", "path separator"),
])
def test_user_ids_that_are_not_a_safe_folder_name_are_refused(mem: Memory, root: Path, user_id: str, why: str):
    with pytest.raises(InvalidInputError, match=re.escape(why)):
        mem.add("I like tea", user_id)
    with pytest.raises(InvalidInputError, match="user_id"):
        mem.search("tea", user_id)
    assert not root.exists() or sorted(p.name for p in root.iterdir() if p.is_dir()) == []


def test_good_user_ids_still_work(mem: Memory):
    for u in ("alice", "alice.smith", "a@b.example", "conv-26", "console", "user_1"):
        mem.add("I like tea", u)
        assert mem.get_all(u)[0].content == "I like tea"


def test_user_ids_in_any_script_are_one_folder_in_normal_form_c(mem: Memory, root: Path):
    composed, decomposed = "Jos\u00e9", "Jose\u0301"  # the same name typed two ways
    for u in ("小明", composed, "Ærø", "Анна", "नमस्ते", "x" * 128, "明" * 85):
        mem.add("I like tea", u)
        assert [r.content for r in mem.get_all(u)] == ["I like tea"]
        assert (root / u / "MEMORY.md").is_file()
    mem.add("I like coffee", decomposed)
    assert sorted(r.content for r in mem.get_all(decomposed)) == ["I like coffee", "I like tea"]
    assert not (root / decomposed).exists()
    assert composed in mem.users() and decomposed not in mem.users()


def test_control_characters_and_nul_never_reach_a_file(mem: Memory, root: Path):
    r = mem.add("I like\x00 green\x07 tea\x1b[31m", "alice", structured_data={"note\x00": "bad\x08 value"}).added[0]
    note = mem.add_note("call the\x00 plumber\x0c", "alice")
    mem.update(r.id, "alice", content="I like\x00 black tea")
    raw = b"".join(p.read_bytes() for p in (root / "alice").rglob("*.md"))
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", raw)
    assert mem.get(r.id, "alice").content == "I like black tea"
    assert mem.get(note.id, "alice").content == "call the plumber"
    assert mem.get(r.id, "alice").structured_data == {"note": "bad value"}


API_CASES = [
    ("add", lambda m: m.add(123, "alice"), "data must be a text or a list of messages, got int 123"),
    ("add", lambda m: m.add(b"tea", "alice"), "data must be a text or a list of messages"),
    ("add", lambda m: m.add("I like tea", "alice", importance="high"),
     "importance must be a number between 0 and 1, got 'high'"),
    ("add", lambda m: m.add("I like tea", "alice", importance=float("nan")), "importance must be a number"),
    ("add", lambda m: m.add("I like tea", "alice", importance=True), "importance must be a number"),
    ("add", lambda m: m.add("I like tea", "alice", structured_data={"when": object()}),
     "structured_data['when'] must hold only JSON values"),
    ("add", lambda m: m.add("I like tea", "alice", structured_data={1: "x"}), "structured_data has a key 1"),
    ("add", lambda m: m.add("I like tea", "alice", structured_data="x"), "structured_data must be a JSON object"),
    ("add", lambda m: m.add("I like tea \ud800", "alice"), "data contains a lone surrogate (U+D800)"),
    ("add", lambda m: m.add("I like tea", "alice", memory_type=7), "memory_type must be a string"),
    ("add", lambda m: m.add("I like tea", "alice", agent_id=5), "agent_id must be a string"),
    ("add", lambda m: m.add("I like tea", "alice", agent_id="a\nb"), "agent_id must not contain control characters"),
    ("add", lambda m: m.add("I like tea", "alice", session_id=""), "session_id must not be empty"),
    ("add", lambda m: m.add("I like tea", "alice", source_ids="t1"), "source_ids must be a list of strings"),
    ("add", lambda m: m.add([{"role": "user", "content": "hi \udc80"}], "alice"), "message 0 content contains a lone"),
    ("add", lambda m: m.add("I like tea", 42), "user_id must be a string"),
    ("add_note", lambda m: m.add_note(None, "alice"), "text must be a string"),
    ("search", lambda m: m.search("tea", "alice", limit="5"), "limit must be a whole number of at least 1, got '5'"),
    ("search", lambda m: m.search("tea", "alice", limit=2.5), "limit must be a whole number"),
    ("search", lambda m: m.search(b"tea", "alice"), "query must be a string"),
    ("search", lambda m: m.search("tea \ud83d", "alice"), "query contains a lone surrogate"),
    ("retrieve", lambda m: m.retrieve("tea", "alice", limit="3"), "limit must be a whole number"),
    ("retrieve", lambda m: m.retrieve(5, "alice"), "query must be a string"),
    ("get", lambda m: m.get(5, "alice"), "memory_id must be a string"),
    ("get_all", lambda m: m.get_all("alice", limit="10"), "limit must be a whole number"),
    ("get_all", lambda m: m.get_all("alice", offset=-1), "offset must be a whole number of at least 0"),
    ("update", lambda m: m.update("x", "alice", importance="high"), "importance must be a number between 0 and 1"),
    ("update", lambda m: m.update("x", "alice", structured_data={"a": {1, 2}}), "must hold only JSON values"),
    ("update", lambda m: m.update("x", "alice", content=3), "content must be a string"),
    ("delete", lambda m: m.delete(None, "alice"), "memory_id must be a string"),
    ("forget", lambda m: m.forget(12, "alice"), "query_or_id must be a string"),
    ("history", lambda m: m.history(["x"], "alice"), "memory_id must be a string"),
    ("session", lambda m: m.session(3, "alice"), "session_id must be a string"),
    ("session", lambda m: m.session("s1", "alice", agent_id=""), "agent_id must not be empty"),
    ("build_context", lambda m: m.build_context(None, "alice"), "user_message must be a string"),
    ("build_context", lambda m: m.build_context("hi", "alice", memory_enabled="no"),
     "memory_enabled must be True or False"),
    ("import_records", lambda m: m.import_records("rows.jsonl"), "rows must be a list of exported records"),
    ("import_records", lambda m: m.import_records([["x"]]), "record 1 must be a JSON object"),
    ("recent_memories", lambda m: m.recent_memories(None, "alice"), "agent_id must be a string"),
]


@pytest.mark.parametrize("call, expected", [(c[1], c[2]) for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_python_api_raises_invalid_input_naming_the_argument(mem: Memory, call, expected: str):
    with pytest.raises(InvalidInputError, match=re.escape(expected)):
        call(mem)


def test_session_messages_are_checked(mem: Memory):
    s = mem.session("s1", "alice")
    with pytest.raises(InvalidInputError, match="content must be a string"):
        s.add_message("user", 5)
    with pytest.raises(InvalidInputError, match="content contains a lone surrogate"):
        s.add_message("user", "hi \ud800")
    s.add_message("user", "I like\x00 tea")
    assert s.messages[-1]["content"] == "I like tea"


def test_a_stored_file_parses_after_control_characters(mem: Memory, root: Path):
    mem.add("line one\x0bstill line one", "alice")
    entries = md.parse((root / "alice" / "MEMORY.md").read_text(encoding="utf-8"))
    assert [e.content for e in entries] == ["line onestill line one"]
