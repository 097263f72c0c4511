"""Write-ahead mode (``[index] write_ahead = true``): ``add`` returns once the memory is in its file
and the index, keyword-searchable; the vector follows from the background worker; a process killed
before the vector is written loses nothing (the next open embeds it). On both index backends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memfold import Memory
from memfold.config import load_settings
from memfold.errors import ConfigError
from tests.support.hash_embedder import HashEmbedder

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import sys
from memfold import Memory
from memfold.config import load_settings
from tests.support.hash_embedder import HashEmbedder
root = sys.argv[1]
# a delay of an hour: the vector is never written before the kill
mem = Memory(settings=load_settings(root, index={"write_ahead": True, "write_ahead_delay_ms": 3_600_000}),
             embedder=HashEmbedder())
turn = mem.add([{"role": "user", "content": "the zeppelin hangar opens on thursday"}], "u", infer=False)
fact = mem.add("My lucky number is forty two, said the quokka", "u")
hits = mem.search("zeppelin hangar", "u", record_access=False)
print(turn.added[0].id, fact.added[0].id, ",".join(h.record.id for h in hits), flush=True)
sys.stdin.read()  # wait to be killed
"""


@pytest.fixture(params=["sqlite", "postgres"])
def backend_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMFOLD_INDEX__BACKEND", request.param)
    if request.param == "postgres":
        monkeypatch.setenv("MEMFOLD_INDEX__DSN", request.getfixturevalue("pg_dsn"))
    return request.param


def test_killed_before_the_vector_is_written_loses_nothing(backend_env: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line, child.stderr.read() if child.stderr else ""
        turn_id, fact_id, found = line.split()
        assert found.split(",")[0] == turn_id  # keyword-searchable before any vector exists
        # both rows are in the index without a vector, the fact is in MEMORY.md
        emb = HashEmbedder()
        settings = load_settings(root)
        from memfold.index.base import open_index

        ix = open_index(settings, emb.dim, emb.name)
        try:
            assert {r.id for r in ix.pending_vectors(10)} == {turn_id, fact_id}
        finally:
            ix.close()
        assert "forty two" in (root / "u" / "MEMORY.md").read_text(encoding="utf-8")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    # the next open (write-ahead off) embeds what the killed process left
    with Memory(settings=load_settings(root), embedder=HashEmbedder()) as mem:
        assert mem.vector_worker is not None and mem.vector_worker.flush(timeout=60)
        assert mem.index.pending_vectors(10) == []
        q = HashEmbedder().embed(["lucky number forty two quokka"])[0]
        assert mem.index.vector_search("u", q, 1)[0][0] == fact_id
        assert [e.action for e in mem.history(fact_id, "u")] == ["add"]
        assert mem.search("zeppelin hangar", "u", limit=1)[0].vector_score > 0
    with Memory(settings=load_settings(root), embedder=HashEmbedder()) as mem:
        assert mem.vector_worker is None  # nothing left to embed: no worker


def test_vectors_follow_within_the_worker_round(backend_env: str, tmp_path: Path) -> None:
    settings = load_settings(tmp_path, index={"write_ahead": True, "write_ahead_delay_ms": 5})
    emb = HashEmbedder()
    with Memory(settings=settings, embedder=emb) as mem:
        assert mem.vector_worker is not None
        ids = [mem.add(f"pelican number {i} likes sardines", "u").added[0].id for i in range(5)]
        assert mem.vector_worker.flush(timeout=60)
        assert mem.index.pending_vectors(10) == []
        got = mem.index.vector_search("u", emb.embed(["pelican number 3 likes sardines"])[0], 1)
        assert got[0][0] == ids[3] and got[0][1] == pytest.approx(1.0, abs=1e-5)
        ids.append(mem.add("a last heron before closing", "u").added[0].id)
    # close embedded what was still waiting
    with Memory(settings=load_settings(tmp_path), embedder=emb) as mem:
        assert mem.vector_worker is None
        vec = emb.embed(["a last heron before closing"])[0]
        assert mem.index.vector_search("u", vec, 1)[0][0] == ids[-1]
        assert np.isclose(mem.index.vector_search("u", vec, 1)[0][1], 1.0, atol=1e-5)


def test_write_ahead_settings_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_INDEX__WRITE_AHEAD", "maybe")
    with pytest.raises(ConfigError, match="write_ahead"):
        load_settings(tmp_path)
    monkeypatch.setenv("MEMFOLD_INDEX__WRITE_AHEAD", "yes")
    with pytest.raises(ConfigError, match=r"write_ahead_delay_ms must be 0 or more, got -1"):
        Memory(settings=load_settings(tmp_path, index={"write_ahead_delay_ms": -1}), embedder=HashEmbedder())


def test_a_row_waiting_for_its_vector_waits_in_a_migrated_copy(tmp_path: Path, pg_dsn: str) -> None:
    from memfold.facade import admin

    emb = HashEmbedder()
    root = tmp_path / "ws"
    mem = Memory(settings=load_settings(root, index={"write_ahead": True, "write_ahead_delay_ms": 3_600_000}),
                 embedder=emb)
    waiting = mem.add("the zeppelin hangar opens on thursday", "u").added[0].id
    assert [r.id for r in mem.index.pending_vectors(10)] == [waiting]
    assert mem.vector_worker is not None
    mem.vector_worker.close(drain=False)  # as a killed process leaves it: the worker never ran
    mem.close()  # its worker stopped first: the row stays without a vector
    admin.migrate(load_settings(root), "postgres", pg_dsn)
    pg = load_settings(root, index={"backend": "postgres", "dsn": pg_dsn})
    with Memory(settings=pg, embedder=emb) as copy:
        assert copy.vector_worker is not None and copy.vector_worker.flush(timeout=60)
        vec = emb.embed(["the zeppelin hangar opens on thursday"])[0]
        assert copy.index.vector_search("u", vec, 1)[0][0] == waiting
