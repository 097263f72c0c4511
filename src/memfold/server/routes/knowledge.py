"""``/v1/skills`` (skills in learnings.md), ``/v1/relations`` and ``/v1/memories/{id}/relations``
(relations between memories), ``/v1/usage`` (what searches used)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from ...facade.memory import Memory
from ...facade.relations import related
from ...limits import MAX_ID_CHARS
from .. import models as m
from .. import paging
from ..auth import Caller, caller
from .memories import UserQuery, memory, one_user

router = APIRouter(prefix="/v1", tags=["skills, relations, usage"])


@router.get("/skills", response_model=m.SkillPage)
def list_skills(user_id: str | None = UserQuery, limit: int = paging.LimitQuery, cursor: str | None = paging.CursorQuery,
                c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The namespace's skills with their fields, most successful first (paged)."""
    return paging.page_of("skills", mem.skills(c.user(user_id, "read")), limit, cursor)


@router.post("/skills", response_model=m.AddResult)
def add_skill(body: m.SkillRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
              mem: Memory = Depends(memory)) -> Any:
    """Save a skill (name, when to use, steps, tools, outcome) in learnings.md."""
    uid = c.user(one_user(user_id, body.user_id), "write")
    return mem.add_skill(body.name, uid, when_to_use=body.when_to_use, steps=body.steps, tools=body.tools,
                         outcome=body.outcome, importance=body.importance, agent_id=body.agent_id).to_dict()


@router.post("/skills/{skill_id}/success", response_model=m.Memory)
def skill_success(skill_id: str, user_id: str | None = UserQuery, c: Caller = Depends(caller),
                  mem: Memory = Depends(memory)) -> Any:
    """Record that a skill worked again (its success count and last success)."""
    return mem.skill_succeeded(skill_id, c.user(user_id, "write")).to_dict()


@router.get("/memories/{memory_id}/relations", response_model=m.RelatedPage)
def relations(memory_id: str, user_id: str | None = UserQuery, limit: int = paging.LimitQuery,
              cursor: str | None = paging.CursorQuery, c: Caller = Depends(caller),
              mem: Memory = Depends(memory)) -> Any:
    """The memories related to one, strongest first, with their words (paged)."""
    uid = c.user(user_id, "read")
    mem.get(memory_id, uid)  # 404 for an id the namespace does not hold
    return paging.page("relations", lambda n, off: related(mem.index, uid, memory_id, limit=n + off)[off:],
                       limit, cursor)


@router.post("/relations", response_model=m.Relation)
def add_relation(body: m.RelationRequest, user_id: str | None = UserQuery, c: Caller = Depends(caller),
                 mem: Memory = Depends(memory)) -> Any:
    """Record a relation between two memories of the namespace (again: its strength is replaced)."""
    uid = c.user(one_user(user_id, body.user_id), "write")
    return mem.relate(body.source_id, body.target_id, body.relation, uid, strength=body.strength)


@router.delete("/relations", response_model=dict[str, int])
def remove_relation(source_id: str = Query(..., max_length=MAX_ID_CHARS), target_id: str = Query(..., max_length=MAX_ID_CHARS),
                    relation: m.RelationName | None = None, user_id: str | None = UserQuery,
                    c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """Delete the relations from one memory to another (of one kind, or every kind)."""
    return {"removed": mem.unrelate(source_id, target_id, relation, c.user(user_id, "write"))}


@router.get("/usage", response_model=dict[str, Any])
def usage(user_id: str | None = UserQuery, c: Caller = Depends(caller), mem: Memory = Depends(memory)) -> Any:
    """The usage record read back: the memories searches returned most, the queries that found nothing."""
    return mem.usage(c.user(user_id, "read"))
