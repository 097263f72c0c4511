"""LLM extraction through the scripted server: exactly what the server returned is stored, in
the right sections; invalid answers are retried once; failures keep the user's words as a note
and change nothing that was stored before."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memfold import Memory, MemoryType
from memfold.config import load_settings
from memfold.models import EPISODIC
from memfold.prompts import language_of, load, render

from ..conftest import run_cli
from ..support.openai_server import Reply

CONVERSATION = [
    {"role": "user", "content": "I switched to oat milk last month, cow milk upsets my stomach.", "turn_id": "t1",
     "timestamp": "2026-03-02T09:00:00Z"},
    {"role": "assistant", "content": "Got it. Anything else?", "turn_id": "t2"},
    {"role": "user", "content": "My daughter Mia starts school on September 1st. Remind me to buy her a backpack.",
     "turn_id": "t3", "timestamp": "2026-03-02T09:01:00Z"},
]
ANSWER = [
    {"memory_type": "preference", "content": "The user drinks oat milk; cow milk upsets their stomach",
     "structured_data": {"category": "food", "key": "milk", "value": "oat"}, "importance_score": 0.8},
    {"memory_type": "fact", "content": "The user's daughter is called Mia", "structured_data": {"entity": "family"},
     "importance_score": 0.7},
    {"memory_type": "todo", "content": "Buy a backpack for Mia before 2026-09-01", "structured_data": {},
     "importance_score": 0.6},
    {"memory_type": "skill", "content": "Deep research: web_search, then read_url, then summarize",
     "structured_data": {"skill_name": "deep_research"}, "importance_score": 0.5},
]


def llm_memory(root: Path, server, embedder, **llm) -> Memory:
    cfg = dict(provider="openai", base_url=server.base_url, model="scripted", timeout=1.0, max_retries=1,
               backoff=0.01)
    cfg.update(llm)
    return Memory(settings=load_settings(root, llm=cfg), embedder=embedder)


def file_backed(mem: Memory, user: str = "default") -> list:
    return [r for r in mem.get_all(user) if r.file != EPISODIC]


def section_of(text: str, content: str) -> str:
    head = ""
    for line in text.splitlines():
        if line.startswith("## "):
            head = line[3:].strip()
        if content in line:
            return head
    return ""


def test_add_stores_exactly_what_the_llm_returned_in_the_right_sections(root, llm_server, embedder):
    llm_server.script(json.dumps({"memories": ANSWER}))
    mem = llm_memory(root, llm_server, embedder)
    res = mem.add(CONVERSATION, "default", session_id="s1")
    assert not res.warnings
    extracted = sorted((r.memory_type.value, r.content) for r in res.added if r.file != EPISODIC)
    assert extracted == sorted((a["memory_type"], a["content"]) for a in ANSWER)
    stored = {r.content: r for r in file_backed(mem)}
    assert set(stored) == {a["content"] for a in ANSWER}
    milk = stored[ANSWER[0]["content"]]
    assert milk.importance == 0.8 and milk.structured_data == ANSWER[0]["structured_data"]
    assert milk.source_ids == ("t1", "t3") and milk.source_session_id == "s1"
    text = mem.show()
    assert section_of(text, ANSWER[0]["content"]) == "Preferences & Habits"
    assert section_of(text, ANSWER[1]["content"]) == "Notes"
    assert section_of(text, ANSWER[2]["content"]) == "Todos & Commitments"
    learnings = mem.workspace.user("default").dir / "learnings.md"
    assert ANSWER[3]["content"] in learnings.read_text(encoding="utf-8")
    # the user's turns are still kept as episodic memories; the rules did not run
    turns = [r for r in mem.index.list_records("default") if r.file == EPISODIC]
    assert sorted(r.content for r in turns) == sorted(m["content"] for m in CONVERSATION if m["role"] == "user")
    # one call, carrying the conversation and the seed's field names
    reqs = llm_server.chat_requests()
    assert len(reqs) == 1
    prompt = "\n".join(m["content"] for m in reqs[0]["body"]["messages"])
    for m in CONVERSATION:
        assert m["content"] in prompt
    for name in ("memory_type", "content", "structured_data", "importance_score"):
        assert name in prompt
    assert reqs[0]["body"]["response_format"] == {"type": "json_object"}
    assert "2026-03-02" in prompt  # relative dates can be resolved
    assert mem.search("what milk does the user drink", limit=3)[0].record.content in (ANSWER[0]["content"],
                                                                                       CONVERSATION[0]["content"])
    mem.close()


def test_a_bare_array_with_fences_and_reasoning_is_accepted(root, llm_server, embedder):
    llm_server.script("<think>the user likes tea</think>\n```json\n" + json.dumps(ANSWER[:1]) + "\n```")
    mem = llm_memory(root, llm_server, embedder)
    res = mem.add([{"role": "user", "content": "I only drink oat milk."}])
    assert [r.content for r in res.added if r.file != EPISODIC] == [ANSWER[0]["content"]]
    mem.close()


def test_an_empty_answer_stores_only_the_turns(root, llm_server, embedder):
    llm_server.script('{"memories": []}')
    mem = llm_memory(root, llm_server, embedder)
    res = mem.add([{"role": "user", "content": "Nice weather today, isn't it?"}])
    assert [r.file for r in res.added] == [EPISODIC] and not res.warnings
    assert file_backed(mem) == []
    mem.close()


def test_an_invalid_answer_is_retried_once_with_the_validation_error(root, llm_server, embedder):
    bad = [{"memory_type": "opinion", "content": "x", "structured_data": {}, "importance_score": 0.5}]
    llm_server.script(json.dumps(bad), json.dumps({"memories": ANSWER[:2]}))
    mem = llm_memory(root, llm_server, embedder)
    res = mem.add(CONVERSATION[:1])
    assert sorted(r.content for r in file_backed(mem)) == sorted(a["content"] for a in ANSWER[:2])
    assert not res.warnings
    first, second = llm_server.chat_requests()
    follow_up = second["body"]["messages"]
    assert follow_up[:2] == first["body"]["messages"]
    assert follow_up[2] == {"role": "assistant", "content": json.dumps(bad)}
    assert "memory_type 'opinion'" in follow_up[3]["content"] and "preference" in follow_up[3]["content"]
    assert mem.stats()["llm_usage"]["last"]["calls"] == 2
    mem.close()


@pytest.mark.parametrize("answer, problem", [
    ('{"memories": [{"memory_type": "fact", "content": "", "structured_data": {}, "importance_score": 0.5}]}',
     "content must be a non-empty string"),
    ('[{"memory_type": "fact", "content": "a", "structured_data": "x", "importance_score": 0.5}]',
     "structured_data must be an object"),
    ('[{"memory_type": "fact", "content": "a", "structured_data": {}, "importance_score": 7}]',
     "not between 0 and 1"),
    ('{"facts": []}', "expected a JSON array"),
    ("Sure! Here are the memories: none.", "not valid JSON"),
])
def test_invalid_twice_keeps_the_text_as_a_note(root, llm_server, embedder, caplog, answer, problem):
    mem = llm_memory(root, llm_server, embedder)
    mem.add("I prefer window seats on planes")
    before = {r.id: r.content for r in mem.get_all(include_archived=True)}
    memory_md = mem.show()
    llm_server.script(answer, answer)
    with caplog.at_level(logging.WARNING, logger="memfold"):
        res = mem.add(CONVERSATION)
    assert len(llm_server.chat_requests()) == 2
    assert res.warnings and problem in res.warnings[0] and "kept as a note" in res.warnings[0]
    assert any(problem in r.getMessage() for r in caplog.records)
    notes = [r for r in res.added if r.memory_type is MemoryType.NOTE and r.file.startswith("memory/")]
    assert len(notes) == 1
    for m in CONVERSATION:
        if m["role"] == "user":
            assert m["content"] in notes[0].content
    note_file = mem.workspace.user("default").dir / notes[0].file
    assert CONVERSATION[0]["content"] in note_file.read_text(encoding="utf-8")
    # nothing stored before changed
    assert {r.id: r.content for r in mem.get_all(include_archived=True) if r.id in before} == before
    assert mem.show() == memory_md
    mem.close()


@pytest.mark.parametrize("replies", [
    [Reply("boom", status=500), Reply("boom", status=500)],
    [Reply("late", delay=1.5), Reply("late", delay=1.5)],
    [Reply(raw=b"\x00\xffgarbage")],
    [Reply("unauthorised", status=401)],
])
def test_endpoint_failures_keep_the_users_words_and_change_nothing(root, llm_server, embedder, replies):
    mem = llm_memory(root, llm_server, embedder, timeout=0.4)
    mem.add("My favourite colour is teal")
    before = [(r.id, r.content, r.is_active) for r in mem.get_all(include_archived=True)]
    llm_server.script(*replies)
    res = mem.add(CONVERSATION)
    assert res.warnings and "LLM extraction failed" in res.warnings[0]
    kept = [r for r in res.added if r.memory_type is MemoryType.NOTE]
    assert len(kept) == 1 and CONVERSATION[2]["content"] in kept[0].content
    assert mem.get(kept[0].id).is_active
    after = [(r.id, r.content, r.is_active) for r in mem.get_all(include_archived=True)]
    assert all(row in after for row in before)
    # the note is findable
    assert any(h.record.id == kept[0].id for h in mem.search("backpack for Mia", limit=10))
    mem.close()


def test_chinese_conversation_uses_the_chinese_prompt_and_keeps_chinese(root, llm_server, embedder):
    answer = {"memories": [
        {"memory_type": "preference", "content": "用户喜欢喝乌龙茶，不加糖", "structured_data": {"drink": "乌龙茶"},
         "importance_score": 0.8},
        {"memory_type": "event", "content": "2026-03-06 用户要参加面试", "structured_data": {}, "importance_score": 0.9}]}
    llm_server.script(json.dumps(answer, ensure_ascii=False))
    mem = Memory(settings=load_settings(root, language="zh", llm=dict(
        provider="openai", base_url=llm_server.base_url, model="qwen", timeout=1.0, max_retries=0)), embedder=embedder)
    mem.init("default", "zh")
    mem.add([{"role": "user", "content": "我最近爱喝乌龙茶，不加糖。这周五我要去面试，有点紧张。"}])
    prompt = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert prompt.startswith("从以下对话中提取用户的长期记忆")
    assert "用户说中文就写中文" in prompt
    text = mem.show()
    assert section_of(text, "用户喜欢喝乌龙茶，不加糖") == "偏好与习惯"
    assert section_of(text, "2026-03-06 用户要参加面试") == "重要事件"
    mem.close()


def test_extracted_items_with_secrets_are_refused(root, llm_server, embedder):
    answer = [{"memory_type": "fact", "content": "The user's wifi password is hunter2hunter2", "structured_data": {},
               "importance_score": 0.9},
              {"memory_type": "fact", "content": "The user has a cat called Tom", "structured_data": {},
               "importance_score": 0.6}]
    llm_server.script(json.dumps(answer))
    mem = llm_memory(root, llm_server, embedder)
    res = mem.add([{"role": "user", "content": "My cat Tom knocked over the router again."}])
    assert [r.content for r in file_backed(mem)] == ["The user has a cat called Tom"]
    assert any("password" in r for r in res.refused)
    assert "hunter2" not in mem.show()
    mem.close()


def test_no_infer_and_plain_text_make_no_extraction_call(root, llm_server, embedder):
    mem = llm_memory(root, llm_server, embedder)
    mem.add(CONVERSATION, infer=False)
    mem.add("The user's passport expires in 2030")
    assert llm_server.chat_requests() == []
    mem.close()


def test_cli_ingest_with_the_llm_from_environment(tmp_path, llm_server):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(CONVERSATION), encoding="utf-8")
    env = {"MEMFOLD_LLM__PROVIDER": "openai", "MEMFOLD_LLM__BASE_URL": llm_server.base_url,
           "MEMFOLD_LLM__MODEL": "scripted", "MEMFOLD_LLM__MAX_RETRIES": "0"}
    ws = tmp_path / "ws"
    llm_server.script(json.dumps({"memories": ANSWER[:3]}))
    r = run_cli(ws, "ingest", str(conv), env=env)
    assert r.returncode == 0, r.stderr
    shown = run_cli(ws, "show", env=env).stdout
    for a in ANSWER[:3]:
        assert a["content"] in shown
    stats = json.loads(run_cli(ws, "stats", "--json", env=env).stdout)
    assert stats["llm_usage"]["calls"] == 1 and stats["llm_usage"]["total_tokens"] == 15
    # a failing endpoint: the command still succeeds, keeps the words and says why on stderr
    llm_server.script(Reply("down", status=500))
    conv.write_text(json.dumps([{"role": "user", "content": "I am allergic to peanuts."}]), encoding="utf-8")
    r = run_cli(ws, "ingest", str(conv), env=env)
    assert r.returncode == 0
    assert "LLM extraction failed" in r.stderr and "HTTP 500" in r.stderr
    assert "allergic to peanuts" in run_cli(ws, "search", "peanut allergy", env=env).stdout


def test_prompts_render_in_both_languages():
    for lang in ("en", "zh"):
        for name in ("system", "extract", "extract_retry", "merge", "summary"):
            assert load(name, lang).strip()
            assert not load(name, lang).startswith("# prompt")
        text = render("extract", lang, conversation="User: hi", today="2026-01-01")
        assert "User: hi" in text and '"memories"' in text and "${" not in text
        assert '"action"' in render("merge", lang, existing="a", new="b")
    assert language_of("我喜欢喝茶") == "zh" and language_of("I like tea") == "en" and language_of("123", "zh") == "zh"
