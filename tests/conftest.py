"""Shared fixtures: a workspace in tmp_path with the real bundled embedder, a scripted LLM server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memfold import Memory
from memfold.providers.embedder import UseEmbedder

from .support.openai_server import ScriptedOpenAIServer
from .support.postgres import pg_dsn, pg_server  # noqa: F401  (PostgreSQL fixtures for every suite)
from .support.redis_server import redis_server  # noqa: F401  (a real redis-server on a loopback port)

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


@pytest.fixture
def llm_server():
    srv = ScriptedOpenAIServer().start()
    yield srv
    srv.stop()


def run_cli(root: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real ``memfold`` command in a subprocess."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "memfold", "--root", str(root), *args],
                          capture_output=True, text=True, input=input, env=full_env, timeout=timeout)
