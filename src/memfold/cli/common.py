"""What every command module shares: the consoles, the options declared once, and the
``Runtime`` that the root callback puts in typer's context object (the ``--root`` workspace and
the ``Memory`` opened from it on first use)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console

from ..errors import NoWorkspaceError

if TYPE_CHECKING:
    from ..config import Settings
    from ..facade.memory import Memory

out = Console(soft_wrap=True, markup=False)  # memory text like "[x]" is shown as written
err = Console(stderr=True, soft_wrap=True, markup=False)

User = Annotated[str, typer.Option("--user", "-u", help="Namespace (user id): letters and digits of any script "
                                                        "(小明, José), '_', '.', '@', '-'.")]
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

    def memory(self, *, announce: bool = True, **kw: Any) -> "Memory":
        """The workspace's ``Memory`` for a command that writes: a workspace that does not exist yet
        is created, and where is said on standard error (``announce``)."""
        if self._memory is None:
            from ..config import resolve_root
            from ..facade.memory import Memory
            from ..workspace.userspace import Workspace

            fresh = not Workspace(resolve_root(self.root)).exists
            kw.setdefault("background", False)  # a one-shot command; mcp and chat start it (start_maintenance)
            self._memory = Memory(root=self.root, **kw)
            if fresh and announce:
                err.print(f"created a new memfold workspace in {self._memory.settings.root}",
                          markup=False, highlight=False)
        return self._memory

    def existing(self, **kw: Any) -> "Memory":
        """The workspace's ``Memory`` for a command that reads (or changes what is stored): where there
        is no workspace, an error that says where it looked and how to point at one; nothing is created."""
        if self._memory is None:
            self.require_workspace()
        return self.memory(**kw)

    def require_workspace(self) -> None:
        """``NoWorkspaceError`` where there is no workspace (see ``existing``)."""
        from ..config import resolve_root
        from ..workspace.userspace import Workspace

        root = resolve_root(self.root)
        if not Workspace(root).exists:
            raise NoWorkspaceError(no_workspace_message(root, self.root))

    def settings(self) -> "Settings":
        from ..config import load_settings

        return load_settings(self.root)


def no_workspace_message(root: Path, given: Optional[str]) -> str:
    """What a read command says where there is no workspace: where it looked, why there, and the
    three ways to point at one."""
    env = os.environ.get("MEMFOLD_HOME")
    why = ("given by --root" if given else f"from MEMFOLD_HOME={env}" if env
           else "the default: .memfold in the current folder")
    return (f"no memfold workspace at {root} ({why}). Point at yours with --root PATH (or the environment "
            f"variable MEMFOLD_HOME=PATH), or create one with 'memfold{' --root ' + shell_word(given) if given else ''} init'.")


def shell_word(text: str) -> str:
    """``text`` as one word of a command line: as it is when nothing in it needs quoting (letters of
    any script, digits, ``/ . _ - @ : , + = %``), else quoted."""
    return text if re.fullmatch(r"[\w/.@:,+=%-]+", text) else shlex.quote(text)


def runtime(ctx: typer.Context) -> Runtime:
    """The run's ``Runtime`` (set by the root callback; a bare one when a command runs on its own)."""
    if not isinstance(ctx.obj, Runtime):
        ctx.obj = Runtime()
    return ctx.obj


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
