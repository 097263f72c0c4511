"""The MCP server's edges, through the SDK client connected in process (fast): resources that do
not exist or may not be read, memory switched off while the server runs."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from memfold import Memory

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

from memfold.mcp_server import MEMORY_URI, Namespace, build_server  # noqa: E402
from memfold.tools.registry import TOOLS  # noqa: E402


def test_resource_errors_and_memory_switched_off_while_running(mem: Memory, root: Path, tmp_path: Path) -> None:
    mem.add("I like green tea", "alice")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- a secret plan\n", encoding="utf-8")
    mem.init("mallory")
    os.replace(root / "mallory" / "MEMORY.md", tmp_path / "old.md")
    os.symlink(outside, root / "mallory" / "MEMORY.md")  # a symlink out of the workspace

    async def main() -> None:
        async with Client(build_server(mem, Namespace("alice"))) as c:
            assert "I like green tea" in (await c.read_resource(MEMORY_URI)).contents[0].text
            with pytest.raises(mcp.MCPError, match="no resource"):
                await c.read_resource("memfold://memory/learnings.md")
            mem.set_memory_enabled(False, "alice")  # read fresh at every request
            assert (await c.list_tools()).tools == [] and (await c.list_resources()).resources == []
            with pytest.raises(mcp.MCPError, match="switched off"):
                await c.read_resource(MEMORY_URI)
            res = await c.call_tool("memory_search", {"query": "tea"})
            assert res.is_error and '"memory_off"' in res.content[0].text
            mem.set_memory_enabled(True, "alice")
            assert len((await c.list_tools()).tools) == len(TOOLS)
        async with Client(build_server(mem, Namespace("mallory"))) as c:
            with pytest.raises(mcp.MCPError) as caught:
                await c.read_resource(MEMORY_URI)
            assert "secret plan" not in str(caught.value) and "refused" in str(caught.value), str(caught.value)
            res = await c.call_tool("memory_read", {})
            assert res.is_error and "secret plan" not in res.content[0].text

    anyio.run(main)
