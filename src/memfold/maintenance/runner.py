"""Running what is due: ``run_due(memory, user_id=None, *, dry_run, jobs, force)``.

For each namespace (one, or every one the workspace and the index know) the runner takes the
namespace's ``maintenance`` lease in the index (one run per namespace at a time, across
processes and machines), runs the jobs in order — tidy, old-memory compression, long-term
compression — and records each job's outcome in the index's state store (kind ``maintenance``,
key = the job's name). Only a successful run counts as the last run, so a failed job is tried
again next time. A job's failure never stops the others. ``register(job)`` adds a job (policy
evolution, for instance) that every later run includes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.storage.changes import ChangedMeanwhile
from ..errors import MemfoldError
from ..index.leases import new_holder
from ..metrics import observe_job
from ..models import utcnow
from .base import BUSY, DONE, FAILED, NOTHING, STATE_KIND, Host, Job, JobContext, JobFailed, JobResult, MaintenanceRun
from .longterm import LongTermCompression
from .old_memories import OldMemoryCompression
from .tidy import Tidy

log = logging.getLogger("memfold")
LEASE = "maintenance"
LEASE_TTL = 1800.0  # seconds; a holder on another machine that died frees the lease after this

_JOBS: list[Job] = [Tidy(), OldMemoryCompression(), LongTermCompression()]


def register(job: Job) -> None:
    """Add a job to every later run (a job of the same name is replaced)."""
    _JOBS[:] = [j for j in _JOBS if j.name != job.name] + [job]


def jobs() -> list[Job]:
    return list(_JOBS)


def job_names() -> list[str]:
    return [j.name for j in _JOBS]


@dataclass(frozen=True)
class Bounds:
    """How a background run keeps to a small share of the machine: ``pause`` seconds between two
    namespaces, ``job_seconds`` per job (a job stops between two steps past it), and ``stop`` (a
    closing process) ends the run before the next namespace or step."""

    pause: float = 0.0
    job_seconds: float | None = None
    stop: threading.Event | None = None

    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()


def run_due(memory: Host, user_id: str | None = None, *, dry_run: bool = False, jobs: Sequence[str] | None = None,
            force: bool = False, progress: Callable[[JobResult], None] | None = None,
            bounds: Bounds | None = None) -> MaintenanceRun:
    """Run the due jobs (``jobs``: their names, default all) of one namespace or of every one;
    ``bounds``: the limits of a background run (none for ``memfold maintain``)."""
    selected = _select(jobs)
    run = MaintenanceRun(started_at=utcnow(), dry_run=dry_run)
    users = [user_id] if user_id is not None else memory.users()
    for n, user in enumerate(users):
        if bounds is not None:
            if n and bounds.pause > 0 and bounds.stop is not None:
                bounds.stop.wait(bounds.pause)
            if bounds.stopped():
                break
        for res in _run_user(memory, user, selected, dry_run=dry_run, force=force, progress=progress, bounds=bounds):
            run.results.append(res)
    run.finished_at = utcnow()
    return run


def _select(names: Sequence[str] | None) -> list[Job]:
    if names is None:
        return list(_JOBS)
    known = {j.name: j for j in _JOBS}
    unknown = [n for n in names if n not in known]
    if unknown:
        from ..errors import InvalidInputError

        raise InvalidInputError(f"unknown maintenance job {unknown[0]!r}; known jobs: {', '.join(known)}")
    return [known[n] for n in names]


def _run_user(memory: Host, user: str, selected: list[Job], *, dry_run: bool, force: bool,
              progress: Callable[[JobResult], None] | None, bounds: Bounds | None = None) -> list[JobResult]:
    store = memory.namespace_store(user)
    index = store.index
    holder = new_holder()
    try:
        free = dry_run or index.try_lease(user, LEASE, holder, LEASE_TTL)
    except MemfoldError as exc:  # a read-only workspace, an unreachable database
        free, busy = False, JobResult(job="*", user_id=user, status=FAILED, reason=f"{type(exc).__name__}: {exc}")
    else:
        busy = JobResult(job="*", user_id=user, status=BUSY,
                         reason="another maintenance run holds this namespace; try again later")
    if not free:
        if progress:
            progress(busy)
        return [busy]
    out = []
    shared: dict[str, Any] = {}
    try:
        store.sync()
        for job in selected:
            if bounds is not None and bounds.stopped():
                break
            budget = bounds.job_seconds if bounds is not None else None
            ctx = JobContext(user_id=user, store=store, policy=memory.policy(user), chat=memory.chat_model,
                             max_calls=memory.llm_calls_per_operation, now=utcnow(), dry_run=dry_run, force=force,
                             shared=shared, deadline=time.monotonic() + budget if budget else None,
                             stop=bounds.stopped if bounds is not None else None)
            res = _one(job, ctx)
            out.append(res)
            if progress:
                progress(res)
    finally:
        if not dry_run:
            index.release_lease(user, LEASE, holder)
    return out


def _one(job: Job, ctx: JobContext) -> JobResult:
    start = time.perf_counter()
    try:
        res = job.run(ctx)
    except (JobFailed, ChangedMeanwhile) as exc:  # nothing was changed: tried again next time
        res = ctx.result(job.name, FAILED, str(exc))
    except MemfoldError as exc:  # a file or index problem: reported, the other jobs still run
        res = ctx.result(job.name, FAILED, f"{type(exc).__name__}: {exc}")
    if not ctx.dry_run:
        observe_job(job.name, time.perf_counter() - start, ok=res.status != FAILED)
    if res.status == FAILED:
        log.warning("maintenance job %s of %s failed: %s", job.name, ctx.user_id, res.reason)
    if not ctx.dry_run:
        doc = ctx.store.index.get_state(ctx.user_id, STATE_KIND, job.name) or {}
        doc.update(last_attempt=ctx.now.isoformat(), last_status=res.status, last_reason=res.reason)
        if res.status in (DONE, NOTHING):
            doc["last_success"] = ctx.now.isoformat()
        ctx.store.index.put_state(ctx.user_id, STATE_KIND, job.name, doc)
    return res
