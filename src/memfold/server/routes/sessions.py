"""``/v1/sessions`` and ``/v1/pins``: conversation sessions (create or resume, add a message,
build the context, summarize, clear) and the agents' pin lists."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ...engine.conversation.session import Session
from ...facade.memory import Memory
from .. import models as m
from .. import paging
from ..auth import Caller, caller
from ..paging import CursorQuery, LimitQuery
from .memories import UserQuery, memory, one_user

router = APIRouter(prefix="/v1", tags=["sessions"])


def _view(s: Session) -> dict[str, Any]:
    return {"info": s.info, "summary": s.summary, "messages": s.messages}


def _update(u: Any) -> dict[str, Any]:
    return {"summarized": u.summarized, "reason": u.reason, "folded": u.folded, "dropped": u.dropped,
            "method": u.method, "notice": u.notice, "errors": list(u.errors)}


@router.get("/sessions", response_model=m.SessionPage)
def list_sessions(user_id: str | None = UserQuery, limit: int = LimitQuery, cursor: str | None = CursorQuery,
                  c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The ids of the namespace's sessions."""
    return paging.page_of("sessions", mem.sessions(c.user(user_id, "read")), limit, cursor)


@router.post("/sessions", response_model=m.SessionView)
def open_session(body: m.SessionRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
                 mem: Memory = Depends(memory)) -> Any:
    """Create a session, or resume it (a resumed session keeps its agent, buffer and summary)."""
    s = mem.session(body.session_id, c.user(one_user(user_id, body.user_id), "write"), body.agent_id)
    return _view(s)


@router.get("/sessions/{session_id}", response_model=m.SessionView)
def get_session(session_id: str, user_id: str | None = UserQuery, c: Caller = Depends(caller),
                mem: Memory = Depends(memory)) -> Any:
    """A session's counters, rolling summary and recent messages (404 when it was never saved)."""
    uid = c.user(user_id, "read")
    _known(mem, uid, session_id)
    return _view(mem.session(session_id, uid))


@router.post("/sessions/{session_id}/messages", response_model=m.SessionUpdate)
def add_message(session_id: str, body: m.SessionMessageRequest, user_id: str | None = UserQuery,
                c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Append a message; folds the history into the summary when a threshold is crossed."""
    uid = c.user(one_user(user_id, body.user_id), "write")
    return _update(mem.session(session_id, uid).add_message(body.role, body.content))


@router.post("/sessions/{session_id}/context", response_model=m.ContextMessages)
def session_context(session_id: str, body: m.ContextRequest, user_id: str | None = UserQuery,
                    c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The messages to send to the model: memory, pins, summary, recent history and the message."""
    uid = c.user(one_user(user_id, body.user_id), "read")
    _known(mem, uid, session_id)
    msgs = mem.build_context(body.user_message, uid, session_id=session_id, agent_id=body.agent_id,
                             base_prompt=body.base_prompt, memory_enabled=body.memory_enabled)
    return {"messages": msgs}


@router.post("/sessions/{session_id}/summarize", response_model=m.SessionUpdate)
def summarize(session_id: str, user_id: str | None = UserQuery, c: Caller = Depends(caller),
              mem: Memory = Depends(memory)) -> Any:
    """Fold everything but the last few messages into the summary now."""
    uid = c.user(user_id, "write")
    _known(mem, uid, session_id)
    return _update(mem.session(session_id, uid).summarize())


@router.delete("/sessions/{session_id}", response_model=m.SessionPage)
def clear_session(session_id: str, user_id: str | None = UserQuery, limit: int = LimitQuery,
                  c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Forget the session's buffer and summary (long-term memories stay); returns the first page of
    the remaining sessions."""
    uid = c.user(user_id, "write")
    _known(mem, uid, session_id)
    mem.session(session_id, uid).clear()
    return paging.page_of("sessions", mem.sessions(uid), limit, None)


@router.post("/context", response_model=m.ContextMessages)
def context(body: m.ContextRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
            mem: Memory = Depends(memory)) -> Any:
    """The messages to send to the model without a session: memory, the agent's pins and the message."""
    msgs = mem.build_context(body.user_message, c.user(one_user(user_id, body.user_id), "read"), agent_id=body.agent_id,
                             base_prompt=body.base_prompt, memory_enabled=body.memory_enabled)
    return {"messages": msgs}


@router.get("/pins", response_model=m.PinPage)
def all_pins(user_id: str | None = UserQuery, limit: int = LimitQuery, cursor: str | None = CursorQuery,
             c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Every agent's pin list of the namespace."""
    uid = c.user(user_id, "read")
    out = paging.page_of("pins", mem.agents(uid), limit, cursor)
    out["results"] = [{"agent_id": a, "recent_memories": mem.recent_memories(a, uid)} for a in out["results"]]
    return out


@router.get("/pins/{agent_id}", response_model=m.Pins)
def pins(agent_id: str, user_id: str | None = UserQuery, c: Caller = Depends(caller),
         mem: Memory = Depends(memory)) -> Any:
    """One agent's pin list: the last memories it saved, oldest first."""
    return {"agent_id": agent_id, "recent_memories": mem.recent_memories(agent_id, c.user(user_id, "read"))}


def _known(mem: Memory, user_id: str, session_id: str) -> None:
    from ...errors import NotFoundError

    if session_id not in mem.sessions(user_id):
        raise NotFoundError(f"no session {session_id!r} for user {user_id!r}", field="session_id")
