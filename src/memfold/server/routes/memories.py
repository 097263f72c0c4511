"""``/v1/memories``: add, search, list, get, update, delete, forget, history, export, import, MEMORY.md."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from ...errors import IndexError_, InvalidInputError
from ...facade.memory import Memory
from ...limits import MAX_RESULTS
from ...models import utcnow
from .. import models as m
from .. import paging
from ..auth import Caller, caller
from ..errors import ApiError
from ..paging import CursorQuery, LimitQuery

router = APIRouter(prefix="/v1", tags=["memories"])
log = logging.getLogger("memfold.server")
UserQuery = Query(None, description="Namespace (default: the key's first namespace; a request with a body may "
                  "give it there instead)")


def one_user(query: str | None, body: str | None, name: str = "user_id") -> str | None:
    """The namespace (or another ``name``) of a request that may give it in the query (``?user_id=``)
    or in the body: once, or twice the same."""
    if query is not None and body is not None and query != body:
        raise ApiError(422, "invalid_input", f"{name} is {query!r} in the query and {body!r} in the body; "
                       "give it once", name)
    return query if query is not None else body


async def memory(request: Request) -> Memory:
    mem: Memory = request.app.state.memory
    return mem


@router.post("/memories", response_model=m.AddResult)
def add_memory(body: m.AddMemoryRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
               mem: Memory = Depends(memory)) -> Any:
    """Store a text (one memory, or a daily note with ``note``) or a list of chat messages."""
    uid = c.user(one_user(user_id, body.user_id), "write")
    if (body.text is None) == (body.messages is None):
        raise ApiError(422, "invalid_input", "give either text or messages", "text")
    if body.note:
        if body.text is None:
            raise ApiError(422, "invalid_input", "a daily note needs text", "text")
        r = mem.add_note(body.text, uid)
        return {"added": [r.to_dict()], "merged": [], "skipped": [], "refused": [], "warnings": [], "forgotten": [],
                "redacted": [], "completed": []}
    data: Any = body.text if body.text is not None else [x.model_dump() for x in body.messages or []]
    res = mem.add(data, uid, memory_type=body.memory_type, importance=body.importance, agent_id=body.agent_id,
                  session_id=body.session_id, structured_data=body.structured_data, infer=body.infer,
                  metadata=body.metadata)
    return res.to_dict()


@router.post("/memories/search", response_model=m.HitPage)
def search(body: m.SearchRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
           mem: Memory = Depends(memory)) -> Any:
    """Hybrid search (keywords + vectors), Chinese and English: the best hits first, ``limit`` per
    page (a later page runs the search again, so it follows the ranking of that moment)."""
    uid = c.user(one_user(user_id, body.user_id), "read")
    want = body.limit or mem.policy(uid).retrieve_limit
    offset = paging.decode("search", body.cursor)
    end = min(offset + want, MAX_RESULTS)
    if offset >= end:
        return {"results": [], "next": None}
    # the first page is the search a Python caller gets; a later one asks for the hits up to its end
    hits = mem.search(body.query, uid, limit=end, memory_type=body.memory_type, include_episodic=body.include_episodic,
                      filters=body.filters, record_access=offset == 0,
                      related=body.related)
    shown = hits[offset:end]
    if offset and shown:  # the hits a caller is given count as accessed
        try:
            mem.index.record_access(uid, [h.record.id for h in shown], utcnow())
        except IndexError_ as exc:  # the answer stands; its statistics wait
            log.warning("search page: access statistics not written: %s", exc)
    more = len(hits) == end and end < MAX_RESULTS  # a full page: there may be more (the next page says)
    return {"results": [h.to_dict() for h in shown], "next": paging.encode("search", end) if more else None}


@router.get("/memories", response_model=m.MemoryPage)
def list_memories(user_id: str | None = UserQuery, memory_type: m.MemoryTypeName | None = None,
                  include_archived: bool = False, include_episodic: bool = True,
                  limit: int = LimitQuery, cursor: str | None = CursorQuery,
                  offset: int | None = Query(None, ge=0, description="Skip this many first (instead of a cursor)"),
                  filters: str | None = Query(None, max_length=20_000,
                                              description='A JSON object: only the memories that match, e.g. '
                                              '{"topic": "travel"} (see memfold.filters)'),
                  c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The namespace's memories, newest first, paged."""
    uid = c.user(user_id, "read")
    try:
        where = json.loads(filters) if filters else None
    except ValueError as exc:
        raise InvalidInputError(f"filters must be a JSON object: {exc}", field="filters") from None
    if offset is not None:
        if cursor:
            raise ApiError(422, "invalid_input", "give cursor or offset, not both", "offset")
        cursor = paging.encode("memories", offset)

    def fetch(n: int, skip: int) -> list[dict[str, Any]]:
        return [r.to_dict() for r in mem.get_all(uid, memory_type=memory_type, include_archived=include_archived,
                                                 include_episodic=include_episodic, limit=n, offset=skip,
                                                 filters=where)]
    return paging.page("memories", fetch, limit, cursor)


