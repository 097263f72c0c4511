"""What the server has built in besides its routes: ``GET /metrics`` (Prometheus text; every
worker's values added up when ``memfold serve --workers N`` set ``PROMETHEUS_MULTIPROC_DIR``), each
worker's metrics written under the workspace root for ``memfold stats --metrics``, and
background maintenance: every worker runs the ``Scheduler`` every ``[server]
maintenance_interval_minutes`` (0 = never; ``[maintenance] background = false``: never either);
the per-namespace lease in the index keeps two workers
(or machines) from running the same namespace's jobs at once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

from ..maintenance.schedule import background_scheduler
from ..metrics import exposition
from .auth import authenticate  # its ApiError (401) is answered by the app's handler

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ..facade.memory import Memory

log = logging.getLogger("memfold.server")


def maintenance_task(app: "FastAPI", memory: "Memory") -> Callable[[], None]:
    """Start the background maintenance (unless the interval is 0); return its stop function."""
    minutes = memory.settings.server.maintenance_interval_minutes
    scheduler = background_scheduler(memory, minutes, first_after=minutes * 60.0)
    if scheduler is None:
        return lambda: None
    app.state.maintenance = scheduler
    scheduler.start()
    log.info("background maintenance every %g minutes", minutes)
    return scheduler.stop


def metrics_file(app: "FastAPI", memory: "Memory") -> Callable[[], None]:
    """Write this worker's metrics under the workspace root while it serves (``metrics/shared.py``),
    where ``memfold stats --metrics`` run from a shell finds them; return the stop function."""
    from ..metrics.shared import Publisher

    return Publisher(memory.settings.root, "serve").start().stop


def metrics_route(app: "FastAPI", memory: "Memory") -> None:
    """``GET /metrics``: the live metrics in Prometheus' text format. No key is needed (like
    ``/healthz``, it carries no memory text): counts by type, latencies, cache and LLM token counters.
    Counts by namespace (user ids are personal data) only for a scrape with an admin key, or for
    every scrape with ``[server] metrics_namespaces``; a key that is sent must be valid (401)."""
    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        per_namespace = memory.settings.server.metrics_namespaces
        headers = {k.lower(): v for k, v in request.headers.items()}
        if "authorization" in headers or "x-api-key" in headers:
            caller = await run_in_threadpool(authenticate, app, headers)
            per_namespace = per_namespace or caller.key.allows("admin")
        body, content_type = await run_in_threadpool(exposition, memory, per_namespace)
        return Response(content=body, media_type=content_type)
