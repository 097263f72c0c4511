"""memfold's tools as function tools of the real OpenAI Agents SDK, driven by the suite's scripted
OpenAI-compatible server (the model's tool calls are scripted; the tools run for real)."""

from __future__ import annotations

import asyncio
import json

import pytest

from memfold import Memory

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from memfold.integrations.openai_agents import memory_tools  # noqa: E402

from ..support.openai_server import Reply, tool_call  # noqa: E402


def test_an_agent_saves_and_finds_memories_with_the_tools(mem: Memory, llm_server):
    set_tracing_disabled(True)  # offline: no traces sent anywhere
    llm_server.script(
        Reply(tool_calls=[tool_call("save_memory", {"content": "Alice is allergic to peanuts", "memory_type": "fact",
                                                    "importance": 0.9}, "c1")]),
        "I will remember that.",
        Reply(tool_calls=[tool_call("memory_search", {"query": "allergies"}, "c2")]),
        "You are allergic to peanuts.",
        Reply(tool_calls=[tool_call("memory_edit", {"path": "MEMORY.md", "old_text": "not in the file",
                                                    "new_text": "x"}, "c3")]),
        "That text is not in the file.")
    model = OpenAIChatCompletionsModel(model="scripted", openai_client=AsyncOpenAI(base_url=llm_server.base_url,
                                                                                  api_key="test"))
    tools = memory_tools(mem, user_id="alice")
    assert {"memory_search", "save_memory", "memory_append"} <= {t.name for t in tools}
    agent = Agent(name="assistant", instructions="Use your memory tools.", model=model, tools=tools)

    async def main() -> list[str]:
        outs = []
        for question in ("Remember that I am allergic to peanuts", "What am I allergic to?", "Fix my memory"):
            outs.append((await Runner.run(agent, question)).final_output)
        return outs
    outs = asyncio.run(main())
    assert outs == ["I will remember that.", "You are allergic to peanuts.", "That text is not in the file."]
    assert [r.content for r in mem.get_all("alice")] == ["Alice is allergic to peanuts"]
    sent = llm_server.chat_requests()
    assert {t["function"]["name"] for t in sent[0]["body"]["tools"]} >= {"memory_search", "save_memory"}
    results = [m for r in sent for m in r["body"]["messages"] if m.get("role") == "tool"]
    found = json.loads(results[1]["content"]) if isinstance(results[1]["content"], str) else results[1]["content"]
    assert "peanuts" in json.dumps(found)
    assert json.loads(results[-1]["content"])["error"]["code"] == "no_match"  # an error result the model reads
