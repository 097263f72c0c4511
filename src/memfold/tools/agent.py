"""A small agent loop over any chat model with function calling (``memfold chat`` uses it): offer
the memory tools, run every tool call the model makes through ``dispatch.call`` (an error result
goes back to the model, the loop goes on), until the model answers in text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..providers.chat import ToolReply
from .dispatch import MemoryTools

MAX_ROUNDS = 6  # model calls with tools per user message; then one more without tools for the answer


@runtime_checkable
class ToolChat(Protocol):
    def complete_tools(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                       temperature: float = 0.3) -> ToolReply: ...


@dataclass(frozen=True)
class ToolUse:
    """One tool call of a turn and its result (``result["ok"]`` False: an error result)."""

    name: str
    arguments: str
    result: dict[str, Any]


@dataclass
class AgentTurn:
    """What one user message led to: the answer, the tool calls made, and the assistant and tool
    messages added after the given ones (to send back with the next message, if wanted)."""

    text: str
    calls: list[ToolUse] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


class MemoryAgent:
    """``MemoryAgent(chat, MemoryTools(mem, user_id="alice")).run(messages)`` → ``AgentTurn``."""

    def __init__(self, chat: ToolChat, tools: MemoryTools, *, max_rounds: int = MAX_ROUNDS,
                 temperature: float = 0.7):
        self.chat = chat
        self.tools = tools
        self.max_rounds = max(1, max_rounds)
        self.temperature = temperature

    def run(self, messages: list[dict[str, Any]]) -> AgentTurn:
        """Answer the last message of ``messages`` (the built context), calling tools as the model asks.
        Provider errors (``ToolsRejected`` included) are raised: the caller falls back or reports."""
        offered = self.tools.openai()  # none with memory off
        turn = AgentTurn(text="")
        convo = list(messages)
        for round_ in range(self.max_rounds + 1):
            last = round_ == self.max_rounds  # a model that keeps calling tools is asked for its answer
            reply = self.chat.complete_tools(convo, [] if last else offered, temperature=self.temperature)
            if not reply.tool_calls or last:
                turn.text = reply.text
                turn.messages.append({"role": "assistant", "content": reply.text})
                return turn
            convo.append(reply.message)
            turn.messages.append(reply.message)
            for c in reply.tool_calls:
                result = self.tools.call(c.name, c.arguments)
                turn.calls.append(ToolUse(c.name, c.arguments, result))
                msg = {"role": "tool", "tool_call_id": c.id, "content": json.dumps(result, ensure_ascii=False)}
                convo.append(msg)
                turn.messages.append(msg)
        return turn  # not reached: the last round returns
