"""What every command module shares: the consoles, the options declared once, and the
``Runtime`` that the root callback puts in typer's context object (the ``--root`` workspace and
the ``Memory`` opened from it on first use)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine.memory import Memory

out = Console(soft_wrap=True, markup=False)  # memory text like "[x]" is shown as written
err = Console(stderr=True, soft_wrap=True, markup=False)

User = Annotated[str, typer.Option("--user", "-u", help="Namespace (user id).")]
OneUser = Annotated[Optional[str], typer.Option("--user", "-u", help="Only this namespace.")]
Users = Annotated[Optional[list[str]], typer.Option("--user", "-u", help="Only this namespace (repeatable).")]
KeyUsers = Annotated[list[str], typer.Option("--user", "-u", help="Namespace the key may use (repeatable; '*' = "
                                                                  "every namespace, admin keys only).")]
Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
System = Annotated[Optional[str], typer.Option("--system", help="Base system prompt.")]
NoMemory = Annotated[bool, typer.Option("--no-memory", help="Memory off: nothing read or injected.")]


@dataclass
class Runtime:
    """The workspace of one command line run; the ``Memory`` is opened on first use."""

    root: Optional[str] = None
    _memory: Optional["Memory"] = field(default=None, repr=False)

    def memory(self, **kw: Any) -> "Memory":
        if self._memory is None:
            from ..engine.memory import Memory

            self._memory = Memory(root=self.root, **kw)
        return self._memory

    def settings(self) -> "Settings":
        from ..config import load_settings

        return load_settings(self.root)


def runtime(ctx: typer.Context) -> Runtime:
    """The run's ``Runtime`` (set by the root callback; a bare one when a command runs on its own)."""
    if not isinstance(ctx.obj, Runtime):
        ctx.obj = Runtime()
    return ctx.obj


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
