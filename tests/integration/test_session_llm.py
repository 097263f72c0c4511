"""LLM summaries through a real local OpenAI-compatible server (scripted), and the chat and
summarize commands."""

from __future__ import annotations

import json
from pathlib import Path

from memfold import Memory
from memfold.config import LLMSettings
from memfold.engine.conversation.session import NOTICE
from memfold.providers.chat import make_chat_model

from ..conftest import run_cli
from ..support.openai_server import Reply


def _chat(srv, **kw):
    return make_chat_model(LLMSettings(provider="openai", base_url=srv.base_url, model="scripted", max_retries=0,
                                       **kw))


def _prompt(request: dict) -> str:
    return request["body"]["messages"][-1]["content"]


def test_incremental_llm_summary_sends_the_previous_summary(mem: Memory, llm_server) -> None:
    llm_server.script("SUMMARY-ONE: Alice planned a trip to Kyoto on May 3.",
                      "SUMMARY-TWO: Alice planned a Kyoto trip on May 3 and booked the Hotel Sakura.")
    s = mem.session("llm", policy={"session_summary_message_threshold": 4, "session_summary_keep_count": 2},
                    chat_model=_chat(llm_server))
    for role, text in (("user", "I am Alice and I plan a trip to Kyoto."), ("assistant", "Great, when?"),
                       ("user", "On May 3."), ("assistant", "Noted.")):
        s.add_message(role, text)
    assert s.summary == ""
    up = s.add_message("user", "I booked the Hotel Sakura.")
    assert up.summarized and up.method == "llm" and up.notice == NOTICE and up.folded == 3
    assert s.summary == "SUMMARY-ONE: Alice planned a trip to Kyoto on May 3."
    first = _prompt(llm_server.chat_requests()[0])
    assert first.lower().startswith("progressively summari")
    assert "User: I am Alice and I plan a trip to Kyoto." in first and "Assistant: Great, when?" in first
    s.add_message("assistant", "Lovely hotel.")
    s.add_message("user", "Thanks!")
    up = s.add_message("assistant", "You're welcome.")
    assert up.summarized and up.method == "llm"
    second = _prompt(llm_server.chat_requests()[1])
    # the progressive prompt: previous summary + only the newly folded messages
    assert "SUMMARY-ONE: Alice planned a trip to Kyoto on May 3." in second
    assert "User: I booked the Hotel Sakura." in second and "I am Alice" not in second
    assert s.summary.startswith("SUMMARY-TWO")


def test_chinese_summary_prompt(root: Path, embedder, llm_server) -> None:
    llm_server.script("用户小王计划5月3日去京都。")
    m = Memory(root=root, embedder=embedder, language="zh")
    try:
        s = m.session("zh", policy={"session_summary_message_threshold": 2, "session_summary_keep_count": 1},
                      chat_model=_chat(llm_server))
        s.add_message("user", "我叫小王，5月3日去京都。")
        s.add_message("assistant", "好的。")
        assert s.add_message("user", "帮我订酒店。").summarized
        prompt = _prompt(llm_server.chat_requests()[0])
        assert prompt.startswith("请逐步总结提供的对话内容，将其补充到之前的摘要中并返回一个新的摘要。")
        assert "新的对话内容：\n用户：我叫小王，5月3日去京都。\n助手：好的。" in prompt
        assert "## 对话历史总结\n用户小王计划5月3日去京都。" in s.build_context("酒店订好了吗？")[0]["content"]
    finally:
        m.close()


def test_llm_failure_falls_back_to_the_extractive_summary(mem: Memory, llm_server) -> None:
    llm_server.script(Reply(status=400, content="bad request"))
    s = mem.session("fail", policy={"session_summary_message_threshold": 2, "session_summary_keep_count": 1},
                    chat_model=_chat(llm_server))
    s.add_message("user", "My flight LH 455 leaves on July 9.")
    s.add_message("assistant", "Safe travels.")
    up = s.add_message("user", "Thanks.")
    assert up.summarized and up.method == "extractive" and up.errors
    assert "LH 455" in s.summary and "July 9" in s.summary  # nothing the user said was lost


def test_chat_command_against_a_scripted_endpoint(mem: Memory, root: Path, llm_server) -> None:
    mem.add("I prefer answers in bullet points", agent_id="default")
    mem.close()
    llm_server.default_reply = Reply(content="- Sure.")
    lines = "\n".join(f"Question number {i} about gardening?" for i in range(11)) + "\n/summary\n/exit\n"
    res = run_cli(root, "chat", "--session", "garden", "--base-url", llm_server.base_url, "--model", "m1",
                  input=lines)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("assistant> - Sure.") == 11
    assert res.stdout.count(NOTICE) == 1  # 22 messages: one fold at the 21st
    reqs = llm_server.chat_requests()
    answers = [r for r in reqs if r["body"]["messages"][0]["role"] == "system"]
    summaries = [r for r in reqs if r["body"]["messages"][0]["role"] != "system"]
    assert len(answers) == 11 and len(summaries) == 1
    assert all(r["body"]["model"] == "m1" for r in reqs)
    first = answers[0]["body"]["messages"]
    assert "I prefer answers in bullet points" in first[0]["content"]  # memory and pin injected
    assert first[-1] == {"role": "user", "content": "Question number 0 about gardening?"}
    assert answers[5]["body"]["messages"][-3]["content"] == "Question number 4 about gardening?"
    assert "- Sure." in res.stdout.split(NOTICE)[-1]  # /summary printed the LLM summary
    listed = json.loads(run_cli(root, "sessions", "--json").stdout)
    assert listed[0]["session_id"] == "garden" and listed[0]["total_messages"] == 22
    assert listed[0]["messages"] == 4 + 1 and listed[0]["folds"] == 1


def test_chat_without_an_endpoint_explains_and_fails(root: Path) -> None:
    res = run_cli(root, "chat", input="hello\n")
    assert res.returncode != 0
    assert "--base-url" in res.stderr and "[llm]" in res.stderr and "MEMFOLD_LLM__BASE_URL" in res.stderr


def test_chat_keeps_the_user_message_when_the_model_fails(root: Path, llm_server) -> None:
    llm_server.script(Reply(status=401, content="bad key"))
    res = run_cli(root, "chat", "-s", "x", "--base-url", llm_server.base_url, "--model", "m", input="Remember my id 77\n")
    assert res.returncode != 0 and "401" in res.stderr
    out = json.loads(run_cli(root, "sessions", "--json").stdout)
    assert out[0]["messages"] == 1


def test_summarize_command(mem: Memory, root: Path) -> None:
    s = mem.session("sum")
    for i in range(6):
        s.add_message("user" if i % 2 == 0 else "assistant", f"Point {i}: we agreed on budget {1000 + i} euros.")
    mem.close()
    res = run_cli(root, "summarize", "--session", "sum")
    assert res.returncode == 0, res.stderr
    assert NOTICE in res.stdout and "budget 1000 euros" in res.stdout and "folded 2 messages" in res.stderr
    assert run_cli(root, "summarize", "--session", "missing").returncode != 0
