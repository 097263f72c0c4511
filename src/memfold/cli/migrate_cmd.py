"""``memfold migrate --to postgres DSN``: copy the workspace's embedded index into PostgreSQL
(``engine.admin.migrate``). Registered on the main app by ``register(app)``."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import Users, err, out, runtime


def migrate(ctx: typer.Context, to: Annotated[str, typer.Option("--to", help="Target backend: postgres.")],
            dsn: Annotated[str, typer.Argument(help="PostgreSQL DSN, e.g. postgresql://user:pass@host:5432/db")],
            user: Users = None) -> None:
    """Copy the embedded index (index.db) into PostgreSQL: records, vectors, history, sessions; no re-embedding."""
    from ..facade.admin import migrate as copy_to

    report, where = copy_to(runtime(ctx).settings(), to, dsn, list(user) if user else None,
                            progress=lambda u, n: err.print(f"{u}: {n} memories copied"))
    out.print(f"migrated {sum(report.memories.values())} memories of {len(report.memories)} namespaces, "
              f"{report.history} history entries, {report.relations} relations, {report.states} session/pin "
              f"states and {report.files} file states to {where}")
    out.print("to use it, set in config.toml:\n[index]\nbackend = \"postgres\"\ndsn = \"<the DSN>\"\n"
              "(or MEMFOLD_INDEX__BACKEND=postgres and MEMFOLD_INDEX__DSN); index.db is left as it was",
              markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(migrate)
