"""``Client`` and ``AsyncClient``: memfold's ``Memory`` calls over HTTP to a running ``memfold serve``.

The same method names and result types as ``Memory`` (``AddResult``, ``SearchHit``,
``MemoryRecord``, ``HistoryEntry``); the server's error body ``{"error": {code, message, field}}``
becomes the matching memfold error (``NotFoundError``, ``InvalidInputError``, ``SecretRefusedError``,
``AuthenticationError``, …; a 422's every problem is in the error's ``problems``). The server answers
lists a page at a time (``{"results", "next"}``); the client follows the pages, so a list comes
whole. One connection pool per client (keep-alive), a timeout on every request, and retries with
exponential backoff inside the transport: a refused or dropped connection and a 503 are tried
again (``retries`` times; a dropped connection only for requests that change nothing twice,
GET/DELETE, or that never reached the server)."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, TypeVar

import httpx

from . import errors as e
from .models import AddResult, HistoryEntry, MemoryRecord, SearchHit

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8765"
RETRY_STATUS = frozenset({503})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "PUT"})  # the same effect when sent twice
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)  # the request never reached a server
_DROPPED = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
PAGE = 1000  # rows per request of a listing the client pages through (the server's bound on `limit`)

_BY_CODE: dict[str, type[e.MemfoldError]] = {  # the error class of each code (errors.CODES), and the server's own
    **{code: row.error for code, row in e.CODES.items() if row.error is not e.MemfoldError},
    "body_too_large": e.LimitExceededError, "unauthorized": e.AuthenticationError, "forbidden": e.PermissionDeniedError,
}


class _Backoff:
    """The waits between tries: ``backoff`` × 2^try with jitter, at most ``max_wait``; a server's
    ``Retry-After`` (seconds) is honoured up to the same bound."""

    def __init__(self, retries: int, backoff: float, max_wait: float):
        if retries < 0 or backoff < 0 or max_wait < 0:
            raise e.InvalidInputError("retries, backoff and max_wait must not be negative")
        self.retries, self.backoff, self.max_wait = retries, backoff, max_wait

    def wait(self, attempt: int, response: httpx.Response | None = None) -> float:
        hint = response.headers.get("Retry-After") if response is not None else None
        if hint and hint.replace(".", "", 1).isdigit():
            return min(float(hint), self.max_wait)
        return min(self.backoff * (2 ** attempt) * (0.5 + random.random() / 2), self.max_wait)

    def again(self, request: httpx.Request, attempt: int, exc: Exception | None,
              response: httpx.Response | None) -> bool:
        if attempt >= self.retries:
            return False
        if exc is not None:
            return isinstance(exc, _NOT_SENT) or (isinstance(exc, _DROPPED) and request.method in SAFE_METHODS)
        return response is not None and response.status_code in RETRY_STATUS


class RetryTransport(httpx.BaseTransport):
    """An httpx transport that retries a request on a refused or dropped connection and on 503."""

    def __init__(self, inner: httpx.BaseTransport | None = None, *, retries: int = 3, backoff: float = 0.25,
                 max_wait: float = 8.0, sleep: Callable[[float], None] = time.sleep):
        self._inner = inner or httpx.HTTPTransport()
        self._policy = _Backoff(retries, backoff, max_wait)
        self._sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._inner.handle_request(request)
            except httpx.TransportError as exc:
                if not self._policy.again(request, attempt, exc, None):
                    raise
                self._sleep(self._policy.wait(attempt))
            else:
                if not self._policy.again(request, attempt, None, response):
                    return response
                response.read()
                response.close()
                self._sleep(self._policy.wait(attempt, response))
            attempt += 1

    def close(self) -> None:
        self._inner.close()


class AsyncRetryTransport(httpx.AsyncBaseTransport):
    """``RetryTransport`` for ``httpx.AsyncClient``: the waits are ``asyncio.sleep``."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None, *, retries: int = 3, backoff: float = 0.25,
                 max_wait: float = 8.0):
        self._inner = inner or httpx.AsyncHTTPTransport()
        self._policy = _Backoff(retries, backoff, max_wait)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._inner.handle_async_request(request)
            except httpx.TransportError as exc:
                if not self._policy.again(request, attempt, exc, None):
                    raise
                await asyncio.sleep(self._policy.wait(attempt))
            else:
                if not self._policy.again(request, attempt, None, response):
                    return response
                await response.aread()
                await response.aclose()
                await asyncio.sleep(self._policy.wait(attempt, response))
            attempt += 1

    async def aclose(self) -> None:
        await self._inner.aclose()


