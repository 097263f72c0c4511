"""The access log: one line per HTTP request on the ``memfold.access`` logger — method, path (never
the query string: it may carry a namespace, which is personal data), status, milliseconds and the
id of the API key (never the key itself, never a body: no memory text reaches the log).

``memfold serve`` sends the ``memfold`` loggers to stderr as text or, with ``[server] log_format =
"json"``, one JSON object per line (``install_handler``); uvicorn's own access log is off, so each
request is logged once. An app made with ``create_app`` logs the same records and leaves where they
go to the program that embeds it."""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import datetime, timezone
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError

log = logging.getLogger("memfold.access")
FORMATS = ("text", "json")
FIELDS = ("method", "path", "status", "ms", "key")  # the access fields of a record (``extra=``)


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise ConfigError(f"[server] log_format must be one of {', '.join(FORMATS)}, got {value!r}")
    return value


def _key_id(scope: Scope) -> str:
    caller = (scope.get("state") or {}).get("caller")
    key = getattr(caller, "key", None)
    return str(getattr(key, "key_id", "-")) if key is not None else "-"


class AccessLog:
    """The outermost ASGI layer: times each HTTP request and logs it once it is answered (a request
    whose handler raised is logged as 500, the status the client gets)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            ms = round((time.perf_counter() - start) * 1000, 1)
            method, path, key = scope.get("method", "-"), scope.get("path", "-"), _key_id(scope)
            log.info("%s %s %d %.1fms key=%s", method, path, status, ms, key,
                     extra={"method": method, "path": path, "status": status, "ms": ms, "key": key})


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the access fields when present."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
                               "level": record.levelname, "logger": record.name}
        if all(hasattr(record, f) for f in FIELDS):
            out.update({f: getattr(record, f) for f in FIELDS})
        else:
            out["message"] = record.getMessage()
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def install_handler(fmt: str, stream: Any = None) -> logging.Handler:
    """Send the ``memfold`` loggers (the access log at INFO, the rest at WARNING) to ``stream``
    (stderr) in ``fmt``; replaces a handler this function installed before."""
    check_format(fmt)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json"
                         else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.set_name("memfold-serve")
    root = logging.getLogger("memfold")
    for old in [h for h in root.handlers if h.get_name() == "memfold-serve"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.propagate = False  # printed once, by this handler
    if root.level == logging.NOTSET:
        root.setLevel(logging.WARNING)
    log.setLevel(logging.INFO)
    return handler
