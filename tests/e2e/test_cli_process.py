"""The ``memfold`` command as the shell starts it: the installed entry point and ``python -m memfold``
in new processes, their exit codes and standard input (``python -m memfold`` alone: tests/e2e/test_docs.py).
The other command line tests run the same ``main()`` in the test process (tests/support/cli.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ..support.cli import run_cli_process

ENTRY_POINT = Path(sys.executable).with_name("memfold")


@pytest.mark.skipif(not ENTRY_POINT.exists(), reason=f"no installed entry point next to {sys.executable}")
def test_the_installed_command_runs_the_demo(root: Path):
    r = run_cli_process(["--root", str(root), "demo"], command=[str(ENTRY_POINT)])
    assert r.returncode == 0, r.stderr
    assert "无糖拿铁" in r.stdout and "refused" in r.stdout and "MEMORY.md" in r.stdout


def test_add_from_stdin_then_search(root: Path):
    r = run_cli_process(["--root", str(root), "add", "-", "--json", "--user", "ann"],
                        input="My sister Anna lives in Lisbon\n")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added"][0]["content"] == "My sister Anna lives in Lisbon"
    r = run_cli_process(["--root", str(root), "search", "where does my sister live", "--user", "ann", "--json"])
    assert r.returncode == 0, r.stderr
    assert "Lisbon" in json.loads(r.stdout)[0]["content"]


def test_exit_codes_as_the_shell_sees_them(root: Path):
    r = run_cli_process(["--root", str(root), "get", "nope"])  # no workspace: one line, exit 1
    assert r.returncode == 1 and r.stderr.startswith("error: no memfold workspace") and r.stderr.count("\n") == 1
    r = run_cli_process(["--root", str(root), "nosuch"])  # a usage error: exit 2, no traceback
    assert r.returncode == 2 and "No such command 'nosuch'" in r.stderr and "Traceback" not in r.stderr
    r = run_cli_process(["--version"])
    assert r.returncode == 0 and r.stdout.startswith("memfold ")

