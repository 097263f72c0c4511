"""The memfold MCP server (official ``mcp`` SDK, low-level ``Server``): the tools of
``memfold.tools`` and ``MEMORY.md`` as a resource, in one namespace.

Nothing here declares a tool: names, descriptions (in the user's language) and input schemas
come from ``tools.registry.TOOLS`` and ``tools.schemas.input_schema`` (the pydantic input
models); a call goes through ``tools.call``, whose JSON result becomes the text content (and
the structured content) of the MCP result, with ``isError`` when ``ok`` is false. With memory
switched off for the namespace no tool and no resource is listed, and a call gets the
``memory_off`` error result. Engine calls run in a worker thread, one at a time."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..errors import CODES, MemfoldError, NotFoundError, code_of
from ..facade.memory import Memory
from ..models import FILE_MEMORY
from ..tools import TOOLS, call, input_schema

SERVER_NAME = "memfold"
RESOURCE_PREFIX = "memfold://memory/"
MEMORY_URI = RESOURCE_PREFIX + FILE_MEMORY
RESOURCE_NOT_FOUND = CODES["not_found"].mcp_code  # the MCP specification's code for an unknown resource
DESTRUCTIVE = ("memory_edit", "memory_forget")  # change or delete what is stored (the others only add or read)
INSTRUCTIONS = {
    "en": "Long-term memory of the user. Search it (memory_search) before answering questions about the user; "
          "store what the user asks you to remember at once (memory_append or save_memory); correct entries with "
          "memory_edit after reading the file (memory_read); delete what the user asks you to forget "
          "(memory_forget).",
    "zh": "用户的长期记忆。回答与用户有关的问题前先搜索（memory_search）；用户让你记住的内容立即保存（memory_append 或 "
          "save_memory）；先读取文件（memory_read）再用 memory_edit 更正；用户让你忘掉的内容用 memory_forget 删除。",
}


@dataclass(frozen=True)
class Namespace:
    """Whose memory the server serves: ``user_id`` (and the agent saved memories are pinned to)."""

    user_id: str = "default"
    agent_id: str | None = None


def tool_list(memory: Memory, ns: Namespace) -> list[types.Tool]:
    """The MCP tools of the namespace, from the tools layer's registry (none when memory is off)."""
    if not memory.memory_enabled(ns.user_id):
        return []
    lang = memory.language(ns.user_id)
    return [types.Tool(name=t.name, description=t.describe(lang), input_schema=input_schema(t, lang),
                       annotations=types.ToolAnnotations(read_only_hint=not t.writes,
                                                         destructive_hint=t.writes and t.name in DESTRUCTIVE,
                                                         open_world_hint=False))
            for t in TOOLS.values()]


def tool_result(result: dict[str, Any]) -> types.CallToolResult:
    """A tools-layer result as an MCP result: JSON text (and structured content); ``isError`` when not ok."""
    text = json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result,
                                is_error=not result.get("ok", False))


def mcp_error(exc: MemfoldError) -> MCPError:
    """A memfold error as an MCP protocol error: the JSON-RPC code of ``errors.CODES``, the message,
    and the error's ``code`` and ``field`` as its data (a failed tool call is an error result instead)."""
    return MCPError(code_of(exc).mcp_code, str(exc), {"code": exc.code, "field": exc.field})


def resource_list(memory: Memory, ns: Namespace) -> list[types.Resource]:
    if not memory.memory_enabled(ns.user_id):
        return []
    return [types.Resource(uri=MEMORY_URI, name=FILE_MEMORY, title=f"MEMORY.md of {ns.user_id}",
                           description="The user's long-term memory file as the agent sees it (no id comments, "
                                       "at most memory_char_limit characters).",
                           mime_type="text/markdown")]


def read_resource(memory: Memory, ns: Namespace, uri: str) -> types.ReadResourceResult:
    if uri != MEMORY_URI:
        raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri!r}; the resource is {MEMORY_URI}",
                       {"code": "not_found", "field": "uri"})
    if not memory.memory_enabled(ns.user_id):
        raise MCPError(RESOURCE_NOT_FOUND, f"memory is switched off for user {ns.user_id!r}: nothing is read",
                       {"code": "memory_off", "field": None})
    try:
        text = memory.read_file(FILE_MEMORY, ns.user_id).text
    except NotFoundError:
        text = ""  # no memory yet
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=MEMORY_URI, mime_type="text/markdown",
                                                                         text=text)])


def build_server(memory: Memory, ns: Namespace) -> Server[Any]:
    """The MCP server for one namespace of ``memory`` (the caller keeps and closes ``memory``)."""
    engine = anyio.CapacityLimiter(1)  # one engine call at a time, off the event loop

    async def run(fn: Any, *args: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(fn, *args, limiter=engine)
        except MemfoldError as exc:  # a listing or a read that failed: the reason, not a bare internal error
            raise mcp_error(exc) from None

    async def on_list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                            ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await run(tool_list, memory, ns))

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                           ) -> types.CallToolResult:
        result = await run(lambda: call(memory, params.name, params.arguments or {}, user_id=ns.user_id,
                                        agent_id=ns.agent_id))
        return tool_result(result)

    async def on_list_resources(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                                ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await run(resource_list, memory, ns))

    async def on_read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
                               ) -> types.ReadResourceResult:
        return await run(read_resource, memory, ns, str(params.uri))

    lang = memory.language(ns.user_id)
    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS.get(lang, INSTRUCTIONS["en"]),
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool, on_list_resources=on_list_resources,
                  on_read_resource=on_read_resource)