# ---- requests and results (shared by both clients) ------------------------------------------
@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    parse: Callable[[Any], Any]
    params: dict[str, Any] | None = None
    body: Any = None
    every_page: bool = False  # a listing read to its end: the server's pages (``next``) followed

    def after(self, cursor: str) -> "_Call":
        """The same request for the page after ``cursor``."""
        params = {k: v for k, v in (self.params or {}).items() if k != "offset"}  # the cursor says where
        return replace(self, params={**params, "cursor": cursor})


def _record(d: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord.from_dict(d)


def _hit(d: dict[str, Any]) -> SearchHit:
    rel = d.get("related")
    return SearchHit(_record(d), float(d.get("score", 0.0)), float(d.get("similarity", 0.0)),
                     relevance=float(d.get("relevance", 1.0)),
                     related=tuple(dict(x) for x in rel) if isinstance(rel, list) else None)


def _entry(d: dict[str, Any]) -> HistoryEntry:
    at = datetime.fromisoformat(str(d["at"]).replace("Z", "+00:00"))
    return HistoryEntry(memory_id=d["memory_id"], user_id=d["user_id"], action=d["action"],
                        at=at if at.tzinfo else at.replace(tzinfo=timezone.utc), old_content=d.get("old_content"),
                        new_content=d.get("new_content"), detail=dict(d.get("detail") or {}))


def _items(body: Any) -> list[Any]:
    """The list of a listing answer (``{"results": [...], "next": …}``)."""
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        return list(body["results"])
    raise e.ApiError(f"unexpected answer from the server: {str(body)[:200]}")


def _next(body: Any) -> str | None:
    cursor = body.get("next") if isinstance(body, dict) else None
    return cursor if isinstance(cursor, str) and cursor else None


def _add_result(d: dict[str, Any]) -> AddResult:
    recs = lambda k: tuple(_record(x) for x in d.get(k) or ())  # noqa: E731
    strs = lambda k: tuple(str(x) for x in d.get(k) or ())  # noqa: E731
    return AddResult(added=recs("added"), merged=recs("merged"), skipped=strs("skipped"), refused=strs("refused"),
                     warnings=strs("warnings"), forgotten=recs("forgotten"), redacted=strs("redacted"))


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _kind(value: Any) -> Any:
    return getattr(value, "value", value)  # a MemoryType given as such


class _Requests:
    """What each call sends and how its answer is read."""

    def __init__(self, user_id: str | None):
        self.user_id = user_id

    def _q(self, user_id: str | None, **more: Any) -> dict[str, Any]:
        return _clean({"user_id": user_id or self.user_id, **more})

    def add(self, data: Any, user_id: str | None, memory_type: Any, importance: float | None, agent_id: str | None,
            session_id: str | None, structured_data: dict[str, Any] | None, infer: bool,
            metadata: dict[str, Any] | None) -> _Call:
        if metadata:
            structured_data = {**(structured_data or {}), **metadata}
        body = _clean({"text" if isinstance(data, str) else "messages": data, "memory_type": _kind(memory_type),
                       "importance": importance, "agent_id": agent_id, "session_id": session_id,
                       "structured_data": structured_data})
        body["infer"] = infer
        return _Call("POST", "/v1/memories", _add_result, self._q(user_id), body)

    def add_note(self, text: str, user_id: str | None) -> _Call:
        return _Call("POST", "/v1/memories", lambda d: _add_result(d).added[0], self._q(user_id),
                     {"text": text, "note": True})

    def search(self, query: str, user_id: str | None, limit: int | None, memory_type: Any,
               include_episodic: bool, filters: dict[str, Any] | None, related: bool = False) -> _Call:
        body = _clean({"query": query, "limit": limit, "memory_type": _kind(memory_type), "filters": filters})
        body["include_episodic"] = include_episodic
        if related:
            body["related"] = True
        return _Call("POST", "/v1/memories/search", lambda b: [_hit(x) for x in _items(b)],
                     self._q(user_id), body)

    def get(self, memory_id: str, user_id: str | None) -> _Call:
        return _Call("GET", f"/v1/memories/{_seg(memory_id)}", _record, self._q(user_id))

    def get_all(self, user_id: str | None, memory_type: Any, include_archived: bool, include_episodic: bool,
                limit: int | None, offset: int, filters: dict[str, Any] | None) -> _Call:
        """One page of ``limit`` memories after ``offset``; every memory from ``offset`` on when
        ``limit`` is None."""
        import json

        params = self._q(user_id, memory_type=_kind(memory_type), limit=PAGE if limit is None else limit,
                         offset=offset or None, filters=json.dumps(filters) if filters else None)
        params.update(include_archived=str(include_archived).lower(), include_episodic=str(include_episodic).lower())
        return _Call("GET", "/v1/memories", lambda b: [_record(x) for x in _items(b)], params,
                     every_page=limit is None)

    def update(self, memory_id: str, user_id: str | None, content: str | None, importance: float | None,
               memory_type: Any, structured_data: dict[str, Any] | None) -> _Call:
        body = _clean({"content": content, "importance": importance, "memory_type": _kind(memory_type),
                       "structured_data": structured_data})
        return _Call("PATCH", f"/v1/memories/{_seg(memory_id)}", _record, self._q(user_id), body)

    def delete(self, memory_id: str, user_id: str | None) -> _Call:
        return _Call("DELETE", f"/v1/memories/{_seg(memory_id)}", _record, self._q(user_id))

    def forget(self, query_or_id: str, user_id: str | None, dry_run: bool) -> _Call:
        return _Call("POST", "/v1/memories/forget", lambda b: [_record(x) for x in _items(b)],
                     self._q(user_id), {"query": query_or_id, "dry_run": dry_run})

    def history(self, memory_id: str, user_id: str | None) -> _Call:
        return _Call("GET", f"/v1/memories/{_seg(memory_id)}/history", lambda b: [_entry(x) for x in _items(b)],
                     self._q(user_id, limit=PAGE), every_page=True)

    def export(self, user_id: str | None) -> _Call:
        return _Call("GET", "/v1/export", _items, self._q(user_id, limit=PAGE), every_page=True)

    def import_records(self, records: Sequence[dict[str, Any]]) -> _Call:
        return _Call("POST", "/v1/import", lambda b: int(b["imported"]), None, {"records": list(records)})

    def stats(self, user_id: str | None) -> _Call:
        return _Call("GET", "/v1/stats", dict, self._q(user_id))

    def show(self, user_id: str | None) -> _Call:
        return _Call("GET", "/v1/memory-md", lambda b: str(b["text"]), self._q(user_id))

    def build_context(self, user_message: str, user_id: str | None, session_id: str | None, agent_id: str | None,
                      base_prompt: str | None) -> _Call:
        path = f"/v1/sessions/{_seg(session_id)}/context" if session_id else "/v1/context"
        return _Call("POST", path, lambda b: list(b["messages"]), self._q(user_id),
                     _clean({"user_message": user_message, "agent_id": agent_id, "base_prompt": base_prompt}))

    def add_skill(self, name: str, user_id: str | None, when_to_use: str | None, steps: Sequence[str] | None,
                  tools: Sequence[str] | None, outcome: str | None, importance: float | None,
                  agent_id: str | None) -> _Call:
        body = _clean({"name": name, "when_to_use": when_to_use, "steps": list(steps) if steps is not None else None,
                       "tools": list(tools) if tools is not None else None, "outcome": outcome,
                       "importance": importance, "agent_id": agent_id})
        return _Call("POST", "/v1/skills", _add_result, self._q(user_id), body)

    def skill_succeeded(self, memory_id: str, user_id: str | None) -> _Call:
        return _Call("POST", f"/v1/skills/{_seg(memory_id)}/success", _record, self._q(user_id))

    def skills(self, user_id: str | None) -> _Call:
        return _Call("GET", "/v1/skills", _items, self._q(user_id, limit=PAGE), every_page=True)

    def relate(self, source_id: str, target_id: str, relation: str, user_id: str | None, strength: float) -> _Call:
        body = {"source_id": source_id, "target_id": target_id, "relation": relation, "strength": strength}
        return _Call("POST", "/v1/relations", dict, self._q(user_id), body)

    def unrelate(self, source_id: str, target_id: str, relation: str | None, user_id: str | None) -> _Call:
        return _Call("DELETE", "/v1/relations", lambda b: int(b["removed"]),
                     self._q(user_id, source_id=source_id, target_id=target_id, relation=relation))

    def related(self, memory_id: str, user_id: str | None) -> _Call:
        return _Call("GET", f"/v1/memories/{_seg(memory_id)}/relations", _items, self._q(user_id, limit=PAGE),
                     every_page=True)

    def usage(self, user_id: str | None) -> _Call:
        return _Call("GET", "/v1/usage", dict, self._q(user_id))

    def whoami(self) -> _Call:
        return _Call("GET", "/v1/whoami", dict)

    def health(self) -> _Call:
        return _Call("GET", "/healthz", dict)


def _seg(value: Any) -> str:
    from urllib.parse import quote

    if not isinstance(value, str) or not value:
        raise e.InvalidInputError(f"an id must be a non-empty string, got {value!r}")
    return quote(value, safe="")


def _raise_for(response: httpx.Response) -> None:
    """The memfold error of a server's error answer."""
    try:
        err = response.json().get("error") or {}
    except ValueError:
        err = {}
    code = str(err.get("code") or "")
    message = str(err.get("message") or f"HTTP {response.status_code} from {response.request.url}")
    field = err.get("field")
    problems = err.get("problems") if isinstance(err.get("problems"), list) else []
    cls = _BY_CODE.get(code)
    if cls is None:
        cls = {401: e.AuthenticationError, 403: e.PermissionDeniedError, 404: e.NotFoundError,
               503: e.ServerUnavailableError}.get(response.status_code, e.ApiError)
    if issubclass(cls, e.ApiError):
        api = cls(message, response.status_code, code, field)
        api.problems = problems  # type: ignore[attr-defined]
        raise api
    exc = cls(message, code, field=field) if issubclass(cls, e.TextMatchError) else cls(message, field=field)
    exc.status, exc.code = response.status_code, code  # type: ignore[attr-defined]
    exc.problems = problems  # type: ignore[attr-defined]  # a 422: every problem, as [{"field", "message"}]
    raise exc


def _headers(api_key: str | None) -> dict[str, str]:
    key = api_key if api_key is not None else os.environ.get("MEMFOLD_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def _unreachable(base_url: str, exc: Exception) -> e.ServerUnavailableError:
    return e.ServerUnavailableError(f"memfold server at {base_url} unreachable: {type(exc).__name__}: {exc}")


class Client:
    """memfold's ``Memory`` calls on a running ``memfold serve``.

    ``Client(base_url, api_key=…)`` (the key defaults to ``MEMFOLD_API_KEY``); ``user_id``: the
    namespace of calls that name none (default: the key's first namespace). ``timeout`` (seconds)
    bounds every request; ``retries`` / ``backoff`` as ``RetryTransport``."""

    def __init__(self, base_url: str = DEFAULT_URL, api_key: str | None = None, *, user_id: str | None = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.25, max_wait: float = 8.0,
                 transport: httpx.BaseTransport | None = None):
        self.base_url = base_url.rstrip("/")
        self._r = _Requests(user_id)
        self._http = httpx.Client(base_url=self.base_url, headers=_headers(api_key), timeout=timeout,
                                  transport=RetryTransport(transport, retries=retries, backoff=backoff,
                                                           max_wait=max_wait))

    def _send(self, call: _Call) -> Any:
        try:
            response = self._http.request(call.method, call.path, params=call.params, json=call.body)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if response.status_code >= 400:
            _raise_for(response)
        return response.json()

    def _do(self, call: _Call) -> Any:
        body = self._send(call)
        if call.every_page:
            rows, cursor = _items(body), _next(body)
            while cursor:
                body = self._send(call.after(cursor))
                rows, cursor = rows + _items(body), _next(body)
            body = {"results": rows, "next": None}
        return call.parse(body)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, data: str | Sequence[Any], user_id: str | None = None, *, memory_type: Any = None,
            importance: float | None = None, agent_id: str | None = None, session_id: str | None = None,
            structured_data: dict[str, Any] | None = None, infer: bool = True,
            metadata: dict[str, Any] | None = None) -> AddResult:
        """``Memory.add``: a text (one memory) or chat messages."""
        return self._do(self._r.add(data, user_id, memory_type, importance, agent_id, session_id, structured_data,
                                    infer, metadata))

    def add_note(self, text: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.add_note``: a bullet in today's daily note."""
        return self._do(self._r.add_note(text, user_id))

    def search(self, query: str, user_id: str | None = None, *, limit: int | None = None, memory_type: Any = None,
               include_episodic: bool = True, filters: dict[str, Any] | None = None,
               related: bool = False) -> list[SearchHit]:
        """``Memory.search``: ranked hits (``related=True``: each with its related memories)."""
        return self._do(self._r.search(query, user_id, limit, memory_type, include_episodic, filters, related))

    def get(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.get``: one memory (``NotFoundError`` when there is none)."""
        return self._do(self._r.get(memory_id, user_id))

    def get_all(self, user_id: str | None = None, *, memory_type: Any = None, include_archived: bool = False,
                include_episodic: bool = True, limit: int | None = None, offset: int = 0,
                filters: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """``Memory.get_all``: the namespace's memories, paged by ``limit`` / ``offset`` (every one
        when ``limit`` is None: the client pages through them)."""
        return self._do(self._r.get_all(user_id, memory_type, include_archived, include_episodic, limit, offset,
                                        filters))

    def update(self, memory_id: str, user_id: str | None = None, *, content: str | None = None,
               importance: float | None = None, memory_type: Any = None,
               structured_data: dict[str, Any] | None = None, data: str | None = None,
               metadata: dict[str, Any] | None = None) -> MemoryRecord:
        """``Memory.update`` (``data`` / ``metadata``: the other names of ``content`` / ``structured_data``)."""
        if user_id is not None and len(user_id.split()) > 1:
            raise e.ArgumentError(f"update(): {user_id!r} was given as user_id (the argument after the memory id), "
                                  f"and a user id has no spaces; to pass the text, name it: update(..., content=...)")
        return self._do(self._r.update(memory_id, user_id, content if data is None else data, importance, memory_type,
                                       structured_data if metadata is None else metadata))

    def delete(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.delete``: the memory and every other copy of its words."""
        return self._do(self._r.delete(memory_id, user_id))

    def delete_all(self, user_id: str | None = None, *, filters: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """``Memory.delete_all``: every memory of the namespace (or those matching ``filters``), one
        request per memory after listing them. ``user_id`` must be given."""
        if user_id is None:
            raise e.ArgumentError("delete_all() needs user_id=...: it deletes every memory of that namespace")
        rows = self.get_all(user_id, include_archived=True, filters=filters)
        gone = []
        for r in rows:
            try:
                gone.append(self.delete(r.id, user_id))
            except e.NotFoundError:
                continue  # deleted meanwhile (with the memory that absorbed it, or by another caller)
        return gone

    def forget(self, query_or_id: str, user_id: str | None = None, *, dry_run: bool = False) -> list[MemoryRecord]:
        """``Memory.forget``: by id, or every memory the words match."""
        return self._do(self._r.forget(query_or_id, user_id, dry_run))

    def history(self, memory_id: str, user_id: str | None = None) -> list[HistoryEntry]:
        """``Memory.history``: every change of a memory, oldest first."""
        return self._do(self._r.history(memory_id, user_id))

    def export(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """``Memory.export``: every record of the namespace as a dict."""
        return self._do(self._r.export(user_id))

    def import_records(self, records: Sequence[dict[str, Any]]) -> int:
        """``Memory.import_records``: exported records (ids kept); returns how many."""
        return self._do(self._r.import_records(records))

    def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """``Memory.stats``."""
        return self._do(self._r.stats(user_id))

    def show(self, user_id: str | None = None) -> str:
        """``Memory.show``: the text of MEMORY.md."""
        return self._do(self._r.show(user_id))

    def build_context(self, user_message: str, user_id: str | None = None, *, session_id: str | None = None,
                      agent_id: str | None = None, base_prompt: str | None = None) -> list[dict[str, str]]:
        """``Memory.build_context``: the messages to send to the model."""
        return self._do(self._r.build_context(user_message, user_id, session_id, agent_id, base_prompt))

    def add_skill(self, name: str, user_id: str | None = None, *, when_to_use: str | None = None,
                  steps: Sequence[str] | None = None, tools: Sequence[str] | None = None, outcome: str | None = None,
                  importance: float | None = None, agent_id: str | None = None) -> AddResult:
        """``Memory.add_skill``: a skill saved in learnings.md (a near-duplicate skill is updated)."""
        return self._do(self._r.add_skill(name, user_id, when_to_use, steps, tools, outcome, importance, agent_id))

    def skill_succeeded(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.skill_succeeded``: one more success of a skill; the skill as it is now."""
        return self._do(self._r.skill_succeeded(memory_id, user_id))

    def skills(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """``Memory.skills``: the namespace's skills with their fields, most successful first."""
        return self._do(self._r.skills(user_id))

    def relate(self, source_id: str, target_id: str, relation: str, user_id: str | None = None, *,
               strength: float = 1.0) -> dict[str, Any]:
        """``Memory.relate``: record that one memory ``relation``s another (strength 0 to 1)."""
        return self._do(self._r.relate(source_id, target_id, relation, user_id, strength))

    def unrelate(self, source_id: str, target_id: str, relation: str | None = None,
                 user_id: str | None = None) -> int:
        """``Memory.unrelate``: delete the relations from one memory to another; how many went."""
        return self._do(self._r.unrelate(source_id, target_id, relation, user_id))

    def related(self, memory_id: str, user_id: str | None = None) -> list[dict[str, Any]]:
        """The memories related to one, strongest first, with their words."""
        return self._do(self._r.related(memory_id, user_id))

    def usage(self, user_id: str | None = None) -> dict[str, Any]:
        """``Memory.usage``: the memories searches returned most, the queries that found nothing."""
        return self._do(self._r.usage(user_id))

    def whoami(self) -> dict[str, Any]:
        """The calling key: its namespaces and scope."""
        return self._do(self._r.whoami())

    def health(self) -> dict[str, Any]:
        """The server's ``/healthz`` answer."""
        return self._do(self._r.health())


class AsyncClient:
    """``Client`` for asyncio: every call awaitable, one ``httpx.AsyncClient`` connection pool."""

    def __init__(self, base_url: str = DEFAULT_URL, api_key: str | None = None, *, user_id: str | None = None,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.25, max_wait: float = 8.0,
                 transport: httpx.AsyncBaseTransport | None = None):
        self.base_url = base_url.rstrip("/")
        self._r = _Requests(user_id)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=_headers(api_key), timeout=timeout,
                                       transport=AsyncRetryTransport(transport, retries=retries, backoff=backoff,
                                                                     max_wait=max_wait))

    async def _send(self, call: _Call) -> Any:
        try:
            response = await self._http.request(call.method, call.path, params=call.params, json=call.body)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if response.status_code >= 400:
            _raise_for(response)
        return response.json()

    async def _do(self, call: _Call) -> Any:
        body = await self._send(call)
        if call.every_page:
            rows, cursor = _items(body), _next(body)
            while cursor:
                body = await self._send(call.after(cursor))
                rows, cursor = rows + _items(body), _next(body)
            body = {"results": rows, "next": None}
        return call.parse(body)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def add(self, data: str | Sequence[Any], user_id: str | None = None, *, memory_type: Any = None,
                  importance: float | None = None, agent_id: str | None = None, session_id: str | None = None,
                  structured_data: dict[str, Any] | None = None, infer: bool = True,
                  metadata: dict[str, Any] | None = None) -> AddResult:
        """``Memory.add``."""
        return await self._do(self._r.add(data, user_id, memory_type, importance, agent_id, session_id,
                                          structured_data, infer, metadata))

    async def add_note(self, text: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.add_note``."""
        return await self._do(self._r.add_note(text, user_id))

    async def search(self, query: str, user_id: str | None = None, *, limit: int | None = None,
                     memory_type: Any = None, include_episodic: bool = True,
                     filters: dict[str, Any] | None = None, related: bool = False) -> list[SearchHit]:
        """``Memory.search``."""
        return await self._do(self._r.search(query, user_id, limit, memory_type, include_episodic, filters, related))

    async def get(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.get``."""
        return await self._do(self._r.get(memory_id, user_id))

    async def get_all(self, user_id: str | None = None, *, memory_type: Any = None, include_archived: bool = False,
                      include_episodic: bool = True, limit: int | None = None, offset: int = 0,
                      filters: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """``Memory.get_all`` (every memory when ``limit`` is None: the client pages through them)."""
        return await self._do(self._r.get_all(user_id, memory_type, include_archived, include_episodic, limit,
                                              offset, filters))

    async def update(self, memory_id: str, user_id: str | None = None, *, content: str | None = None,
                     importance: float | None = None, memory_type: Any = None,
                     structured_data: dict[str, Any] | None = None, data: str | None = None,
                     metadata: dict[str, Any] | None = None) -> MemoryRecord:
        """``Memory.update``."""
        return await self._do(self._r.update(memory_id, user_id, content if data is None else data, importance,
                                             memory_type, structured_data if metadata is None else metadata))

    async def delete(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.delete``."""
        return await self._do(self._r.delete(memory_id, user_id))

    async def delete_all(self, user_id: str | None = None, *,
                         filters: dict[str, Any] | None = None) -> list[MemoryRecord]:
        """``Memory.delete_all`` (``user_id`` must be given)."""
        if user_id is None:
            raise e.ArgumentError("delete_all() needs user_id=...: it deletes every memory of that namespace")
        gone = []
        for r in await self.get_all(user_id, include_archived=True, filters=filters):
            try:
                gone.append(await self.delete(r.id, user_id))
            except e.NotFoundError:
                continue
        return gone

    async def forget(self, query_or_id: str, user_id: str | None = None, *,
                     dry_run: bool = False) -> list[MemoryRecord]:
        """``Memory.forget``."""
        return await self._do(self._r.forget(query_or_id, user_id, dry_run))

    async def history(self, memory_id: str, user_id: str | None = None) -> list[HistoryEntry]:
        """``Memory.history``."""
        return await self._do(self._r.history(memory_id, user_id))

    async def export(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """``Memory.export``."""
        return await self._do(self._r.export(user_id))

    async def import_records(self, records: Sequence[dict[str, Any]]) -> int:
        """``Memory.import_records``."""
        return await self._do(self._r.import_records(records))

    async def stats(self, user_id: str | None = None) -> dict[str, Any]:
        """``Memory.stats``."""
        return await self._do(self._r.stats(user_id))

    async def show(self, user_id: str | None = None) -> str:
        """``Memory.show``."""
        return await self._do(self._r.show(user_id))

    async def build_context(self, user_message: str, user_id: str | None = None, *, session_id: str | None = None,
                            agent_id: str | None = None, base_prompt: str | None = None) -> list[dict[str, str]]:
        """``Memory.build_context``."""
        return await self._do(self._r.build_context(user_message, user_id, session_id, agent_id, base_prompt))

    async def add_skill(self, name: str, user_id: str | None = None, *, when_to_use: str | None = None,
                        steps: Sequence[str] | None = None, tools: Sequence[str] | None = None,
                        outcome: str | None = None, importance: float | None = None,
                        agent_id: str | None = None) -> AddResult:
        """``Memory.add_skill``."""
        return await self._do(self._r.add_skill(name, user_id, when_to_use, steps, tools, outcome, importance,
                                                agent_id))

    async def skill_succeeded(self, memory_id: str, user_id: str | None = None) -> MemoryRecord:
        """``Memory.skill_succeeded``."""
        return await self._do(self._r.skill_succeeded(memory_id, user_id))

    async def skills(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """``Memory.skills``."""
        return await self._do(self._r.skills(user_id))

    async def relate(self, source_id: str, target_id: str, relation: str, user_id: str | None = None, *,
                     strength: float = 1.0) -> dict[str, Any]:
        """``Memory.relate``."""
        return await self._do(self._r.relate(source_id, target_id, relation, user_id, strength))

    async def unrelate(self, source_id: str, target_id: str, relation: str | None = None,
                       user_id: str | None = None) -> int:
        """``Memory.unrelate``."""
        return await self._do(self._r.unrelate(source_id, target_id, relation, user_id))

    async def related(self, memory_id: str, user_id: str | None = None) -> list[dict[str, Any]]:
        """The memories related to one, strongest first."""
        return await self._do(self._r.related(memory_id, user_id))

    async def usage(self, user_id: str | None = None) -> dict[str, Any]:
        """``Memory.usage``."""
        return await self._do(self._r.usage(user_id))

    async def whoami(self) -> dict[str, Any]:
        """The calling key."""
        return await self._do(self._r.whoami())

    async def health(self) -> dict[str, Any]:
        """The server's ``/healthz`` answer."""
        return await self._do(self._r.health())
