"""The layers of docs/architecture.md hold: the import-linter contracts of pyproject.toml
(``lint-imports``, run by ``make lint`` too) are kept by this tree, and each kind of contract
catches a planted import that breaks it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..support.import_contracts import private_imports

REPO = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(src: Path, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(src))
    args = [str(LINT), "--no-cache"] + (["--config", str(config)] if config else [])
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_the_contracts_of_pyproject_are_kept():
    run = _lint(REPO / "src")
    assert run.returncode == 0, run.stdout[-4000:]
    assert "0 broken" in run.stdout


@pytest.fixture()
def planted(tmp_path: Path) -> Path:
    """A small package with the shape of memfold: an adapter, a facade, maintenance, an engine in rooms."""
    files = {
        "pkg/__init__.py": "",
        "pkg/cli.py": "from .facade import Memory\n",
        "pkg/facade.py": "from .maintenance import job\nfrom .engine.write import add\nMemory = object\n",
        "pkg/maintenance/__init__.py": "",
        "pkg/maintenance/job.py": "from ..engine.storage import store\n",
        "pkg/engine/__init__.py": "",
        "pkg/engine/write/__init__.py": "",
        "pkg/engine/write/add.py": "from ..storage.store import commit\nfrom ..read import search\n",
        "pkg/engine/read/__init__.py": "",
        "pkg/engine/read/search.py": "from ..storage import store\n",
        "pkg/engine/storage/__init__.py": "",
        "pkg/engine/storage/store.py": "def commit():\n    pass\n\n\ndef _undo():\n    pass\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    (tmp_path / "contracts.toml").write_text(textwrap.dedent("""
        [tool.importlinter]
        root_package = "pkg"
        contract_types = ["no_private_imports: tests.support.import_contracts.NoPrivateImportsContract"]

        [[tool.importlinter.contracts]]
        name = "layers"
        type = "layers"
        layers = ["pkg.cli", "pkg.facade", "pkg.maintenance", "pkg.engine"]

        [[tool.importlinter.contracts]]
        name = "rooms"
        type = "layers"
        containers = ["pkg.engine"]
        layers = ["write", "read", "storage"]

        [[tool.importlinter.contracts]]
        name = "private"
        type = "no_private_imports"
        root = "pkg"
    """), encoding="utf-8")
    return tmp_path


def test_the_planted_package_keeps_its_contracts(planted: Path):
    run = _lint(planted, planted / "contracts.toml")
    assert run.returncode == 0, run.stdout[-3000:]


@pytest.mark.parametrize("file, line, broken", [
    ("pkg/engine/storage/store.py", "from ...maintenance import job\n", "pkg.engine is not allowed to import pkg.maintenance"),
    ("pkg/maintenance/job.py", "from .. import facade\n", "pkg.maintenance is not allowed to import pkg.facade"),
    ("pkg/engine/read/search.py", "from ..write import add\n", "pkg.engine.read is not allowed to import pkg.engine.write"),
    ("pkg/maintenance/job.py", "from ..engine.storage.store import _undo\n", "imports the private name _undo"),
])
def test_each_contract_catches_an_import_that_breaks_it(planted: Path, file: str, line: str, broken: str):
    with (planted / file).open("a", encoding="utf-8") as f:
        f.write(line)
    run = _lint(planted, planted / "contracts.toml")
    assert run.returncode != 0
    assert broken in " ".join(run.stdout.split()), run.stdout[-3000:]


def test_a_private_name_may_be_shared_within_its_own_folder(planted: Path, monkeypatch: pytest.MonkeyPatch):
    (planted / "pkg/engine/storage/purge.py").write_text("from .store import _undo\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(planted))
    modules = {"pkg", "pkg.engine", "pkg.engine.storage", "pkg.engine.storage.store", "pkg.engine.storage.purge",
               "pkg.maintenance", "pkg.maintenance.job"}
    assert private_imports("pkg", modules) == []
    (planted / "pkg/maintenance/job.py").write_text("from ..engine.storage.store import _undo\n", encoding="utf-8")
    found = private_imports("pkg", modules)
    assert [(p.importer, p.name) for p in found] == [("pkg.maintenance.job", "_undo")]
