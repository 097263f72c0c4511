"""``benchmarks/multiproc.py`` end to end, small: two processes adding to and searching a shared and
their own namespace lose no acknowledged write, on SQLite and on PostgreSQL (no timed assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "multiproc.py"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_processes_lose_no_write(backend: str, request: pytest.FixtureRequest) -> None:
    args = [sys.executable, str(SCRIPT), "--backend", backend, "--procs", "2", "--seconds", "2", "--json"]
    if backend == "postgres":
        args += ["--dsn", request.getfixturevalue("pg_server").dsn]
    res = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    (run,) = json.loads(res.stdout)
    assert run["backend"] == backend and run["procs"] == 2
    assert run["adds"] > 0 and run["searches"] > 0 and run["errors"] == []
    assert run["lost_writes"] == 0, run["lost"]
