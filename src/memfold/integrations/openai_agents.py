"""memfold's agent tools as function tools of the OpenAI Agents SDK (``pip install memfold[openai-agents]``):
``Agent(tools=memory_tools(memory, user_id="alice"))``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import FunctionTool, RunContextWrapper

from ..facade.memory import Memory
from ..tools.dispatch import MemoryTools
from ..tools.registry import TOOLS
from ..tools.schemas import input_schema


def memory_tools(memory: Memory, user_id: str = "default", agent_id: str | None = None,
                 language: str | None = None) -> list[FunctionTool]:
    """The tools bound to one namespace (none when memory is off for it). Each call runs on a
    worker thread and answers the tool's JSON result; a failed call answers an error result the
    model can read (``{"error": {"code", "message"}}``), never an exception."""
    bound = MemoryTools(memory, user_id=user_id, agent_id=agent_id, language=language)

    def make(name: str) -> FunctionTool:
        async def invoke(ctx: RunContextWrapper[Any], arguments: str) -> str:
            result = await asyncio.to_thread(bound.call, name, arguments or "{}")
            return json.dumps(result, ensure_ascii=False)

        tool = TOOLS[name]
        return FunctionTool(name=name, description=tool.describe(bound.language),
                            params_json_schema=input_schema(tool, bound.language), on_invoke_tool=invoke,
                            strict_json_schema=False)

    return [make(n) for n in bound.names]
