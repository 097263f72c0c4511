"""``memfold maintain``: run the maintenance jobs that are due (tidy, old-memory compression,
long-term compression) and print what was done, or with ``--dry-run`` what would be done.
Registered on the main app by ``register(app)``."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .common import Json, OneUser, err, out, print_json, runtime


def maintain(ctx: typer.Context, user: OneUser = None,
             dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would be done.")] = False,
             force: Annotated[bool, typer.Option("--force", help="Run jobs even when their interval has not passed.")] = False,
             job: Annotated[Optional[list[str]], typer.Option("--job", help="Only this job (repeatable).")] = None,
             as_json: Json = False) -> None:
    """Run the due maintenance jobs of one namespace or of every one (exit 1 if a job failed)."""
    def progress(res) -> None:  # type: ignore[no-untyped-def]
        if not as_json:
            err.print(f"… {res.user_id}: {res.job}: {res.status}", highlight=False)

    run = runtime(ctx).existing().maintain(user, dry_run=dry_run, jobs=job, force=force, progress=progress)
    if as_json:
        print_json(run.to_dict())
    else:
        if dry_run:
            out.print("dry run: nothing is changed", highlight=False)
        for res in run.results:
            out.print(res.summary(), highlight=False)
            if dry_run and res.archived:
                out.print(f"  memories: {', '.join(res.archived[:20])}" + (" …" if len(res.archived) > 20 else ""),
                          highlight=False)
        if not run.results:
            out.print("no namespaces", highlight=False)
    if run.failed:
        sys.exit(1)


def register(app: typer.Typer) -> None:
    app.command()(maintain)
