"""The documentation as a user reads it: the README stays short, every example runs as written,
every command's help has examples, and nothing a user reads cites the project's internal history.

Examples are marked in the Markdown: ``<!-- test -->`` before a ```python or ```bash block runs it
(the blocks of one page in order, in one temporary folder, ``memfold`` on the PATH);
``<!-- test: server -->`` also stops what the block started in the background; ``<!-- not run:
REASON -->`` says why a block is not run (it installs packages, needs a key, data or a service).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from memfold.cli.help_examples import EXAMPLES
from memfold.cli.main import app

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = sorted((REPO / "docs").rglob("*.md"))
BLOCK = re.compile(r"(?:<!-- (test(?::\s*(\w+))?|not run:[^>]*) -->\n)?^```(python|bash)\n(.*?)^```", re.S | re.M)
# what a reader must not meet: design-document sections, issue numbers, work sessions
INTERNAL = re.compile(r"\bseed[ -]?0\d\d\b|\bseeds? \d{3}\b|\bSPEC\b|§|\bissue \d+|\bsession \d+\b|\bpicoclaw\b", re.I)
# what the examples must print (a page's examples could exit 0 and still show nothing useful)
EXPECT = {
    "README.md": ["my dog is called Bob", "乌龙茶", "Project A is due on March 15"],
    "docs/getting-started.md": ["Project A is due on April 30", "my dog is called Bob", "oat milk"],
    "docs/zh/getting-started.md": ["四月三十日", "我的猫叫咪咪", "无糖拿铁"],
    "docs/guides/http-server.md": ["乌龙茶"],
}


def _blocks(path: Path) -> list[tuple[str | None, str | None, str, str, int]]:
    text = path.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2), m.group(3), m.group(4), text.count("\n", 0, m.start()) + 1)
            for m in BLOCK.finditer(text)]


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readme_reads_in_five_minutes():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_every_example_is_run_or_says_why_not():
    unmarked = [f"{_rel(p)}:{line}" for p in [README, *PAGES] for mark, _, _, _, line in _blocks(p) if mark is None]
    assert not unmarked, ("python/bash blocks without <!-- test --> or <!-- not run: REASON --> before them: "
                          + ", ".join(unmarked))


@pytest.mark.parametrize("page", [_rel(p) for p in [README, *PAGES]
                                  if any((m or "").startswith("test") for m, *_ in _blocks(p))])
def test_the_examples_of_a_page_run(page: str, tmp_path: Path, warm_python):
    # each block and each memfold command runs in a process of its own, forked from one that has
    # memfold imported and the model loaded (tests/support/warm_python.py)
    python = str(warm_python.command)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "memfold").write_text(f'#!/bin/sh\nexec "{python}" -m memfold "$@"\n')
    (shims / "memfold").chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFOLD_", "OPENAI_"))}
    src = str(REPO / "src")
    env.update(PATH=f"{shims}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""))
    printed = []
    for mark, kind, lang, code, line in _blocks(REPO / page):
        if not (mark or "").startswith("test"):
            continue
        if kind == "server":
            code = code.replace("8765", str(_free_port()))
        if lang == "python":
            cmd = [python, "-c", code]
        else:
            cmd = ["bash", "-c", "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + code]
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            out, errs = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, errs = proc.communicate()
            pytest.fail(f"{page}:{line} did not finish in 300 s\n{out}\n{errs}")
        assert proc.returncode == 0, f"{page}:{line} failed ({proc.returncode})\n{code}\n--- stdout\n{out}\n--- stderr\n{errs}"
        printed.append(out)
    for text in EXPECT.get(page, []):
        assert any(text in out for out in printed), f"{page}: the examples never print {text!r}"


def _commands() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []

    def walk(cmd, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, path + (name,))
        else:
            found.append(path)
    walk(typer.main.get_command(app), ())
    return found


@functools.cache
def _help(path: tuple[str, ...]) -> tuple[int, str]:
    """``memfold PATH --help``: its exit code and text (made once per process: two tests read them)."""
    res = CliRunner().invoke(app, [*path, "--help"], prog_name="memfold", terminal_width=200)
    return res.exit_code, res.output


@pytest.mark.xdist_group("every-help")
def test_every_command_help_has_examples_and_a_plain_usage_line():
    missing, bad_usage = [], []
    for path in _commands():
        code, output = _help(path)
        assert code == 0, (path, output)
        examples = EXAMPLES.get(" ".join(path), ())
        flat = " ".join(output.split())  # rich wraps long lines
        if "Examples:" not in output or not examples or not all(f"$ {e}" in flat for e in examples):
            missing.append(" ".join(path))
        usage = next(line for line in output.splitlines() if "Usage:" in line)
        if "{" in usage:
            bad_usage.append(usage.strip())
    assert not missing, f"commands without examples in --help (cli/help_examples.py): {missing}"
    assert not bad_usage, bad_usage


def test_every_example_in_help_parses():
    """An example names only options and arguments the command has (click parses it without running it)."""
    root = typer.main.get_command(app)
    for path, lines in EXAMPLES.items():
        for line in lines:
            words = _split(line)
            assert words[0] == "memfold", line
            words = words[1:]
            if words[:1] == ["--root"]:
                words = words[2:]
            cmd = root
            ctx = root.make_context("memfold", list(words), resilient_parsing=True)
            names = path.split()
            for name in names:
                assert words and words[0] == name, (path, line)
                words = words[1:]
                cmd = cmd.commands[name]
            ctx = cmd.make_context(names[-1], list(words), parent=ctx)  # raises on an unknown option
            assert ctx.params is not None


def _split(line: str) -> list[str]:
    import shlex

    words = shlex.split(line.split("|")[-1] if line.startswith("echo") else line)
    return words[:words.index(">")] if ">" in words else words  # a redirection is the shell's


def test_memfold_alone_shows_the_common_commands():
    out = subprocess.run([sys.executable, "-m", "memfold"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    commands = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("  memfold ")]
    assert commands == ["init", "add", "search", "show", "serve"]


def _python_reference_objects() -> list[object]:
    objs = []
    for line in (REPO / "docs" / "reference" / "python.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith(":::"):
            continue
        parts = line[3:].strip().split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for p in parts[i:]:
                obj = getattr(obj, p)
            objs.append(obj)
            break
    return objs


@pytest.mark.xdist_group("every-help")
def test_nothing_a_user_reads_cites_internal_history():
    found = []
    for path in [README, *PAGES]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if INTERNAL.search(line):
                found.append(f"{_rel(path)}:{n}: {line.strip()[:120]}")
    # the reference pages generated at build time
    sys.path.insert(0, str(REPO / "docsgen"))
    try:
        import reference  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    for name, make in reference.PAGES.items():
        for line in make().splitlines():
            if INTERNAL.search(line):
                found.append(f"{name} (generated): {line.strip()[:120]}")
    # every command's help
    for path in [(), *_commands()]:
        out = _help(path)[1]
        found += [f"memfold {' '.join(path)} --help: {line.strip()}" for line in out.splitlines() if INTERNAL.search(line)]
    # docstrings rendered in the Python reference
    for obj in _python_reference_objects():
        members = [obj] + ([m for name, m in inspect.getmembers(obj) if not name.startswith("_")]
                           if inspect.isclass(obj) else [])
        for m in members:
            doc = inspect.getdoc(m) if callable(m) or isinstance(m, property) or inspect.isclass(m) else None
            if doc and INTERNAL.search(doc):
                found.append(f"docstring of {getattr(obj, '__name__', obj)}.{getattr(m, '__name__', '')}: "
                             f"{INTERNAL.search(doc).group(0)}")
    # messages: every string in the code that is not a docstring or a comment (errors, help, prompts)
    for file in sorted((REPO / "src" / "memfold").rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and INTERNAL.search(node.value):
                found.append(f"{_rel(file)}:{node.lineno}: {node.value.strip()[:120]}")
    for file in sorted((REPO / "src" / "memfold").rglob("*")):
        if file.suffix in {".txt", ".html", ".js", ".css", ".json"} and INTERNAL.search(file.read_text(errors="ignore")):
            found.append(f"{_rel(file)}: {INTERNAL.search(file.read_text(errors='ignore')).group(0)}")
    assert not found, "internal references in user-facing text:\n" + "\n".join(found)
