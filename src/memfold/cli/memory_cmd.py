"""``memfold memory on|off|status``: memory switched on or off for one namespace, for users who do not want to be remembered. Off:
nothing is read, injected or written, and no tools are offered (context building, tools, chat, MCP).
Registered on the main app by ``register(app)``."""

from __future__ import annotations

import typer

from .common import Json, User, out, print_json, runtime

memory_app = typer.Typer(no_args_is_help=True,
                         help="Switch memory on or off for a user (off: nothing read, injected or written).")


def _report(ctx: typer.Context, user: str, as_json: bool, changed: str = "") -> None:
    m = runtime(ctx).memory()
    on = m.memory_enabled(user)
    if as_json:
        print_json({"user_id": user, "enabled": on})
        return
    out.print(f"memory is {'on' if on else 'off'} for user {user!r}{changed}", highlight=False)


@memory_app.command("on")
def memory_on(ctx: typer.Context, user: User = "default", as_json: Json = False) -> None:
    """Switch memory on for a user (context, tools, chat and MCP read and write it)."""
    path = runtime(ctx).memory().set_memory_enabled(True, user)
    _report(ctx, user, as_json, f" (set in {path})")


@memory_app.command("off")
def memory_off(ctx: typer.Context, user: User = "default", as_json: Json = False) -> None:
    """Switch memory off for a user: nothing read, injected or written; no tools offered."""
    path = runtime(ctx).memory().set_memory_enabled(False, user)
    _report(ctx, user, as_json, f" (set in {path}; `memfold memory on --user {user}` switches it back)")


@memory_app.command("status")
def memory_status(ctx: typer.Context, user: User = "default", as_json: Json = False) -> None:
    """Say whether memory is on or off for a user (the enabled key of the config, then the user's own setting)."""
    runtime(ctx).require_workspace()
    _report(ctx, user, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")
