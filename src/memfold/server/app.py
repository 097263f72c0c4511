"""The FastAPI application: ``create_app(memory=…)`` or ``create_app(root=…)``; ``memfold serve``
runs it with uvicorn (``app_from_env`` is the factory its workers import)."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..config import Settings, load_settings
from ..errors import ConfigError
from ..facade.memory import Memory
from ..index.vectors import pin_one_blas_thread
from . import access, background, errors, plugins
from .auth import KeyCheck
from .background import maintenance_task, metrics_route
from .guards import BodyLimit, HostCheck, WorkGate, limit_malloc_arenas
from .keys import KeyStore
from .origins import host_rule
from .routes import knowledge, memories, sessions, system, tools

log = logging.getLogger("memfold.server")
STATIC = Path(__file__).parent / "static"
plugins.on_startup(maintenance_task)  # built in: background maintenance
plugins.on_startup(background.metrics_file)  # built in: this worker's metrics for `memfold stats --metrics` from a shell
plugins.add_routes(metrics_route)  # built in: GET /metrics
ENV_NO_AUTH = "MEMFOLD_SERVE_NO_AUTH"  # set by `memfold serve --no-auth` for its workers
ENV_HOST = "MEMFOLD_SERVE_HOST"  # set by `memfold serve` for its workers: the address they listen on


def _offline_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from the files the ``fastapi-offline`` package ships, served by this server
    (FastAPI's default page loads them from a CDN, which an offline machine cannot reach)."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html

    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title="memfold API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon.png")


def create_app(memory: Memory | None = None, *, root: str | Path | None = None, settings: Settings | None = None,
               no_auth: bool = False, close_memory: bool | None = None, host: str | None = None) -> FastAPI:
    """The app over one ``Memory`` (made from ``settings``/``root`` when not given; then closed at shutdown).
    ``host``: the address the server listens on (default ``[server] host``), which decides the
    ``Host``/``Origin`` headers it answers (``origins.host_rule``)."""
    owns = memory is None
    if memory is None:
        memory = Memory(settings=settings or load_settings(root), background=False)  # its scheduler: background.py
    mem = memory
    server = mem.settings.server
    if server.max_body_bytes < 1:
        raise ConfigError(f"[server] max_body_bytes must be at least 1, got {server.max_body_bytes}")
    if server.max_concurrent < 1:
        raise ConfigError(f"[server] max_concurrent must be at least 1, got {server.max_concurrent}")
    access.check_format(server.log_format)
    if not server.busy_wait_seconds >= 0:
        raise ConfigError(f"[server] busy_wait_seconds must be 0 or more, got {server.busy_wait_seconds}")
    if not 0 <= server.malloc_arenas <= 1024:
        raise ConfigError(f"[server] malloc_arenas must be between 0 and 1024 (0: the C library's default), "
                          f"got {server.malloc_arenas}")
    stops: list[Callable[[], None]] = []
    pin_one_blas_thread()  # requests run side by side on threads: each on one BLAS thread
    limit_malloc_arenas(server.malloc_arenas)  # before the request threads exist: they share the heaps there are

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        for task in plugins.STARTUP:
            stops.append(task(app, mem))
        try:
            yield
        finally:
            for stop in reversed(stops):
                try:
                    stop()
                except Exception:  # one failing stop must not keep the others from running
                    log.exception("a startup task's stop function failed")
            stops.clear()
            if close_memory if close_memory is not None else owns:
                mem.close()

    app = FastAPI(title="memfold", version=__version__, lifespan=lifespan, docs_url=None,
                  description="Long-term memory for LLM agents. Send an API key as `Authorization: Bearer mfk_…`.")
    _offline_docs(app)
    app.state.memory = mem
    app.state.keys = KeyStore(mem.index)
    app.state.no_auth = no_auth
    errors.install(app)
    for module in (system, memories, knowledge, sessions, tools):
        app.include_router(module.router)
    for add in plugins.ROUTES:
        add(app, mem)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/index.html", include_in_schema=False)
    def page_alias() -> RedirectResponse:
        return RedirectResponse("/")

    # the last added runs first: Host/Origin, body size, key, then a turn at the engine
    app.add_middleware(WorkGate, limit=server.max_concurrent, wait=server.busy_wait_seconds)
    app.add_middleware(KeyCheck)
    app.add_middleware(BodyLimit, max_bytes=server.max_body_bytes)
    app.add_middleware(HostCheck, rule=host_rule(host or server.host, server.allowed_hosts))
    app.add_middleware(access.AccessLog)  # outermost: every request logged once, refused ones too
    return app


def app_from_env() -> Any:
    """The factory ``memfold serve`` gives uvicorn (each worker builds its own app; its log goes to
    stderr in ``[server] log_format``)."""
    app = create_app(root=os.environ.get("MEMFOLD_HOME") or None, no_auth=os.environ.get(ENV_NO_AUTH) == "1",
                     host=os.environ.get(ENV_HOST) or None)
    access.install_handler(app.state.memory.settings.server.log_format)
    return app
