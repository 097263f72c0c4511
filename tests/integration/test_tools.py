"""The tools layer (issue 12): schemas generated from the input models, every tool in Chinese and
English through ``call``, an error result (never an exception) for every kind of bad input, path
tricks, memory off, and one user's data never visible to another."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from memfold import Memory
from memfold.tools import TOOLS, MemoryTools, anthropic_tools, call, openai_tools

from ..support.hash_embedder import HashEmbedder

LANG = {
    "en": {"like": "I like green tea", "like2": "I like black tea", "fact": "My brother Bob lives in Lyon",
           "todo": "Remind me to call the dentist on Friday", "note": "fixed the kitchen sink today",
           "section": "Preferences & Habits", "query": "green tea"},
    "zh": {"like": "我喜欢喝绿茶", "like2": "我喜欢喝红茶", "fact": "我哥哥小明住在杭州",
           "todo": "提醒我周五给牙医打电话", "note": "今天修好了厨房水槽",
           "section": "偏好与习惯", "query": "绿茶"},
}


@pytest.fixture
def hm(root: Path):
    m = Memory(root=root, embedder=HashEmbedder())
    yield m
    m.close()


def _ok(result: dict) -> dict:
    assert result["ok"] is True, result
    json.dumps(result)  # JSON-serialisable
    return result


def _err(result: dict, code: str) -> str:
    assert result["ok"] is False and result["error"]["code"] == code, result
    json.dumps(result)
    return result["error"]["message"]


# ---- schemas ---------------------------------------------------------------------------------
@pytest.mark.parametrize("language", ["en", "zh"])
def test_schemas_are_valid_json_schema_generated_from_the_models(language: str):
    oa, an = openai_tools(language), anthropic_tools(language)
    assert [t["function"]["name"] for t in oa] == [t["name"] for t in an] == list(TOOLS)
    for o, a in zip(oa, an):
        params = o["function"]["parameters"]
        assert o["type"] == "function" and params == a["input_schema"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object" and params["additionalProperties"] is False
        tool = TOOLS[o["function"]["name"]]
        assert set(params["properties"]) == set(tool.input.model_fields)
        assert set(params.get("required", [])) == {n for n, f in tool.input.model_fields.items() if f.is_required()}
        for prop in params["properties"].values():  # typed, described, in the language asked
            assert "type" in prop and prop["description"], prop
            assert ("zh" in prop) is False
            has_cjk = any("\u4e00" <= ch <= "\u9fff" for ch in prop["description"])
            assert has_cjk == (language == "zh"), prop["description"]
        assert any("\u4e00" <= ch <= "\u9fff" for ch in o["function"]["description"]) == (language == "zh")
    search = oa[0]["function"]["parameters"]
    jsonschema.validate({"query": "tea", "limit": 3, "memory_type": "preference"}, search)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "tea", "memory_type": "colour"}, search)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"limit": 3}, search)


# ---- every tool, in both languages -----------------------------------------------------------
@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_tool_works_through_call(hm: Memory, root: Path, language: str):
    w = LANG[language]
    hm.init("alice", language=language)
    tools = MemoryTools(hm, "alice", agent_id="helper")
    assert tools.language == language and [t["function"]["name"] for t in tools.openai()] == list(TOOLS)

    liked = _ok(tools.call("memory_append", {"content": w["like"]}))["stored"][0]
    assert liked["memory_type"] == "preference" and liked["file"] == "MEMORY.md"
    fact = _ok(tools.call("save_memory", json.dumps({"content": w["fact"], "memory_type": "fact", "importance": 0.9},
                                                    ensure_ascii=False)))["stored"][0]
    assert fact["memory_type"] == "fact" and fact["importance"] == 0.9
    note = _ok(tools.call("memory_append", {"content": w["note"], "slot": "today"}))
    assert note["slot"] == "today" and note["stored"][0]["file"].startswith("memory/")
    assert w["note"] in (root / "alice" / note["stored"][0]["file"]).read_text(encoding="utf-8")
    text = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert w["like"] in text and w["fact"] in text
    assert hm.recent_memories("helper", "alice")[-2:] == [w["like"], w["fact"]]  # pinned to the agent

    hits = _ok(tools.call("memory_search", {"query": w["query"], "limit": 5}))["results"]
    assert hits[0]["id"] == liked["id"] and hits[0]["content"] == w["like"]

    assert _ok(tools.call("memory_read", {"path": "memory/MEMORY.md"}))["path"] == "MEMORY.md"
    whole = _ok(tools.call("memory_read", {}))
    assert whole["exists"] and w["like"] in whole["text"] and "mf:" not in whole["text"]
    part = _ok(tools.call("memory_read", {"section": w["section"]}))
    assert w["like"] in part["text"] and w["fact"] not in part["text"]

    before = len(list((root / "alice" / "backups").glob("*_MEMORY.md")))
    edit = _ok(tools.call("memory_edit", {"path": "MEMORY.md", "old_text": w["like"], "new_text": w["like2"]}))
    assert edit["updated"] == [liked["id"]] and edit["added"] == edit["removed"] == []
    text = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert w["like2"] in text and w["like"] not in text and f"mf:{liked['id']}" in text
    assert len(list((root / "alice" / "backups").glob("*_MEMORY.md"))) == before + 1  # backed up first
    last = hm.history(liked["id"], "alice")[-1]
    assert (last.action, last.old_content, last.new_content) == ("edit", w["like"], w["like2"])
    assert last.detail["by"] == "memory_edit"
    assert hm.get(liked["id"], "alice").content == w["like2"]  # re-indexed
    assert _ok(tools.call("memory_search", {"query": w["like2"]}))["results"][0]["content"] == w["like2"]

    todos = "待办与承诺" if language == "zh" else "Todos & Commitments"
    written = f"## {w['section']}\n- {w['like2']}\n## {todos}\n- {w['todo']}\n"
    wrote = _ok(tools.call("write_file", {"path": "MEMORY.md", "content": written}))
    assert wrote["redirected_to"] == "MEMORY.md" and [s["content"] for s in wrote["stored"]] == [w["todo"]]
    assert wrote["stored"][0]["memory_type"] == "todo"  # typed by the section it was written under
    text = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert text.count(w["like2"]) == 1 and w["todo"] in text and w["fact"] in text  # appended, nothing overwritten
    longer = _ok(tools.call("write_file", {"path": "memory/MEMORY.md", "content": f"- {w['like2']}!!\n- {w['todo']}"}))
    assert [s["content"] for s in longer["stored"]] == [f"{w['like2']}!!"]  # a line that only contains another is new
    again = _ok(tools.call("write_file", {"path": "./MEMORY.md", "content": (root / "alice" / "MEMORY.md").read_text()}))
    assert again["stored"] == [] and again["notes"] == ["nothing new: every line is already in MEMORY.md"]

    dry = _ok(tools.call("memory_forget", {"query_or_id": fact["id"], "dry_run": True}))
    assert dry["dry_run"] and [f["id"] for f in dry["forgotten"]] == [fact["id"]]
    assert w["fact"] in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    gone = _ok(tools.call("memory_forget", {"query_or_id": fact["id"]}))
    assert [f["id"] for f in gone["forgotten"]] == [fact["id"]]
    assert w["fact"] not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert all(h["id"] != fact["id"] for h in _ok(tools.call("memory_search", {"query": w["fact"]}))["results"])


def test_edit_can_add_and_remove_whole_lines_and_daily_notes(hm: Memory, root: Path):
    tools = MemoryTools(hm, "alice")
    a = _ok(tools.call("save_memory", {"content": "Finish the tax return", "memory_type": "todo"}))["stored"][0]
    line = next(ln for ln in (root / "alice" / "MEMORY.md").read_text().splitlines() if "tax return" in ln)
    gone = _ok(tools.call("memory_edit", {"path": "MEMORY.md", "old_text": line, "new_text": ""}))
    assert gone["removed"] == [a["id"]] and "tax return" not in (root / "alice" / "MEMORY.md").read_text()
    assert hm.history(a["id"], "alice")[-1].detail["by"] == "memory_edit"
    anchor = "<!-- Things worth remembering -->"  # seed 002's example: append under a section's comment
    added = _ok(tools.call("memory_edit", {"path": "MEMORY.md", "old_text": anchor,
                                           "new_text": anchor + "\n\n- 2026-02-13: Job interview on Friday"}))
    assert len(added["added"]) == 1
    assert hm.get(added["added"][0], "alice").content == "Job interview on Friday"
    note = _ok(tools.call("memory_append", {"content": "bought apples", "slot": "today"}))["stored"][0]
    edited = _ok(tools.call("memory_edit", {"path": note["file"], "old_text": "bought apples",
                                            "new_text": "bought pears"}))
    assert edited["updated"] == [note["id"]] and hm.get(note["id"], "alice").content == "bought pears"
    hm.init("alice")
    anchor = "<!-- Approaches that worked -->"
    skill = _ok(tools.call("memory_edit", {"path": "./learnings.md", "old_text": anchor,
                                           "new_text": anchor + "\n\n- Deploy with make release, then tag"}))
    assert skill["path"] == "learnings.md" and hm.get(skill["added"][0], "alice").memory_type.value == "skill"
    assert "make release" in _ok(tools.call("memory_read", {"path": "learnings.md", "section": "Skills"}))["text"]


# ---- error results ---------------------------------------------------------------------------
BAD_ARGUMENTS = {
    "memory_search": [{}, {"query": ""}, {"query": "x", "limit": 0}, {"query": "x", "memory_type": "colour"}],
    "memory_append": [{}, {"content": 3}, {"content": "x", "slot": "forever"}, {"content": "x", "importance": 2}],
    "save_memory": [{"content": "x"}, {"content": "x", "memory_type": "fact", "importance": "high"}],
    "memory_edit": [{"path": "MEMORY.md", "old_text": "x"}, {"path": "MEMORY.md", "old_text": "", "new_text": "y"}],
    "memory_forget": [{}, {"query_or_id": ["a"]}, {"query_or_id": "x", "dry_run": "perhaps"}],
    "memory_read": [{"path": 5}, {"section": {"a": 1}}],
    "write_file": [{"path": "MEMORY.md"}, {"content": "x"}],
    "skill_success": [{}, {"memory_id": ""}, {"memory_id": ["a"]}],
    "memory_relate": [{}, {"memory_id": "a", "action": "follow"}, {"memory_id": "a", "relation": "likes"},
                      {"memory_id": "a", "strength": 2}],
}


@pytest.mark.parametrize("name", list(TOOLS))
def test_bad_arguments_give_an_error_result_naming_the_argument(hm: Memory, name: str):
    assert set(BAD_ARGUMENTS) == set(TOOLS)
    for args in BAD_ARGUMENTS[name]:
        msg = _err(call(hm, name, args, user_id="alice"), "invalid_input")
        assert msg.startswith(name) and "argument '" in msg, msg
    msg = _err(call(hm, name, {**(BAD_ARGUMENTS[name][0]), "bogus": 1}, user_id="alice"), "invalid_input")
    assert "unknown argument 'bogus'" in msg
    for raw in ("{not json", "[1, 2]", "42"):
        _err(call(hm, name, raw, user_id="alice"), "invalid_input")
    _err(call(hm, name, "x" * 100_001, user_id="alice"), "limit_exceeded")
    _err(call(hm, name, {}, user_id="../bob"), "invalid_input")


def test_unknown_tool_oversized_text_secret_and_no_match(hm: Memory):
    for name in ("memory_delete_everything", "", None, 3):
        msg = _err(call(hm, name, {}, user_id="alice"), "unknown_tool")  # type: ignore[arg-type]
        assert "memory_search" in msg
    big = "x" * 20_001
    for name, args in (("memory_append", {"content": big}), ("save_memory", {"content": big, "memory_type": "fact"}),
                       ("memory_edit", {"path": "MEMORY.md", "old_text": big, "new_text": "y"}),
                       ("memory_edit", {"path": "MEMORY.md", "old_text": "y", "new_text": big}),
                       ("write_file", {"path": "MEMORY.md", "content": big}),
                       ("memory_search", {"query": "q" * 10_001}), ("memory_forget", {"query_or_id": "q" * 10_001})):
        assert "at most" in _err(call(hm, name, args, user_id="alice"), "limit_exceeded")
    many = "\n".join(f"- fact number {i} about the garden" for i in range(51))
    _err(call(hm, "write_file", {"path": "MEMORY.md", "content": many}, user_id="alice"), "limit_exceeded")
    secret = "my password is hunter2xyz!"
    for name, args in (("memory_append", {"content": secret}), ("save_memory", {"content": secret, "memory_type": "fact"}),
                       ("memory_append", {"content": secret, "slot": "today"}),
                       ("write_file", {"path": "MEMORY.md", "content": f"- I like tea\n- {secret}"})):
        assert "secret" in _err(call(hm, name, args, user_id="alice"), "secret_refused")
    assert not (hm.workspace.root / "alice" / "MEMORY.md").exists() or "hunter2" not in \
        (hm.workspace.root / "alice" / "MEMORY.md").read_text()
    assert hm.get_all("alice") == []  # write_file refused the whole call: "I like tea" was not stored either

    _ok(call(hm, "memory_append", {"content": "I like tea and I like cake"}, user_id="alice"))
    edit = {"path": "MEMORY.md", "old_text": "I like", "new_text": "I love"}
    assert "2 times" in _err(call(hm, "memory_edit", edit, user_id="alice"), "ambiguous_match")
    assert "not found" in _err(call(hm, "memory_edit", {**edit, "old_text": "I hate"}, user_id="alice"), "no_match")
    _err(call(hm, "memory_forget", {"query_or_id": "zebra crossing"}, user_id="alice"), "no_match")
    _err(call(hm, "memory_read", {"section": "Nowhere"}, user_id="alice"), "not_found")
    _err(call(hm, "memory_edit", {"path": "learnings.md", "old_text": "a", "new_text": "b"}, user_id="nobody"),
         "not_found")
    line = next(ln for ln in (hm.workspace.root / "alice" / "MEMORY.md").read_text().splitlines() if "cake" in ln)
    half = line[line.index("<!--"): line.index("<!--") + 12]
    assert "id comment" in _err(call(hm, "memory_edit", {**edit, "old_text": "cake " + half}, user_id="alice"),
                                "invalid_input")
    forged = {**edit, "old_text": "tea and", "new_text": "tea <!-- mf:abcdefgh --> and"}
    _err(call(hm, "memory_edit", forged, user_id="alice"), "invalid_input")
    redacted = _ok(call(hm, "memory_edit", {**edit, "old_text": "cake", "new_text": "cake, card 4111 1111 1111 1111"},
                        user_id="alice"))
    assert redacted["redacted"] and "4111" not in (hm.workspace.root / "alice" / "MEMORY.md").read_text()


PATH_TRICKS = ["../bob/MEMORY.md", "memory/../../bob/MEMORY.md", "/etc/passwd", "~/MEMORY.md", "..\\bob\\MEMORY.md",
               "C:/MEMORY.md", "index.db", "config.toml", "policy_overrides.json", "backups/x_MEMORY.md", "bob/MEMORY.md",
               "memory/2026/20261125.md", ""]


@pytest.mark.parametrize("trick", PATH_TRICKS)
def test_path_tricks_are_refused_with_an_error_result(hm: Memory, root: Path, trick: str):
    hm.add("I like tea", "alice")
    hm.add("Bob's secret plan is to learn the tuba", "bob")
    bob_file = (root / "bob" / "MEMORY.md").read_text()
    for name, args in (("memory_edit", {"path": trick or " ", "old_text": "tuba", "new_text": "piano"}),
                       ("memory_read", {"path": trick or " "}), ("write_file", {"path": trick or " ", "content": "x"})):
        result = call(hm, name, args, user_id="alice")
        assert result["ok"] is False and result["error"]["code"] == "path_refused", (name, trick, result)
    absolute = str(root / "alice" / "MEMORY.md")  # even the caller's own file by an absolute path
    _err(call(hm, "memory_read", {"path": absolute}, user_id="alice"), "path_refused")
    assert (root / "bob" / "MEMORY.md").read_text() == bob_file


def test_symlinks_out_of_the_folder_are_refused(hm: Memory, root: Path, tmp_path: Path):
    hm.add("Bob's secret plan is to learn the tuba", "bob")
    outside = tmp_path / "outside.md"
    outside.write_text("- 2026-01-01: outside words\n")
    hm.add_note("a note", "alice")
    note = next((root / "alice" / "memory").rglob("*.md"))
    rel = note.relative_to(root / "alice").as_posix()
    note.unlink()
    os.symlink(outside, note)  # a daily note pointing out of the workspace
    for name, args in (("memory_read", {"path": rel}), ("memory_edit", {"path": rel, "old_text": "outside",
                                                                        "new_text": "inside"})):
        _err(call(hm, name, args, user_id="alice"), "path_refused")
    assert outside.read_text() == "- 2026-01-01: outside words\n"
    (root / "alice" / "MEMORY.md").unlink(missing_ok=True)
    os.symlink(root / "bob" / "MEMORY.md", root / "alice" / "MEMORY.md")  # another user's file
    bob_file = (root / "bob" / "MEMORY.md").read_text()
    for name, args in (("memory_read", {}), ("memory_edit", {"path": "MEMORY.md", "old_text": "tuba", "new_text": "x"}),
                       ("write_file", {"path": "MEMORY.md", "content": "- I like tea"})):
        _err(call(hm, name, args, user_id="alice"), "path_refused")
    assert (root / "bob" / "MEMORY.md").read_text() == bob_file


def test_one_users_memory_is_never_visible_to_another(hm: Memory):
    alice, bob = MemoryTools(hm, "alice"), MemoryTools(hm, "bob")
    mine = _ok(alice.call("save_memory", {"content": "My locker code place is the blue cabinet",
                                          "memory_type": "fact"}))["stored"][0]
    _ok(bob.call("memory_append", {"content": "I collect stamps"}))
    assert all("cabinet" not in h["content"] for h in _ok(bob.call("memory_search", {"query": "blue cabinet"}))["results"])
    assert "cabinet" not in _ok(bob.call("memory_read", {}))["text"]
    _err(bob.call("memory_forget", {"query_or_id": mine["id"]}), "no_match")
    _err(bob.call("memory_edit", {"path": "MEMORY.md", "old_text": "blue cabinet", "new_text": "x"}), "no_match")
    assert hm.get(mine["id"], "alice").content.endswith("blue cabinet")


# ---- memory off ------------------------------------------------------------------------------
def test_memory_off_offers_no_tools_and_touches_nothing(hm: Memory, root: Path):
    tools = MemoryTools(hm, "alice")
    _ok(tools.call("memory_append", {"content": "I like oolong tea"}))
    hm.set_memory_enabled(False, "alice")
    assert json.loads((root / "alice" / "policy_overrides.json").read_text()) == {"enabled": False}
    assert len(hm.policy_files("alice").snapshots()) == 1  # the change was snapshotted first (issue 14)
    assert tools.names == [] and tools.openai() == [] and tools.anthropic() == [] and tools.summaries() == {}
    before = (root / "alice" / "MEMORY.md").read_text()
    for name in TOOLS:
        _err(tools.call(name, BAD_ARGUMENTS[name][0]), "memory_off")
    _err(tools.call("memory_append", {"content": "I like coffee"}), "memory_off")
    assert (root / "alice" / "MEMORY.md").read_text() == before and len(hm.get_all("alice")) == 1
    system = hm.build_context("what tea do I like?", "alice")[0]["content"]
    assert "oolong" not in system and "MEMORY.md" not in system
    s = hm.session("s1", "alice")
    assert not s.memory_enabled and "oolong" not in s.build_context("tea?")[0]["content"]
    assert MemoryTools(hm, "bob").names == list(TOOLS)  # per user
    hm.set_memory_enabled(True, "alice")
    assert tools.names == list(TOOLS)
    assert "oolong" in hm.build_context("what tea do I like?", "alice")[0]["content"]


def test_memory_off_in_the_config_and_on_for_one_user(root: Path):
    root.mkdir(parents=True)
    (root / "config.toml").write_text("[memory]\nenabled = false\n")
    with Memory(root=root, embedder=HashEmbedder()) as m:
        assert not m.memory_enabled("alice") and MemoryTools(m, "alice").openai() == []
        _err(call(m, "memory_search", {"query": "x"}, user_id="alice"), "memory_off")
        m.set_memory_enabled(True, "carol")
        assert m.memory_enabled("carol") and not m.memory_enabled("alice")
        _ok(call(m, "memory_append", {"content": "I like rooibos"}, user_id="carol"))


def test_memory_read_stays_within_memory_char_limit(root: Path):
    with Memory(root=root, embedder=HashEmbedder(), policy={"memory_char_limit": 300}) as m:
        for i in range(20):
            m.add(f"Fact number {i}: the garden gate is painted colour {i}", "alice", memory_type="fact")
        got = _ok(call(m, "memory_read", {}, user_id="alice"))
        assert got["truncated"] and len(got["text"]) <= 300 and "memory truncated" in got["text"]
        assert got["text"].startswith("# 🧠 Memory") and got["text"].rstrip().endswith("concise._")  # head and tail
        small = _ok(call(m, "memory_read", {"section": "Important Events"}, user_id="alice"))
        assert not small["truncated"] and small["text"].startswith("## Important Events")
