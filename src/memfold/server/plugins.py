"""A small extension point of the server: other packages add routes and background tasks here
without editing ``app.py``.

- ``ROUTES``: callables ``(app, memory)`` that add routes to the app (``/metrics``, …);
- ``STARTUP``: callables ``(app, memory)`` run when the server starts, each returning a function
  that stops what it started (background maintenance, …), called at shutdown in reverse order."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ..facade.memory import Memory

RouteAdder = Callable[["FastAPI", "Memory"], None]
StartupTask = Callable[["FastAPI", "Memory"], Callable[[], None]]

ROUTES: list[RouteAdder] = []
STARTUP: list[StartupTask] = []


def add_routes(fn: RouteAdder) -> RouteAdder:
    """Register a route adder (usable as a decorator)."""
    if fn not in ROUTES:
        ROUTES.append(fn)
    return fn


def on_startup(fn: StartupTask) -> StartupTask:
    """Register a startup task returning its stop function (usable as a decorator)."""
    if fn not in STARTUP:
        STARTUP.append(fn)
    return fn
