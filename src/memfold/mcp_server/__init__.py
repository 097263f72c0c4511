"""memfold as an MCP server (official ``mcp`` SDK): the tools of ``memfold.tools`` and
``MEMORY.md`` as the resource ``memfold://memory/MEMORY.md``, for one namespace.
Named ``mcp_server`` so that it never shadows the SDK's ``mcp`` package."""

from .server import MEMORY_URI, Namespace, build_server, tool_list, tool_result
from .transport import HTTP_PATH, run_http, run_stdio

__all__ = ["MEMORY_URI", "HTTP_PATH", "Namespace", "build_server", "tool_list", "tool_result", "run_http",
           "run_stdio"]
