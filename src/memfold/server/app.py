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
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..config import Settings, load_settings
from ..engine.memory import Memory
from ..errors import ConfigError
from . import background, errors, plugins
from .auth import KeyCheck
from .background import maintenance_task, metrics_route
from .errors import error_body
from .keys import KeyStore
from .routes import memories, sessions, system, tools

log = logging.getLogger("memfold.server")
STATIC = Path(__file__).parent / "static"
plugins.on_startup(maintenance_task)  # built in: background maintenance
plugins.on_startup(background.metrics_file)  # built in: this worker's metrics for `memfold stats --metrics` from a shell
plugins.add_routes(metrics_route)  # built in: GET /metrics
ENV_NO_AUTH = "MEMFOLD_SERVE_NO_AUTH"  # set by `memfold serve --no-auth` for its workers


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


class BodyLimit:
    """Refuses a request body over ``max_bytes`` with 413, by its Content-Length or while it streams."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge()
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        import json

        body = json.dumps(error_body("body_too_large", f"the request body is over {self.max_bytes} bytes "
                                     "([server] max_body_bytes)", "body")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


def create_app(memory: Memory | None = None, *, root: str | Path | None = None, settings: Settings | None = None,
               no_auth: bool = False, close_memory: bool | None = None) -> FastAPI:
    """The app over one ``Memory`` (made from ``settings``/``root`` when not given; then closed at shutdown)."""
    owns = memory is None
    if memory is None:
        memory = Memory(settings=settings or load_settings(root))
    mem = memory
    if mem.settings.server.max_body_bytes < 1:
        raise ConfigError(f"[server] max_body_bytes must be at least 1, got {mem.settings.server.max_body_bytes}")
    stops: list[Callable[[], None]] = []

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
    for module in (system, memories, sessions, tools):
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

    app.add_middleware(KeyCheck)
    app.add_middleware(BodyLimit, max_bytes=mem.settings.server.max_body_bytes)  # outermost: runs first
    return app


def app_from_env() -> Any:
    """The factory ``memfold serve`` gives uvicorn (each worker builds its own app)."""
    return create_app(root=os.environ.get("MEMFOLD_HOME") or None, no_auth=os.environ.get(ENV_NO_AUTH) == "1")
