"""Who is calling: the API key of a request (``Authorization: Bearer mfk_…`` or ``X-API-Key``),
its scope and the namespaces it may use. Keys are looked up in the index at every request, so
a revoked key is refused at once by every worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import InvalidInputError
from ..workspace.userspace import check_user_id
from .errors import ApiError, error_response
from .keys import ALL_NAMESPACES, ApiKey, KeyStore

NO_AUTH_KEY = ApiKey("no-auth", (ALL_NAMESPACES,), "admin", "started with --no-auth")


@dataclass(frozen=True)
class Caller:
    key: ApiKey

    def user(self, user_id: str | None, scope: str) -> str:
        """The namespace a request acts on, after checking the key's scope and namespaces (403)."""
        if not self.key.allows(scope):
            raise ApiError(403, "forbidden", f"this key has scope {self.key.scope!r}; this request needs {scope!r}")
        if user_id is None or user_id == "":
            user_id = self.key.user if self.key.user != ALL_NAMESPACES else "default"
        try:
            user_id = check_user_id(user_id)  # in normal form C, as the namespace is stored
        except InvalidInputError as exc:
            raise ApiError(422, "invalid_input", str(exc), "user_id") from None
        if not self.key.covers(user_id):
            raise ApiError(403, "forbidden", f"this key may not use namespace {user_id!r}", "user_id")
        return user_id


def authenticate(app: Any, headers: dict[str, str]) -> Caller:
    """The caller of a request, or ApiError 401."""
    if app.state.no_auth:
        return Caller(NO_AUTH_KEY)
    auth = headers.get("authorization", "")
    token = auth[7:].strip() if auth[:7].lower() == "bearer " else headers.get("x-api-key") or ""
    if not token:
        raise ApiError(401, "unauthorized", "an API key is needed: send 'Authorization: Bearer mfk_…' "
                                            "(create one with 'memfold keys create --user U')")
    keys: KeyStore = app.state.keys
    key = keys.verify(token)
    if key is None:
        raise ApiError(401, "unauthorized", "this API key is unknown, wrong or revoked")
    return Caller(key)


class KeyCheck:
    """Checks the key of every ``/v1/`` request before its body is read (a bad key is a 401 whatever
    the body holds); the routes get the result through the ``caller`` dependency."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1/"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            try:
                scope.setdefault("state", {})["caller"] = await run_in_threadpool(authenticate, scope["app"], headers)
            except ApiError as exc:
                await error_response(exc.status, exc.code, exc.message, exc.field,
                                     {"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def caller(request: Request) -> Caller:
    """FastAPI dependency: the caller ``KeyCheck`` authenticated."""
    found = getattr(request.state, "caller", None)
    if not isinstance(found, Caller):
        raise ApiError(401, "unauthorized", "an API key is needed")
    return found
