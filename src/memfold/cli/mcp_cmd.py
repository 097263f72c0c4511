"""``memfold mcp``: serve the memory tools and ``MEMORY.md`` to MCP clients (Claude Desktop,
Cursor, any agent framework), over stdio or streamable HTTP. Registered by ``register(app)``."""

from __future__ import annotations

from typing import Optional

import typer

from .common import User, err, runtime

LOOPBACK = ("127.0.0.1", "localhost", "::1")
NO_SDK = ("memfold mcp needs the MCP SDK, which is not installed: pip install 'memfold[mcp]' "
          "(or pip install mcp)")


def mcp(ctx: typer.Context, user: User = "default",
        agent: Optional[str] = typer.Option(None, "--agent", help="Agent id the saved memories are pinned to."),
        http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on with --http."),
        port: int = typer.Option(8765, "--port", help="Port to listen on with --http.")) -> None:
    """Run an MCP server with memfold's memory tools and MEMORY.md as a resource, in one namespace.

    stdio by default (the MCP client starts this command); --http serves streamable HTTP at /mcp."""
    from ..engine.storage import guard
    from ..errors import ConfigError, InvalidInputError

    try:
        from ..mcp_server import HTTP_PATH, Namespace, build_server, run_http, run_stdio
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise ConfigError(NO_SDK) from None
        raise
    if not 0 < port < 65536:
        raise InvalidInputError(f"--port must be between 1 and 65535, got {port}")
    ns = Namespace(guard.user(user), guard.optional_ident(agent, "agent_id"))
    from ..metrics.shared import Publisher

    memory = runtime(ctx).memory()
    memory.start_maintenance()  # a server stays up: due maintenance runs in its own thread ([maintenance])
    published = Publisher(memory.settings.root, "mcp").start()  # for `memfold stats --metrics` from a shell
    try:
        server = build_server(memory, ns)
        if http:
            err.print(f"memfold MCP server for user {ns.user_id!r} on http://{host}:{port}{HTTP_PATH}",
                      markup=False, highlight=False)
            if host not in LOOPBACK:
                err.print(f"warning: {host} is reachable from other machines and the server has no "
                          "authentication: anyone who can connect reads and changes this memory",
                          markup=False, highlight=False)
            run_http(server, host, port, memory.settings.server.allowed_hosts)
        else:
            run_stdio(server)  # standard output carries the protocol: nothing else is printed there
    finally:
        published.stop()
        memory.close()


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
