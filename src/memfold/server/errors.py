"""One JSON error shape for every failure: ``{"error": {"code", "message", "field"}}``.

A memfold error's status and code come from ``errors.CODES``, its field from the error itself;
request validation names the field and gives the code of the first problem (``limits.problem_code``); a 422 also
lists every problem of the request in ``problems`` (``[{"field", "message", "code"}]``), so that one round
trip fixes them all; an unexpected exception is logged and answered with a 500 that carries no
stack trace."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import CODES, MemfoldError, code_of
from ..limits import problem_code

log = logging.getLogger("memfold.server")

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "body_too_large", 415: "unsupported_media_type", 422: "invalid_input"}
MAX_LISTED_PROBLEMS = 50  # validation problems spelled out in a 422's message (``problems`` lists every one)


class ApiError(Exception):
    """An error the adapter itself raises (auth, scope, body size)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field


def error_body(code: str, message: str, field: str | None = None,
               problems: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message, "field": field}
    if problems is not None:
        err["problems"] = problems
    return {"error": err}


def error_response(status: int, code: str, message: str, field: str | None = None,
                   headers: dict[str, str] | None = None, problems: list[dict[str, Any]] | None = None
                   ) -> JSONResponse:
    if status == 422 and problems is None:  # a 422 always lists its problems (here: the one)
        problems = [{"field": field, "message": message, "code": code}]
    return JSONResponse(error_body(code, message, field, problems), status_code=status, headers=headers)


def memfold_status(exc: MemfoldError) -> tuple[int, str]:
    """The HTTP status and the code of a memfold error (``errors.CODES``)."""
    row = code_of(exc)
    return row.http_status, exc.code if exc.code in CODES else row.code


def _loc_field(loc: Any) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):  # where the value was (a field may be named "query")
        parts = parts[1:]
    return ".".join(parts) or (str(loc[0]) if loc else "body")


def _required_fields(request: Request) -> list[str]:
    """The required fields of the route's body model (an empty body is reported as missing as a whole)."""
    body = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(body, "type_", None) or getattr(getattr(body, "field_info", None), "annotation", None)
    fields = getattr(model, "model_fields", None)
    return [n for n, f in fields.items() if f.is_required()] if isinstance(fields, dict) else []


def install(app: FastAPI) -> None:
    """Register the handlers on an app."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.code, exc.message, exc.field, headers)

    @app.exception_handler(MemfoldError)
    async def _memfold(request: Request, exc: MemfoldError) -> JSONResponse:
        status, code = memfold_status(exc)
        if status >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        return error_response(status, code, str(exc), exc.field)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request", "type": ""}
        field = _loc_field(first.get("loc", ()))
        ctype = request.headers.get("content-type", "")
        if first.get("type") == "json_invalid":
            message = f"the body is not valid JSON: {first.get('msg', '')}"
            field = "body"
        elif field == "body" and "json" not in ctype and request.method in ("POST", "PATCH", "PUT"):
            message = f"send the body as a JSON object with 'Content-Type: application/json' (got {ctype or 'none'!r})"
        elif field == "body" and first.get("type") == "missing" and _required_fields(request):
            names = _required_fields(request)
            field, message = names[0], f"the body needs the field{'s' if len(names) > 1 else ''} {', '.join(names)}"
        else:
            message = f"{field}: {first.get('msg', 'invalid value')}"
        first_problem = str(first.get("msg", "invalid value")) if message.startswith(f"{field}: ") else message
        code = problem_code(str(first.get("type", "")), first.get("ctx"))  # type: ignore[arg-type]
        problems = [{"field": field, "message": first_problem, "code": code}]
        problems += [{"field": _loc_field(e.get("loc", ())), "message": str(e.get("msg", "invalid value")),
                      "code": problem_code(str(e.get("type", "")), e.get("ctx"))} for e in errors[1:]]
        others = [f"{p['field']}: {p['message']}" for p in problems[1:]]
        if others:  # every problem named, so that one round trip fixes them all
            shown = others[:MAX_LISTED_PROBLEMS - 1]
            message += "; also " + "; ".join(shown)
            if len(others) > len(shown):
                message += f"; {len(others) - len(shown):,} more, each in error.problems"
        return error_response(CODES[code].http_status, code, message, field, problems=problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.method} {request.url.path}"
        return error_response(exc.status_code, code, message, None, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", f"internal error ({type(exc).__name__}); the server log has details")
