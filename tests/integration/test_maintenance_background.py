"""Maintenance in the background of a long-lived process: a library ``Memory`` kept open compresses
a namespace that is due without any call of the caller running the job, ``[maintenance]
background = false`` (the off switch) and ``interval_minutes = 0`` start nothing, a one-shot CLI
command starts no thread, and ``close()`` stops the thread."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memfold import Memory
from memfold.cli.common import Runtime
from memfold.config import load_settings
from memfold.engine.storage.records import new_id
from memfold.models import MemoryRecord, MemoryType

NOW = datetime.now(timezone.utc).replace(microsecond=0)
OLD = ["The user drinks coffee: an espresso every morning before work",
       "The user drinks coffee: a latte after lunch on weekdays",
       "The user drinks coffee: a decaf in the evening when reading",
       "The user drinks coffee: a cold brew on hot summer days"]


def seed_old(root: Path, embedder: Any, user: str = "dora") -> list[str]:
    at = NOW - timedelta(days=200)
    rows = [MemoryRecord(id=new_id(), user_id=user, memory_type=MemoryType.FACT, content=t, created_at=at,
                         updated_at=at).to_dict() for t in OLD]
    with Memory(root=root, embedder=embedder, background=False) as m:
        m.import_records(rows)
    return [r["id"] for r in rows]


def wait_for(check: Any, seconds: float = 60.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_a_memory_kept_open_compresses_a_due_namespace_by_itself(root: Path, embedder) -> None:
    ids = seed_old(root, embedder)
    settings = load_settings(root, maintenance={"first_run_seconds": 0.2, "pause_seconds": 0})
    with Memory(settings=settings, embedder=embedder) as m:
        sched = m._scheduler
        assert sched is not None and sched.running
        # no call of ours runs a job: the background thread does
        assert wait_for(lambda: m._scheduler.runs >= 1), "no background run happened"
        archived = [m.get(i, "dora") for i in ids]
        assert all(not r.is_active and r.superseded_by for r in archived), [r.to_dict() for r in archived]
        text = m.show("dora")
        assert "espresso" in text and text.count("The user drinks coffee") < len(OLD)
        state = m.index.get_state("dora", "maintenance", "compress_old_memories")
        assert state and state["last_status"] == "done"
    assert not sched.running  # close() stopped it


def test_the_off_switch_and_a_zero_interval_start_nothing(root: Path, embedder) -> None:
    ids = seed_old(root, embedder)
    for block in ({"background": False, "first_run_seconds": 0}, {"interval_minutes": 0, "first_run_seconds": 0}):
        settings = load_settings(root, maintenance=block)
        with Memory(settings=settings, embedder=embedder) as m:
            assert m._scheduler is None and not m.start_maintenance()
            time.sleep(0.5)
            assert all(m.get(i, "dora").is_active for i in ids)
    # the off switch also holds for the HTTP server's scheduler
    from fastapi import FastAPI

    from memfold.server.background import maintenance_task

    settings = load_settings(root, maintenance={"background": False}, server={"maintenance_interval_minutes": 0.001})
    with Memory(settings=settings, embedder=embedder, background=False) as m:
        app = FastAPI()
        maintenance_task(app, m)()
        assert not hasattr(app.state, "maintenance")


def test_a_one_shot_cli_command_starts_no_thread(root: Path, embedder, monkeypatch) -> None:
    monkeypatch.setenv("MEMFOLD_MAINTENANCE__FIRST_RUN_SECONDS", "0")
    rt = Runtime(str(root))
    m = rt.memory()
    try:
        m.add("I like green tea", "dora")
        assert m._scheduler is None
    finally:
        m.close()


def test_a_background_job_stops_at_its_time_budget_and_close_does_not_wait(root: Path, embedder) -> None:
    """A job past ``job_seconds`` stops between two groups; what is left waits for the next run."""
    seed_old(root, embedder)
    from memfold.maintenance.runner import Bounds, run_due

    with Memory(root=root, embedder=embedder, background=False) as m:
        stop = threading.Event()
        stop.set()  # a closing process: nothing is started
        run = run_due(m, bounds=Bounds(stop=stop))
        assert run.results == []
        run = run_due(m, "dora", jobs=["compress_old_memories"], bounds=Bounds(job_seconds=1e-9))
        (res,) = run.results
        assert res.status == "not_due" and "time budget" in res.reason, res.summary()
        run = run_due(m, "dora", jobs=["compress_old_memories"], bounds=Bounds(job_seconds=60))
        assert run.results[0].status == "done", run.results[0].summary()


def test_a_scheduler_another_part_started_ends_when_its_memory_is_closed(root: Path, caplog: Any):
    """A scheduler that ``Memory`` did not start (a server's) is not stopped by ``close()``: it must
    notice the memory is closed and end, instead of failing a run on a closed index every time."""
    import logging

    from memfold.maintenance.schedule import Scheduler

    from ..support.hash_embedder import HashEmbedder

    runs: list[Any] = []
    m = Memory(root=root, embedder=HashEmbedder(), background=False)
    m.add("I water the ferns on Sundays", "alice")
    sched = Scheduler(m, interval=0.05, on_run=runs.append).start()
    assert wait_for(lambda: len(runs) >= 1)
    with caplog.at_level(logging.ERROR, logger="memfold"):
        m.close()
        assert m.closed
        assert wait_for(lambda: not sched.running, 10.0)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    sched.stop()
