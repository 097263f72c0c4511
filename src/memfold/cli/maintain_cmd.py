"""``memfold maintain``: run the maintenance jobs that are due (tidy, old-memory compression,
long-term compression) and print what was done, or with ``--dry-run`` what would be done.
Registered on the main app by ``register(app)``."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

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
            for line in change_lines(res.changes):
                out.print(line, markup=False, highlight=False)
        if not run.results:
            out.print("no namespaces", highlight=False)
    if run.failed:
        sys.exit(1)


SHOWN_CHANGES = 50  # changes listed per job (--json lists every one)
SHOWN_MEMORIES = 5  # memories listed per change


def change_lines(changes: list[dict[str, Any]]) -> list[str]:
    """Each change as a person judges it: what and why, the memories' words, what is written instead
    and the characters saved."""
    lines: list[str] = []
    for c in changes[:SHOWN_CHANGES]:
        saved = c["chars_saved"]
        size = ("" if saved is None else f", saves {saved} characters" if saved >= 0
                else f", adds {-saved} characters")
        lines.append(f"  - {c['action']} ({c['reason']}{size}):")
        mems = c["memories"]
        for m in mems[:SHOWN_MEMORIES]:
            lines.append(f"      {m['id']}  {m['text']}")
        if len(mems) > SHOWN_MEMORIES:
            lines.append(f"      … and {len(mems) - SHOWN_MEMORIES} more")
        if c["result"] is not None:
            lines.append(f"    → {c['result']}")
    if len(changes) > SHOWN_CHANGES:
        lines.append(f"  … and {len(changes) - SHOWN_CHANGES} more changes (--json lists them all)")
    return lines


def register(app: typer.Typer) -> None:
    app.command()(maintain)
