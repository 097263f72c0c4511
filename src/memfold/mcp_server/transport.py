"""Serving the MCP server: over stdio (an MCP client starts ``memfold mcp`` as a subprocess) or
over streamable HTTP (``memfold mcp --http``, on 127.0.0.1 by default, endpoint ``/mcp``)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server

HTTP_PATH = "/mcp"


def run_stdio(server: Server[Any]) -> None:
    """Serve one client on standard input/output until it closes the connection."""

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def run_http(server: Server[Any], host: str = "127.0.0.1", port: int = 8765, allowed_hosts: str = "") -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted. The SDK checks Host and
    Origin by ``memfold.server.origins`` (the rule ``memfold serve`` applies): on a loopback host
    only local names and ``allowed_hosts``."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from ..server.origins import host_rule

    rule = host_rule(host, allowed_hosts)
    if rule.names is None:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        hosts, origins = rule.sdk_patterns()
        security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host, transport_security=security)
    uvicorn.run(app, host=host, port=port, log_level="warning")
