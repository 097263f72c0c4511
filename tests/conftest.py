"""Shared fixtures: a workspace in tmp_path with the real bundled embedder, a scripted LLM server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memfold import Memory
from memfold.providers.embedder import UseEmbedder

from .support.cli import CliResult
from .support.cli import run_cli as _run_cli
from .support.openai_server import ScriptedOpenAIServer
from .support.postgres import pg_dsn, pg_server  # noqa: F401  (PostgreSQL fixtures for every suite)
from .support.redis_server import redis_server  # noqa: F401  (a real redis-server on a loopback port)
from .support.warm_python import WarmPython

_EMBEDDER = UseEmbedder()  # one model per test process: loading it is the slow part


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("MEMFOLD_") and not name.startswith("MEMFOLD_TEST"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def embedder() -> UseEmbedder:
    return _EMBEDDER


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def mem(root: Path):
    m = Memory(root=root, embedder=_EMBEDDER)
    yield m
    m.close()


@pytest.fixture(scope="session")
def warm_python():
    """A ``python`` that runs each program in a new process forked from one with memfold imported
    and the model loaded (tests/support/warm_python.py), for tests that start many short programs."""
    with WarmPython() as warm:
        yield warm


@pytest.fixture
def llm_server():
    srv = ScriptedOpenAIServer().start()
    yield srv
    srv.stop()


def run_cli(root: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    """``memfold --root ROOT ARGS`` run in this process (tests/support/cli.py: ``run_cli_process`` runs it in a new one)."""
    return _run_cli(["--root", str(root), *args], input=input, env=env)
