"""An agent loop against the scripted OpenAI-compatible server returning ``tool_calls`` (issue 12):
the memory is stored in the same turn, a malformed tool call gets an error result and the loop
goes on; ``memfold chat`` uses the tools and falls back when the endpoint has no function calling;
the injected instructions name exactly the tools that exist, in the user's language."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memfold import Memory, prompts
from memfold.config import LLMSettings
from memfold.errors import ToolsRejected
from memfold.providers.openai_chat import OpenAIChatModel
from memfold.tools import TOOLS, MemoryAgent, MemoryTools

from ..conftest import run_cli
from ..support.hash_embedder import HashEmbedder
from ..support.openai_server import Reply, ScriptedOpenAIServer, tool_call

TOOL_NAME = re.compile(r"\b(?:memory_(?!type\b|types\b)[a-z_]+|save_memory|skill_success|write_file|append_file)\b")


@pytest.fixture
def hm(root: Path):
    m = Memory(root=root, embedder=HashEmbedder())
    yield m
    m.close()


def _chat(srv: ScriptedOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel(LLMSettings(provider="openai", base_url=srv.base_url, model="scripted", max_retries=0))


def _tool_messages(request: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in request["body"]["messages"] if m["role"] == "tool"]


def test_a_memory_asked_for_is_stored_in_the_same_turn(hm: Memory, root: Path, llm_server: ScriptedOpenAIServer):
    tools = MemoryTools(hm, "alice", agent_id="helper")
    llm_server.script(Reply(tool_calls=[tool_call("memory_append", {"content": "I like green tea"}, "c1")]),
                      Reply("Noted: you like green tea."))
    messages = hm.build_context("Remember that I like green tea", "alice", tools=tools.summaries())
    turn = MemoryAgent(_chat(llm_server), tools).run(messages)
    assert turn.text == "Noted: you like green tea."
    assert [(c.name, c.result["ok"]) for c in turn.calls] == [("memory_append", True)]
    assert "I like green tea" in (root / "alice" / "MEMORY.md").read_text()  # before the turn ended
    first, second = llm_server.chat_requests()
    assert first["body"]["tools"] == tools.openai() and len(first["body"]["tools"]) == len(TOOLS)
    assert second["body"]["messages"][-2]["tool_calls"][0]["id"] == "c1"
    assert second["body"]["messages"][-1]["tool_call_id"] == "c1"
    assert _tool_messages(second)[0]["stored"][0]["content"] == "I like green tea"
    assert [m["role"] for m in turn.messages] == ["assistant", "tool", "assistant"]
    assert hm.recent_memories("helper", "alice") == ["I like green tea"]


def test_malformed_tool_calls_get_error_results_and_the_loop_goes_on(hm: Memory, llm_server: ScriptedOpenAIServer):
    tools = MemoryTools(hm, "alice")
    llm_server.script(
        Reply(tool_calls=[tool_call("memory_append", "{not json", "bad1"),
                          tool_call("memory_forget_everything", {}, "bad2"),
                          tool_call("memory_edit", {"path": "../bob/MEMORY.md", "old_text": "a", "new_text": "b"}, "bad3"),
                          tool_call("save_memory", {"content": "I like jasmine tea"}, "bad4"),
                          {"id": "bad5", "type": "function", "function": {"arguments": "{}"}}]),
        Reply(tool_calls=[tool_call("save_memory", {"content": "I like jasmine tea", "memory_type": "preference",
                                                    "importance": 0.8}, "good")]),
        Reply("Saved."))
    turn = MemoryAgent(_chat(llm_server), tools).run([{"role": "user", "content": "remember: jasmine tea"}])
    assert turn.text == "Saved."
    codes = [c.result["ok"] or c.result["error"]["code"] for c in turn.calls]
    assert codes == ["invalid_input", "unknown_tool", "path_refused", "invalid_input", "unknown_tool", True]
    assert "memory_type" in turn.calls[3].result["error"]["message"]
    second = llm_server.chat_requests()[1]
    assert [r["ok"] for r in _tool_messages(second)] == [False] * 5  # the model read every error
    assert [r.content for r in hm.get_all("alice")] == ["I like jasmine tea"]


def test_a_model_that_keeps_calling_tools_is_asked_for_its_answer(hm: Memory, llm_server: ScriptedOpenAIServer):
    llm_server.default_reply = Reply("fine", tool_calls=[tool_call("memory_search", {"query": "tea"})])
    turn = MemoryAgent(_chat(llm_server), MemoryTools(hm, "alice"), max_rounds=3).run(
        [{"role": "user", "content": "hi"}])
    reqs = llm_server.chat_requests()
    assert len(reqs) == 4 and len(turn.calls) == 3 and turn.text == "fine"
    assert all("tools" in r["body"] for r in reqs[:3]) and "tools" not in reqs[3]["body"]


def test_an_endpoint_without_function_calling_raises_tools_rejected_once(llm_server: ScriptedOpenAIServer):
    llm_server.script(Reply("model qwen:0.5b does not support tools", status=400))
    chat = _chat(llm_server)
    tools = [{"type": "function", "function": {"name": "memory_search", "parameters": {"type": "object"}}}]
    for _ in range(2):
        with pytest.raises(ToolsRejected):
            chat.complete_tools([{"role": "user", "content": "hi"}], tools)
    assert len(llm_server.chat_requests()) == 1 and chat.tools_supported is False
    llm_server.script(Reply("bad request: messages[0] is wrong", status=400))
    with pytest.raises(Exception) as got:  # a 400 about something else is not taken for "no tools"
        _chat(llm_server).complete_tools([{"role": "user", "content": "hi"}], [])
    assert not isinstance(got.value, ToolsRejected)


# ---- the injected instructions ---------------------------------------------------------------
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_instructions_name_exactly_the_tools_offered(hm: Memory, language: str):
    hm.init("alice", language=language)
    tools = MemoryTools(hm, "alice")
    system = hm.build_context("hello", "alice", tools=tools.summaries())[0]["content"]
    assert set(TOOL_NAME.findall(system)) == set(TOOLS)
    assert ("记忆工具" in system) == (language == "zh") and ("Memory tools" in system) == (language == "en")
    for name in TOOLS:
        assert f"- {name}: {TOOLS[name].summary(language)}" in system
    plain = hm.build_context("hello", "alice")[0]["content"]  # no tools offered: none named
    assert TOOL_NAME.findall(plain) == [] and ("MEMORY.md" in plain)
    session = hm.session("s", "alice").build_context("hello", tools=tools.summaries())[0]["content"]
    assert set(TOOL_NAME.findall(session)) == set(TOOLS)
    hm.set_memory_enabled(False, "alice")
    assert tools.summaries() == {} and TOOL_NAME.findall(hm.build_context("hello", "alice")[0]["content"]) == []


def test_no_prompt_file_names_a_tool_that_does_not_exist():
    folder = Path(prompts.__file__).parent
    for path in folder.glob("*/*.txt"):
        text = prompts.load(path.stem, path.parent.name)  # as sent: without the header line
        named = set(TOOL_NAME.findall(re.sub(r'"\w+"\s*:', "", text)))  # a JSON key of an answer is no tool
        assert named <= set(TOOLS) and "edit 工具" not in text and "edit tool" not in text, (path, named)


# ---- memfold chat ----------------------------------------------------------------------------
def _run_chat(root: Path, srv: ScriptedOpenAIServer, text: str, *args: str):
    return run_cli(root, "chat", "--base-url", srv.base_url, "--model", "scripted", "--user", "alice", *args,
                   input=text)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_chat_stores_what_the_user_asks_to_remember_in_the_same_turn(root: Path, llm_server: ScriptedOpenAIServer,
                                                                     language: str):
    assert run_cli(root, "init", "--lang", language, "--user", "alice").returncode == 0
    fact, ask = ("I like green tea", "Remember that I like green tea") if language == "en" else \
        ("我喜欢喝绿茶", "记住我喜欢喝绿茶")
    new = fact.replace("green", "black").replace("绿", "红")
    llm_server.script(Reply(tool_calls=[tool_call("memory_append", {"content": fact})]), Reply("OK!"),
                      Reply(tool_calls=[tool_call("memory_search", {"query": fact})]), Reply("You like it."),
                      Reply(tool_calls=[tool_call("memory_edit", {"path": "MEMORY.md", "old_text": fact,
                                                                  "new_text": new})]), Reply("Updated."),
                      Reply(tool_calls=[tool_call("memory_forget", {"query_or_id": new})]), Reply("Forgotten."))
    out = _run_chat(root, llm_server, f"{ask}\nwhat do I like?\nno, the other one\nforget it\n/exit\n")
    assert out.returncode == 0, out.stderr
    assert "assistant> OK!" in out.stdout and "assistant> You like it." in out.stdout
    for name in ("memory_append", "memory_search", "memory_edit", "memory_forget"):
        assert f"[{name}] ok" in out.stderr, out.stderr
    assert "assistant> Forgotten." in out.stdout
    text = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert fact not in text and new not in text  # edited, then forgotten
    reqs = llm_server.chat_requests()
    assert [len(r["body"].get("tools", [])) for r in reqs] == [len(TOOLS)] * 8
    assert _tool_messages(reqs[5])[-1]["updated"]  # the edit changed the stored memory
    system = reqs[0]["body"]["messages"][0]["content"]
    assert set(TOOL_NAME.findall(system)) == set(TOOLS) and ("记忆工具" in system) == (language == "zh")
    assert _tool_messages(reqs[1])[0]["stored"][0]["content"] == fact  # stored before the answer of turn 1
    found = _tool_messages(reqs[3])[0]["results"]
    assert found and found[0]["content"] == fact
    described = reqs[0]["body"]["tools"][0]["function"]["description"]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in described) == (language == "zh")


def test_chat_falls_back_when_the_endpoint_has_no_function_calling(root: Path, llm_server: ScriptedOpenAIServer):
    llm_server.script(Reply('{"error": "tools are not supported by this model"}', status=400), Reply("plain one"),
                      Reply("plain two"))
    out = _run_chat(root, llm_server, "hello\nagain\n/exit\n")
    assert out.returncode == 0, out.stderr
    assert "assistant> plain one" in out.stdout and "assistant> plain two" in out.stdout
    assert "does not support tools" in out.stderr
    reqs = llm_server.chat_requests()
    assert ["tools" in r["body"] for r in reqs] == [True, False, False]
    assert TOOL_NAME.findall(reqs[1]["body"]["messages"][0]["content"]) == []  # instructions name no tool


def test_chat_with_memory_off_offers_no_tools_and_stores_nothing(root: Path, llm_server: ScriptedOpenAIServer):
    assert run_cli(root, "add", "I like oolong tea", "--user", "alice").returncode == 0
    off = run_cli(root, "memory", "off", "--user", "alice")
    assert off.returncode == 0 and "memory is off for user 'alice'" in off.stdout
    status = run_cli(root, "memory", "status", "--user", "alice", "--json")
    assert json.loads(status.stdout) == {"user_id": "alice", "enabled": False}
    before = (root / "alice" / "MEMORY.md").read_text()
    for extra in ((), ("--note",)):  # `memfold add` stores nothing either, and says why
        refused = run_cli(root, "add", "I like black coffee", "--user", "alice", *extra)
        assert refused.returncode != 0 and "memory is switched off for user 'alice'" in refused.stderr, refused
        assert "memfold memory on --user alice" in refused.stderr
    assert not list((root / "alice").glob("memory/*/*.md"))
    llm_server.script(Reply("Hi."))
    out = _run_chat(root, llm_server, "remember that I like green tea\n/exit\n")
    assert out.returncode == 0, out.stderr
    (req,) = llm_server.chat_requests()
    assert "tools" not in req["body"] and "oolong" not in req["body"]["messages"][0]["content"]
    assert (root / "alice" / "MEMORY.md").read_text() == before
    on = run_cli(root, "memory", "on", "--user", "alice")
    assert on.returncode == 0 and "memory is on" in on.stdout
    assert "memory is on for user 'bob'" in run_cli(root, "memory", "status", "--user", "bob").stdout


def test_memory_switched_off_during_a_chat_is_honoured_at_the_next_message(root: Path,
                                                                            llm_server: ScriptedOpenAIServer):
    llm_server.script(Reply("first"), Reply("second"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    proc = subprocess.Popen([sys.executable, "-m", "memfold", "--root", str(root), "chat", "--base-url",
                             llm_server.base_url, "--model", "scripted", "--user", "alice"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("hello\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "assistant> first"
        assert run_cli(root, "memory", "off", "--user", "alice").returncode == 0
        proc.stdin.write("remember that I like green tea\n/exit\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "assistant> second"
        assert proc.wait(timeout=120) == 0
    finally:
        proc.kill()
    first, second = llm_server.chat_requests()
    assert "tools" in first["body"] and "tools" not in second["body"]
    assert TOOL_NAME.findall(second["body"]["messages"][0]["content"]) == []
    assert second["body"]["messages"][0]["content"].startswith("You are a helpful AI assistant.")  # no memory
    assert first["body"]["messages"][0]["content"].startswith("You are an AI assistant with long-term memory.")
