"""Memory tools for agents: one definition per tool (``registry.TOOLS``: typed input,
typed result, description in English and Chinese, handler calling the ``Memory`` facade), their
schemas for function-calling APIs and a dispatcher that never raises.

    from memfold import Memory
    from memfold.tools import MemoryTools

    tools = MemoryTools(Memory(), user_id="alice")
    client.chat.completions.create(model=..., messages=..., tools=tools.openai())
    result = tools.call(call.function.name, call.function.arguments)   # a JSON-serialisable dict
"""

from .agent import AgentTurn, MemoryAgent, ToolUse
from .dispatch import ERROR_CODES, MemoryTools, call
from .handlers import ToolContext
from .registry import TOOLS, Tool, tool_names
from .schemas import anthropic_tools, input_schema, openai_tools

__all__ = ["MemoryAgent", "AgentTurn", "ToolUse", "TOOLS", "Tool", "ToolContext", "MemoryTools", "call",
           "ERROR_CODES", "tool_names", "openai_tools", "anthropic_tools", "input_schema"]
