"""LlamaIndex pieces against the real ``llama-index-core``: the memory block in LlamaIndex's
``Memory`` under a chat engine, and the retriever under a ``ContextChatEngine`` (``MockLLM``,
which answers with the prompt it was given: what memfold put into the prompt is visible)."""

from __future__ import annotations

import asyncio

import pytest

from memfold import Memory

pytest.importorskip("llama_index.core")

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.chat_engine import ContextChatEngine, SimpleChatEngine  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.memory import Memory as LlamaMemory  # noqa: E402

from memfold.integrations.llamaindex import MemfoldMemoryBlock, MemfoldRetriever  # noqa: E402


def test_the_memory_block_keeps_what_short_term_memory_lets_go(mem: Memory):
    block = MemfoldMemoryBlock(memory=mem, user_id="alice")
    short = LlamaMemory.from_defaults(session_id="s1", token_limit=60, chat_history_token_ratio=0.1,
                                      token_flush_size=10, memory_blocks=[block])
    for text in ("I moved to Lyon last spring and I work at a bakery there.",
                 "My favourite tea is oolong, never with sugar.", "Tell me a joke about bread."):
        short.put_messages([ChatMessage(role="user", content=text), ChatMessage(role="assistant", content="Noted!")])
    stored = [r.content for r in mem.get_all("alice")]
    assert any("Lyon" in t for t in stored)  # flushed out of the short-term memory into memfold
    history = short.get(input="Which tea do I like?")
    shown = "\n".join(str(m.content) for m in history)
    assert "<memfold>" in shown and "oolong" in shown


def test_a_chat_engine_with_the_memory_block(mem: Memory):
    mem.add("My favourite tea is oolong, never with sugar", "bob")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=LlamaMemory.from_defaults(
        session_id="s2", memory_blocks=[MemfoldMemoryBlock(memory=mem, user_id="bob")]))
    answer = str(engine.chat("Which tea should I buy for myself?"))
    assert "oolong" in answer  # the block's memories reached the prompt


def test_the_retriever_under_a_context_chat_engine(mem: Memory):
    mem.add("The spare key is under the blue flower pot", "carol", metadata={"topic": "home"})
    mem.add("Carol's dentist appointment is on Friday", "carol", metadata={"topic": "health"})
    r = MemfoldRetriever(mem, user_id="carol", similarity_top_k=2)
    nodes = r.retrieve("where is the spare key")
    assert nodes[0].node.get_content() == "The spare key is under the blue flower pot" and nodes[0].score
    assert [n.node.get_content() for n in MemfoldRetriever(mem, "carol", filters={"topic": "health"}).retrieve(
        "appointment")] == ["Carol's dentist appointment is on Friday"]
    assert asyncio.run(r.aretrieve("dentist"))[0].node.get_content().startswith("Carol's dentist")
    engine = ContextChatEngine.from_defaults(retriever=r, llm=MockLLM())
    assert "blue flower pot" in str(engine.chat("Where did I leave the spare key?"))
