"""The ASGI layers in front of the routes that keep a server private and its memory bounded:

- ``HostCheck``: refuses a ``Host`` or ``Origin`` the server does not answer (``origins.HostRule``:
  the DNS-rebinding guard ``memfold mcp --http`` applies too);
- ``BodyLimit``: refuses a body over ``[server] max_body_bytes`` with 413, by its Content-Length or
  while it streams (a chunked body too);
- ``WorkGate``: at most ``[server] max_concurrent`` API requests of a process do engine work
  (embedding, indexing, searching) at once; the others wait their turn up to ``busy_wait_seconds``
  (on the event loop, holding no thread), then get 503 with ``Retry-After``. Each embedding holds
  its own working memory, so this is what bounds a worker's memory under any number of clients.
  When a burst is over, the C allocator is asked to hand its free memory back (glibc ``malloc_trim``),
  from the one heap its request threads share (``limit_malloc_arenas``, ``[server] malloc_arenas``)."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import json
import logging
import math
import threading
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..metrics.registry import TRIMS
from .errors import error_body
from .origins import HostRule

log = logging.getLogger("memfold.server")


async def send_error(send: Send, status: int, code: str, message: str, field: str | None = None,
                     headers: dict[str, str] | None = None) -> None:
    body = json.dumps(error_body(code, message, field)).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class HostCheck:
    """Answers only the ``Host`` names of ``rule`` and browser requests from its own pages."""

    def __init__(self, app: ASGIApp, rule: HostRule):
        self.app, self.rule = app, rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and self.rule.names is not None:
            host = origin = None
            for k, v in scope.get("headers") or []:
                if k == b"host":
                    host = v.decode("latin-1")
                elif k == b"origin":
                    origin = v.decode("latin-1")
            refused = self.rule.check(host, origin)
            if refused is not None:
                if scope["type"] == "http":
                    code = "host_refused" if refused[0] == 421 else "origin_refused"
                    await send_error(send, refused[0], code, refused[1], "host" if refused[0] == 421 else "origin")
                else:
                    await send({"type": "websocket.close", "code": 1008})
                return
        await self.app(scope, receive, send)


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
        over = started = False

        async def limited_receive() -> Message:
            nonlocal seen, over
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    raise _TooLarge()
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            if over:  # whatever the app made of the cut body (a parse error), the answer is 413
                if msg["type"] == "http.response.start" and not started:
                    started = True
                    await self._refuse(send)
                return
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                started = True
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        await send_error(send, 413, "body_too_large",
                         f"the request body is over {self.max_bytes} bytes ([server] max_body_bytes)", "body")


class _TooLarge(Exception):
    pass


class WorkGate:
    """At most ``limit`` ``/v1/`` requests in the app at once; a request waits up to ``wait`` seconds
    for a turn, then gets 503 with ``Retry-After``."""

    TRIM_AFTER = 1.0  # seconds idle before the allocator is trimmed

    def __init__(self, app: ASGIApp, limit: int, wait: float):
        self.app, self.limit, self.wait = app, limit, wait
        self._sem: asyncio.Semaphore | None = None
        self.active = self.peak = 0
        self.refused = 0
        self._trim_pending = False
        self._trim = _malloc_trim()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.limit)
        try:
            if self._sem.locked():  # every turn taken: wait for one, at most ``wait`` seconds
                await asyncio.wait_for(self._sem.acquire(), timeout=self.wait)
            else:
                await self._sem.acquire()  # a free turn: taken at once (also with a wait of 0)
        except asyncio.TimeoutError:
            self.refused += 1
            await send_error(send, 503, "busy", f"the server is busy ({self.limit} requests at work, "
                             f"[server] max_concurrent); retry in a moment", None,
                             {"Retry-After": str(max(1, math.ceil(self.wait / 2)))})
            return
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self._sem.release()
            if self.active == 0:
                self._after_burst()

    def _after_burst(self) -> None:
        """Idle again after requests ran side by side: soon (if still idle) hand the allocator's free
        memory back to the system, on a thread (a trim of a large heap takes milliseconds)."""
        if self._trim is None or self.peak < 2 or self._trim_pending:
            return
        self._trim_pending = True
        asyncio.get_running_loop().call_later(self.TRIM_AFTER, self._trim_if_idle)

    def _trim_if_idle(self) -> None:
        self._trim_pending = False
        if self.active == 0:
            self.peak = 0
            threading.Thread(target=self._release, name="memfold-trim", daemon=True).start()

    def _release(self) -> None:
        self._trim(0)
        TRIMS.inc()  # memfold_memory_trims_total at /metrics


_M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)
ARENAS_SET: list[int] = []  # the arena limits this process set, in order


def limit_malloc_arenas(n: int) -> bool:
    """At most ``n`` glibc malloc arenas in this process (0: leave the C library's default). With
    one arena, the request threads allocate from one heap: what a burst leaves free is in the heap
    ``malloc_trim`` hands back, instead of in a heap per thread, pinned by the few objects that stay
    alive in each. True when set (glibc), False elsewhere."""
    if n <= 0:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(_M_ARENA_MAX, n) != 1:
        return False
    ARENAS_SET.append(n)
    return True


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (None on another C library)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim
