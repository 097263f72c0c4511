"""``memfold doctor``: check the configured embedder and LLM endpoints and print what works
(the checks are ``engine.admin.doctor``). Registered on the main app by ``register(app)``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .common import Json, out, print_json, runtime


def doctor(ctx: typer.Context, as_json: Json = False,
           skip_embedder: Annotated[bool, typer.Option("--skip-embedder", help="Only check the LLM.")] = False) -> None:
    """Check the configured embedder and LLM endpoints and print what works (exit 1 if one fails)."""
    from ..facade.admin import doctor as run_checks

    settings = runtime(ctx).settings()
    checks = run_checks(settings, skip_embedder=skip_embedder)
    if as_json:
        print_json({"root": str(settings.root), "checks": [c.to_dict() for c in checks]})
    else:
        out.print(f"workspace {settings.root}", markup=False, highlight=False)
        for c in checks:
            mark = {True: "ok  ", False: "FAIL", None: "--  "}[c.ok]
            out.print(f"{mark} {c.name:9} {c.summary}", markup=False, highlight=False)
    if any(c.ok is False for c in checks):
        sys.exit(1)  # (typer.Exit's code is dropped by main()'s standalone_mode=False)


def register(app: typer.Typer) -> None:
    app.command()(doctor)

