"""``memfold migrate --to postgres DSN``: copy the workspace's embedded index into PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import typer

from ..config import load_settings
from ..errors import InvalidInputError


def register(app: typer.Typer, root: Callable[[], Optional[str]], out: Any, err: Any) -> None:
    @app.command()
    def migrate(to: str = typer.Option(..., "--to", help="Target backend: postgres."),
                dsn: str = typer.Argument(..., help="PostgreSQL DSN, e.g. postgresql://user:pass@host:5432/db"),
                user: Optional[list[str]] = typer.Option(None, "--user", "-u",
                                                         help="Only this namespace (repeatable).")) -> None:
        """Copy the embedded index (index.db) into PostgreSQL: records, vectors, history, sessions; no re-embedding."""
        from ..index.postgres import PostgresIndex
        from ..index.transfer import SqliteSource, copy_index

        if to != "postgres":
            raise InvalidInputError(f"--to must be 'postgres', got {to!r}")
        settings = load_settings(root())
        source = SqliteSource.open(settings.root / "index.db")
        target = PostgresIndex(dsn, dim=source.dim, embedder_name=source.embedder)
        try:
            report = copy_index(source, target, list(user) if user else None,
                                progress=lambda u, n: err.print(f"{u}: {n} memories copied"))
        finally:
            target.close()
        out.print(f"migrated {sum(report.memories.values())} memories of {len(report.memories)} namespaces, "
                  f"{report.history} history entries, {report.relations} relations, {report.states} session/pin "
                  f"states and {report.files} file states to {target.where}")
        out.print("to use it, set in config.toml:\n[index]\nbackend = \"postgres\"\ndsn = \"<the DSN>\"\n"
                  "(or MEMFOLD_INDEX__BACKEND=postgres and MEMFOLD_INDEX__DSN); index.db is left as it was",
                  markup=False, highlight=False)
