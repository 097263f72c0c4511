"""``memfold policy``: show a user's effective policy and change its ``policy_overrides.json``
(``set``, ``reset``, ``snapshots``, ``rollback``); every change is snapshotted first
(``maintenance.policy_files``). Registered on the main app by ``register(app)``."""

from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer

from .common import Json, User, out, print_json, runtime

policy_app = typer.Typer(help="Show or change a user's memory policy (policy_overrides.json, with snapshots).",
                         invoke_without_command=True, no_args_is_help=False)


def _user(ctx: typer.Context, user: str) -> str:
    group_user = ctx.parent.params.get("user") if ctx.parent is not None else None
    return group_user if user == "default" and group_user else user  # "memfold policy -u U set ..." means U


def _files(ctx: typer.Context, user: str, *, write: bool = False) -> Any:
    """The user's policy files; a command that only reads or changes what is there needs a workspace."""
    from ..maintenance.policy_files import PolicyFiles

    if not write:
        runtime(ctx).require_workspace()
    return PolicyFiles.of(runtime(ctx).settings().root, user)


def _say(text: str) -> None:
    out.print(text, markup=False, highlight=False)


def _render_change(change: Any, as_json: bool, what: str) -> None:
    if as_json:
        print_json(change.to_dict())
        return
    if not change.changed:
        _say(f"{what}: nothing changed")
        return
    keys = sorted(set(change.before) | set(change.after))
    for k in keys:
        old, new = change.before.get(k, "(config)"), change.after.get(k, "(config)")
        if old != new:
            _say(f"{k}: {json.dumps(old) if old != '(config)' else old} -> {json.dumps(new) if new != '(config)' else new}")
    _say(f"{what}; the overrides before it are in snapshot {change.snapshot.name}")


@policy_app.callback()
def policy(ctx: typer.Context, user: User = "default") -> None:
    """Print the effective memory policy of a namespace (or run a subcommand)."""
    if ctx.invoked_subcommand is None:
        show(ctx, user)


@policy_app.command()
def show(ctx: typer.Context, user: User = "default") -> None:
    """Print the effective memory policy (defaults, config, the user's overrides) as JSON."""
    user = _user(ctx, user)
    print_json(_files(ctx, user).effective(runtime(ctx).settings().base_policy()).to_dict())


@policy_app.command("set")
def set_(ctx: typer.Context, key: Annotated[str, typer.Argument(help="A policy key (see 'memfold policy show').")],
         value: Annotated[str, typer.Argument(help="Its new value (checked against the key's bounds).")],
         user: User = "default", as_json: Json = False) -> None:
    """Set one policy key for a user (snapshot of the old overrides first)."""
    user = _user(ctx, user)
    _render_change(_files(ctx, user, write=True).set({key: value}), as_json, f"set {key} for {user}")


@policy_app.command()
def reset(ctx: typer.Context,
          keys: Annotated[Optional[list[str]], typer.Argument(help="Only these keys (default: all).")] = None,
          user: User = "default", as_json: Json = False) -> None:
    """Remove a user's overrides (all, or the named keys): the config's values apply again."""
    user = _user(ctx, user)
    _render_change(_files(ctx, user).reset(keys or []), as_json, f"reset {' '.join(keys or []) or 'all'} for {user}")


@policy_app.command()
def snapshots(ctx: typer.Context, user: User = "default", as_json: Json = False) -> None:
    """List a user's policy snapshots, oldest first, with the overrides each holds."""
    user = _user(ctx, user)
    snaps = _files(ctx, user).snapshots()
    if as_json:
        print_json([s.to_dict() for s in snaps])
        return
    if not snaps:
        _say(f"no policy snapshots for {user}")
    for s in snaps:
        _say(f"{s.name}  {s.error or json.dumps(s.overrides, ensure_ascii=False, sort_keys=True)}")


@policy_app.command()
def rollback(ctx: typer.Context,
             snapshot: Annotated[Optional[str], typer.Argument(help="Snapshot name (default: the newest).")] = None,
             user: User = "default", as_json: Json = False) -> None:
    """Restore the overrides of a snapshot (the current ones are snapshotted first)."""
    user = _user(ctx, user)
    change = _files(ctx, user).rollback(snapshot)
    _render_change(change, as_json, f"rolled back {user} to snapshot {change.restored}")


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
