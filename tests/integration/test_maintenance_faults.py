"""Faults around maintenance: a run killed (SIGKILL) in the middle of a long-term compression
leaves the old file or the new one, never a torn one, a backup, and an index that agrees with
the file after the next open; one run per namespace at a time, across processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memfold import Memory
from memfold.models import FILE_MEMORY
from memfold.text import memory_markdown as md
from memfold.workspace.editsafe import split_marker

from .test_maintenance_compress import compressed_file, seed_long_memory

REPO = Path(__file__).resolve().parents[2]
CHILD = textwrap.dedent("""
    import os, signal, sys
    from memfold import Memory
    from memfold.config import load_settings
    from memfold.engine.storage.store import UserStore
    from memfold.providers.embedder import UseEmbedder

    root, base_url, where = sys.argv[1], sys.argv[2], sys.argv[3]

    def die(*a, **k):
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "after_write":  # the new file is in place, the index not yet touched
        write = UserStore.write_file
        def write_then_die(self, *a, **k):
            write(self, *a, **k)
            die()
        UserStore.write_file = write_then_die
    elif where == "mid_index":  # the old rows archived, the new ones not yet indexed
        UserStore.reconcile_file = die
    cfg = dict(provider="openai", base_url=base_url, model="scripted", timeout=5.0, max_retries=0)
    mem = Memory(settings=load_settings(root, llm=cfg), embedder=UseEmbedder(),
                 policy={"long_term_compress_char_threshold": 300})
    if where == "asking":  # killed while the model answers
        mem.writer.llm.chat.complete = die
    print(mem.maintain("alice", jobs=["compress_long_term"]).to_dict())
""")


@pytest.mark.parametrize("where", ["asking", "after_write", "mid_index"])
def test_a_killed_compression_leaves_a_whole_file_a_backup_and_an_index_that_agrees(
        root: Path, llm_server, embedder, where: str):
    seed_long_memory(root, embedder)
    path = root / "alice" / FILE_MEMORY
    old = split_marker(path.read_text(encoding="utf-8"))[0]
    llm_server.script(json.dumps({"memory_md": compressed_file(old, "- 2026-11-25: Anna's flight lands at 14:30 on "
                                                                    "2026-12-03 at gate B12")}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    p = subprocess.run([sys.executable, "-c", CHILD, str(root), llm_server.base_url, where], capture_output=True,
                       text=True, env=env, cwd=REPO, timeout=300)
    assert p.returncode == -signal.SIGKILL, p.stderr[-2000:]
    now = split_marker(path.read_text(encoding="utf-8"))[0]
    if where == "asking":
        assert now == old  # nothing was written
    else:
        assert "Harbor project meetings 0-5" in now and "Old note" not in now  # the whole new file
        (backup,) = Memory(root=root, embedder=embedder)._store("alice").space.backups()
        assert split_marker(backup.read_text(encoding="utf-8"))[0] == old
    with Memory(root=root, embedder=embedder) as m:  # the next open brings the index in line with the file
        in_file = sorted(e.content for e in md.parse(m.show("alice")))
        assert sorted(r.content for r in m.get_all("alice")) == in_file
        assert m.maintain("alice", jobs=["compress_long_term"]).results[0].status in ("not_due", "failed", "done")


HOLDER = textwrap.dedent("""
    import sys, time
    from memfold import Memory
    from memfold.index.leases import new_holder
    from tests.support.hash_embedder import HashEmbedder

    mem = Memory(root=sys.argv[1], embedder=HashEmbedder())
    assert mem.index.try_lease("alice", "maintenance", new_holder(), 3600)
    print("held", flush=True)
    time.sleep(600)
""")


def test_one_maintenance_run_per_namespace_across_processes(root: Path):
    from ..support.hash_embedder import HashEmbedder

    with Memory(root=root, embedder=HashEmbedder()) as m:
        m.add("[x] Return the library books", "alice", memory_type="todo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True, env=env,
                              cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with Memory(root=root, embedder=HashEmbedder()) as m:
            (res,) = m.maintain("alice").results
            assert res.status == "busy" and "another maintenance run" in res.reason
            assert "Return the library books" in m.show("alice")  # nothing was done
            assert m.maintain("alice", dry_run=True).results[0].status == "planned"  # a dry run needs no lease
            holder.send_signal(signal.SIGKILL)  # the holder dies: its lease is free at once on this machine
            holder.wait(timeout=60)
            statuses = {r.job: r.status for r in m.maintain("alice").results}
            assert statuses["tidy"] == "done" and "Return the library books" not in m.show("alice")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_the_background_scheduler_runs_what_is_due(root: Path):
    import threading

    from memfold.maintenance.schedule import Scheduler

    from ..support.hash_embedder import HashEmbedder

    with Memory(root=root, embedder=HashEmbedder()) as m:
        m.add("[x] Water the ferns on the balcony", "alice", memory_type="todo")
        done = threading.Event()
        runs = []
        sched = Scheduler(m, interval=3600, on_run=lambda run: (runs.append(run), done.set())).start()
        assert done.wait(120)
        sched.stop()
        assert {r.job: r.status for r in runs[0].results}["tidy"] == "done"
        assert "Water the ferns" not in m.show("alice")


def test_maintenance_on_a_postgresql_index(pg_dsn: str, root: Path):
    from memfold.config import load_settings

    from ..support.hash_embedder import HashEmbedder

    settings = load_settings(root, index={"backend": "postgres", "dsn": pg_dsn})
    with Memory(settings=settings, embedder=HashEmbedder()) as m:
        done = m.add("[x] Book the ferry to Hvar", "alice", memory_type="todo").added[0]
        m.add("Pack the snorkel for the trip", "alice", memory_type="todo")
        assert m.index.try_lease("alice", "maintenance", "elsewhere:1:x", 3600)  # another run holds it
        assert m.maintain("alice").results[0].status == "busy"
        m.index.release_lease("alice", "maintenance", "elsewhere:1:x")
        statuses = {r.job: r.status for r in m.maintain("alice").results}
        assert statuses["tidy"] == "done"
        assert not m.get(done.id, "alice").is_active and "Book the ferry" not in m.show("alice")
        hits = m.search("ferry to Hvar", "alice", include_archived=True)
        assert done.id in [h.record.id for h in hits]


def test_a_registered_job_runs_with_the_others_and_its_failure_stops_none(root: Path):
    from memfold import maintenance
    from memfold.maintenance.base import DONE, JobFailed
    from memfold.maintenance.runner import _JOBS

    from ..support.hash_embedder import HashEmbedder

    class Flaky:
        name = "flaky_test_job"
        calls = 0

        def run(self, ctx):  # type: ignore[no-untyped-def]
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise JobFailed("not this time")
            return ctx.result(self.name, DONE, "fine now")

    saved = list(_JOBS)
    maintenance.register(Flaky())
    try:
        assert "flaky_test_job" in maintenance.job_names()
        with Memory(root=root, embedder=HashEmbedder()) as m:
            m.add("[x] Fix the porch light", "alice", memory_type="todo")
            first = {r.job: (r.status, r.reason) for r in m.maintain("alice").results}
            assert first["flaky_test_job"] == ("failed", "not this time") and first["tidy"][0] == "done"
            state = m.index.get_state("alice", "maintenance", "flaky_test_job")
            assert state and state["last_status"] == "failed" and "last_success" not in state
            second = {r.job: r.status for r in m.maintain("alice").results}
            assert second["flaky_test_job"] == "done"  # retried at the next run
            assert m.index.get_state("alice", "maintenance", "flaky_test_job")["last_success"]
    finally:
        _JOBS[:] = saved