@router.get("/memory-md", response_model=m.MemoryFile)
def memory_md(user_id: str | None = UserQuery, c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The text of the namespace's MEMORY.md."""
    uid = c.user(user_id, "read")
    return {"user_id": uid, "text": mem.show(uid)}


@router.get("/memories/{memory_id}", response_model=m.Memory)
def get_memory(memory_id: str, user_id: str | None = UserQuery, c: Caller = Depends(caller),
               mem: Memory = Depends(memory)) -> Any:
    return mem.get(memory_id, c.user(user_id, "read")).to_dict()


@router.patch("/memories/{memory_id}", response_model=m.Memory)
def update_memory(memory_id: str, body: m.UpdateMemoryRequest, user_id: str | None = UserQuery,
                  c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Change a memory's words, importance, type or structure (MEMORY.md is backed up first)."""
    uid = c.user(one_user(user_id, body.user_id), "write")
    return mem.update(memory_id, uid, content=body.content, importance=body.importance,
                      memory_type=body.memory_type, structured_data=body.structured_data).to_dict()


@router.delete("/memories/{memory_id}", response_model=m.Memory)
def delete_memory(memory_id: str, user_id: str | None = UserQuery, c: Caller = Depends(caller),
                  mem: Memory = Depends(memory)) -> Any:
    """Delete a memory and every other copy of its words (history text, backups, snapshot)."""
    return mem.delete(memory_id, c.user(user_id, "write")).to_dict()


@router.post("/memories/forget", response_model=m.ForgetResult)
def forget(body: m.ForgetRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
           mem: Memory = Depends(memory)) -> Any:
    """Delete a memory by id or every memory a query matches; ``dry_run`` only shows them."""
    uid = c.user(one_user(user_id, body.user_id), "read" if body.dry_run else "write")
    gone = mem.forget(body.query, uid, dry_run=body.dry_run)
    return {"results": [r.to_dict() for r in gone], "next": None, "dry_run": body.dry_run}


@router.get("/memories/{memory_id}/history", response_model=m.HistoryPage)
def history(memory_id: str, user_id: str | None = UserQuery, limit: int = LimitQuery,
            cursor: str | None = CursorQuery, c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Every change of a memory, oldest first."""
    entries = mem.history(memory_id, c.user(user_id, "read"))
    return paging.page_of("history", (e.to_dict() for e in entries), limit, cursor)


@router.get("/export", response_model=m.ExportPage)
def export(user_id: str | None = UserQuery, limit: int = LimitQuery, cursor: str | None = CursorQuery,
           c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Every record of the namespace (archived too), as ``memfold export`` writes them, paged;
    ``POST /v1/import`` takes them back."""
    return paging.page_of("export", mem.export(c.user(user_id, "read")), limit, cursor)


@router.post("/import", response_model=m.ImportResult)
def import_(body: m.ImportRequest, c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Import exported records (ids kept); every record's ``user_id`` must be a namespace of the key."""
    for i, row in enumerate(body.records):
        uid = row.get("user_id", "default") if isinstance(row, dict) else None
        if not isinstance(uid, str):
            raise InvalidInputError(f"records[{i}].user_id must be a string")
        c.user(uid, "write")
    return {"imported": mem.import_records(body.records)}
