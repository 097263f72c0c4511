"""Issue 10 §6: errors at the edges — a read-only workspace, a full disk, paths the CLI cannot use,
and searches that must not wait behind a writer."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfold import Memory
from memfold.errors import MemfoldError, MemoryIndexError

from ..conftest import run_cli

NOBODY = 65534


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its (mtime_ns, size): what a read-only run must leave as it was."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mtime_ns, st.st_size)
    return out


def _run_unprivileged(root: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI as a user who may not write ``root`` (root ignores permission bits, so as root the
    command runs as ``nobody`` through setpriv; otherwise as ourselves)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    cmd = [sys.executable, "-m", "memfold", "--root", str(root), *args]
    if os.geteuid() == 0:
        env["HOME"] = "/nonexistent"
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder outside pytest's private tmp (mode 0700) that an unprivileged user can enter."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no way to run as a user who may not write")
    d = Path(tempfile.mkdtemp(prefix="memfold-ro-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _read_only_workspace(base: Path, embedder) -> tuple[Path, str]:
    root = base / "ws"
    with Memory(root=root, embedder=embedder) as m:
        rid = m.add("I like green tea", "alice").added[0].id
        m.add("My dog is called Bob", "alice")
    for p in [root, *root.rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    return root, rid


def test_read_only_workspace_reads_work_and_create_nothing(shared_dir: Path, embedder):
    root, rid = _read_only_workspace(shared_dir, embedder)
    before = _tree(root)
    try:
        for args, expect in ((("search", "green tea", "-u", "alice"), "I like green tea"),
                             (("list", "-u", "alice"), "My dog is called Bob"),
                             (("get", rid, "-u", "alice"), "I like green tea"),
                             (("show", "-u", "alice"), "I like green tea"),
                             (("export", "--user", "alice"), rid),
                             (("history", rid, "-u", "alice"), "I like green tea")):
            res = _run_unprivileged(root, *args)
            assert res.returncode == 0, (args, res.stderr)
            assert expect in res.stdout, args
            assert "Traceback" not in res.stderr
        assert _tree(root) == before  # no lock file, no WAL files, no access statistics written
        res = _run_unprivileged(root, "add", "I like black coffee", "-u", "alice")
        assert res.returncode == 1
        assert res.stderr.startswith("error: ") and "read-only" in res.stderr and "Traceback" not in res.stderr
        assert _tree(root) == before
    finally:
        for p in [root, *root.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


# ---- a full disk --------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 3 MB file system (tmpfs) that can be filled; skipped where mounting is not allowed."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """A ballast file taking all but ``leave`` bytes of the disk."""
    st = os.statvfs(disk)
    ballast = disk / "ballast"
    with open(ballast, "wb") as fh:
        fh.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
    return ballast


@pytest.mark.parametrize("how", ["add", "add_note"])
def test_full_disk_gives_a_clear_error_and_a_retry_stores_once(small_disk: Path, embedder, how: str):
    root = small_disk / "ws"
    text = "the heron flew over the lake at dawn"
    with Memory(root=root, embedder=embedder) as m:
        m.add("I like green tea", "alice")
        store = getattr(m, how)
        ballast = _fill(small_disk, 12_000)
        with pytest.raises(MemoryIndexError) as failed:
            store(text, "alice")
        msg = str(failed.value)
        assert "disk is full" in msg and "delete" not in msg.lower()
        ballast.unlink()
        store(text, "alice")  # the retry, once there is room again
        rows = [r for r in m.get_all("alice") if r.content == text]
        assert len(rows) == 1
    files = "".join(p.read_text(encoding="utf-8") for p in (root / "alice").rglob("*.md") if "backups" not in p.parts)
    assert files.count(text) == 1
    with Memory(root=root, embedder=embedder) as m:  # a new process sees the same: nothing to repair
        assert len([r for r in m.get_all("alice") if r.content == text]) == 1


def test_search_works_on_a_full_disk(small_disk: Path, embedder, caplog):
    """A search only reads: its access statistics are skipped (with a warning) when the disk is full,
    and written again once there is room."""
    root = small_disk / "ws"
    with Memory(root=root, embedder=embedder) as m:
        tea = m.add("I like green tea", "alice").added[0].id
        m.add("My dog is called Bob", "alice")
        ballast = _fill(small_disk, 0)
        with caplog.at_level("WARNING", logger="memfold.search"):
            hits = m.search("green tea", "alice")
            assert hits and hits[0].record.id == tea
            assert [h.record.id for h in m.search("green tea", "alice")][0] == tea
        assert "access statistics not written" in caplog.text and "disk is full" in caplog.text
        assert m.get(tea, "alice").access_count == 0
        ballast.unlink()
        m.search("green tea", "alice")
        assert m.get(tea, "alice").access_count == 1


def test_unreadable_index_error_never_advises_deleting_it(root: Path, embedder):
    root.mkdir(parents=True)
    (root / "index.db").write_bytes(b"this is not a database, but it may hold the only copy of a user's turns" * 50)
    with pytest.raises(MemoryIndexError) as failed:
        Memory(root=root, embedder=embedder)
    assert "delete" not in str(failed.value).lower()
    assert (root / "index.db").exists()


# ---- the CLI: one line, exit 1 ------------------------------------------------------------------
def _one_line_error(res: subprocess.CompletedProcess, *words: str) -> None:
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_cli_ingest_and_import_of_a_folder(root: Path, tmp_path: Path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    _one_line_error(run_cli(root, "ingest", str(folder)), str(folder), "folder")
    _one_line_error(run_cli(root, "import", str(folder)), str(folder), "folder")


def test_cli_export_into_a_missing_folder(root: Path, tmp_path: Path):
    assert run_cli(root, "add", "I like tea", "-u", "alice").returncode == 0
    target = tmp_path / "missing" / "dir" / "x.jsonl"
    _one_line_error(run_cli(root, "export", str(target)), str(target), "does not exist")


def test_cli_unreadable_file(shared_dir: Path, embedder):
    root = shared_dir / "ws"
    with Memory(root=root, embedder=embedder) as m:
        m.add("I like green tea", "alice")
    if os.geteuid() == 0:  # the workspace is nobody's, one file in it is root's alone
        for p in [root, *root.rglob("*")]:
            os.chown(p, NOBODY, NOBODY)
        os.chown(root / "alice" / "MEMORY.md", 0, 0)
    (root / "alice" / "MEMORY.md").chmod(0o000 if os.geteuid() != 0 else 0o600)
    conv = shared_dir / "conversation.json"
    conv.write_text('[{"role": "user", "content": "I like tea"}]', encoding="utf-8")
    conv.chmod(0o000 if os.geteuid() != 0 else 0o600)
    try:
        _one_line_error(_run_unprivileged(root, "show", "-u", "alice"), "MEMORY.md", "permission denied")
        # the command line's own check of a FILE argument: a usage error (exit 2), no traceback either
        for cmd in ("ingest", "import"):
            res = _run_unprivileged(root, cmd, str(conv))
            assert res.returncode in (1, 2) and "Traceback" not in res.stderr, res.stderr
            assert "not readable" in res.stderr or "permission denied" in res.stderr
    finally:
        (root / "alice" / "MEMORY.md").chmod(0o644)
        conv.chmod(0o644)


def test_cli_backups_being_a_file(root: Path):
    res = run_cli(root, "add", "I like tea", "-u", "alice", "--json")
    assert res.returncode == 0
    import json

    rid = json.loads(res.stdout)["added"][0]["id"]
    (root / "alice" / "backups").write_text("not a folder", encoding="utf-8")
    before = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    _one_line_error(run_cli(root, "update", rid, "--content", "I like green tea", "-u", "alice"), "backups")
    _one_line_error(run_cli(root, "delete", rid, "-u", "alice"), "backups")
    assert (root / "alice" / "MEMORY.md").read_text(encoding="utf-8") == before


# ---- searches do not wait behind writers ---------------------------------------------------------
def test_search_completes_while_a_writer_holds_the_namespace_lock(mem: Memory, root: Path):
    mem.add("I like green tea", "alice")
    held, release, done = threading.Event(), threading.Event(), threading.Event()
    found: list[str] = []
    lock = mem._store("alice").space.lock

    def writer() -> None:  # a writer mid-add: lock held, its line written, the index not yet told
        with lock:
            path = root / "alice" / "MEMORY.md"
            path.write_text(path.read_text(encoding="utf-8") + "- 2026-11-01: I keep bees\n", encoding="utf-8")
            held.set()
            release.wait(120)

    def search() -> None:
        found.extend(h.record.content for h in mem.search("green tea", "alice", record_access=False))
        found.extend(r.content for r in mem.get_all("alice"))
        done.set()

    w = threading.Thread(target=writer)
    w.start()
    try:
        assert held.wait(60)
        s = threading.Thread(target=search)
        s.start()
        assert done.wait(60), "search waited for the writer's lock"
        assert "I like green tea" in found
    finally:
        release.set()
        w.join()
    s.join()
    # once the writer is done, the next read brings the index in line with the file
    assert "I keep bees" in [r.content for r in mem.get_all("alice")]


def test_sqlite_errors_inside_a_write_are_memfold_errors(mem: Memory, root: Path):
    mem.add("I like green tea", "alice")
    blocker = sqlite3.connect(root / "index.db", timeout=0)
    blocker.execute("PRAGMA busy_timeout=0")
    mem.index.inner._db.execute("PRAGMA busy_timeout=0")
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(MemfoldError, match="database is locked"):
            mem.add("My dog is called Bob", "alice")
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert "My dog is called Bob" not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
