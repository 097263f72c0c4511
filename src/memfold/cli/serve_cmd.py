"""``memfold serve`` (the HTTP API and the web page) and ``memfold keys create|list|revoke``.
Registered on the main app by ``register(app)``."""

from __future__ import annotations

import os
import tempfile
from typing import Optional

import typer

from ..errors import InvalidInputError
from ..metrics import prepare_multiprocess
from .common import Json, KeyUsers, err, out, print_json, runtime

LOOPBACK = ("127.0.0.1", "::1", "localhost")
NO_AUTH_BANNER = """\
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!!  WARNING: memfold serve --no-auth -- NO API KEY IS CHECKED.
!!  Anyone who can reach {addr}
!!  may read, change and delete every namespace of {root}.
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"""

keys_app = typer.Typer(no_args_is_help=True, help="API keys of the HTTP server: create, list, revoke.")


def serve(ctx: typer.Context,
          host: Optional[str] = typer.Option(None, "--host", help="Address to listen on (default: server.host in "
                                             "config.toml, 127.0.0.1)."),
          port: Optional[int] = typer.Option(None, "--port", help="Port (default: server.port in config.toml, 8765)."),
          workers: Optional[int] = typer.Option(None, "--workers", help="Worker processes (default: "
                                                "server.workers in config.toml, 1)."),
          no_auth: bool = typer.Option(False, "--no-auth", help="Check no API key (only on 127.0.0.1 / ::1).")) -> None:
    """Run the HTTP API (OpenAPI at /docs) and the web page at / with uvicorn."""
    settings = runtime(ctx).settings()
    host = host or settings.server.host
    port = settings.server.port if port is None else port
    workers = settings.server.workers if workers is None else workers
    if not 0 <= port <= 65535:
        raise InvalidInputError(f"--port must be 0..65535, got {port}")
    if workers < 1:
        raise InvalidInputError(f"--workers must be at least 1, got {workers}")
    if no_auth and host not in LOOPBACK:
        raise InvalidInputError(f"--no-auth is refused on {host}: it is allowed only on 127.0.0.1 or ::1, "
                                "where no other machine can reach the server; create a key with "
                                "'memfold keys create --user U' instead")
    try:
        import uvicorn

        from ..server import app as server_app
    except ImportError as exc:
        raise InvalidInputError(f"memfold serve needs the server extra ({exc.name} is missing): "
                                "pip install 'memfold[server]'") from None
    os.environ["MEMFOLD_HOME"] = str(settings.root)  # the workers build their app from it
    os.environ[server_app.ENV_HOST] = host  # decides the Host/Origin headers the workers answer
    if no_auth:
        os.environ[server_app.ENV_NO_AUTH] = "1"
        err.print(NO_AUTH_BANNER.format(addr=f"http://{host}:{port}", root=settings.root),
                  markup=False, highlight=False)
    else:
        os.environ.pop(server_app.ENV_NO_AUTH, None)
    err.print(f"memfold serving {settings.root} on http://{host}:{port}/ (API docs at /docs)",
              markup=False, highlight=False)
    if workers > 1:  # the workers add up their metrics in one folder (GET /metrics is correct in any of them)
        prepare_multiprocess(tempfile.mkdtemp(prefix="memfold-metrics-"))
    uvicorn.run("memfold.server.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="warning", access_log=False, timeout_graceful_shutdown=10)


@keys_app.command("create")
def keys_create(ctx: typer.Context, user: KeyUsers,
                scope: str = typer.Option("write", "--scope", help="read | write | admin."),
                name: str = typer.Option("", "--name", help="A label to recognise the key by."),
                as_json: Json = False) -> None:
    """Create an API key bound to namespaces; the key is shown once, alone on the last line."""
    from ..server.keys import KeyStore

    key, info = KeyStore(runtime(ctx).memory().index).create(list(user), scope, name)
    if as_json:
        print_json({**info.to_dict(), "key": key})
        return
    out.print(f"created key {info.key_id} (scope {info.scope}, namespaces {', '.join(info.namespaces)})"
              " - it is shown only now:")
    out.print(key)


@keys_app.command("list")
def keys_list(ctx: typer.Context, as_json: Json = False) -> None:
    """List the API keys (ids, namespaces, scope, name, revoked or not; never the keys)."""
    from ..server.keys import KeyStore

    keys = KeyStore(runtime(ctx).existing().index).list()
    if as_json:
        print_json([k.to_dict() for k in keys])
        return
    if not keys:
        out.print("no API keys (memfold keys create --user U)")
    for k in keys:
        state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
        out.print(f"{k.key_id}  {k.scope:5}  {','.join(k.namespaces)}  {state}  created {k.created_at}  {k.name}")


@keys_app.command("revoke")
def keys_revoke(ctx: typer.Context, key_id: str = typer.Argument(..., help="The key id (or the whole key).")) -> None:
    """Revoke an API key: every server sharing the index refuses it from its next request."""
    from ..server.keys import KeyStore

    k = KeyStore(runtime(ctx).existing().index).revoke(key_id)
    out.print(f"revoked {k.key_id} ({k.revoked_at})")


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.add_typer(keys_app, name="keys")
