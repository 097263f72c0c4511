"""Relations between memories as use cases: add, remove, and the related memories of search hits.

They live in the index beside the rows (``relations`` / ``memory_relations``), not in the files:
a reindex keeps those whose two memories are still there (``UserStore.reindex``), an export
carries them (``relations`` of each record) and an import restores them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..index.base import Index
from ..models import SearchHit

if TYPE_CHECKING:
    from .memory import Memory

KINDS = ("supports", "contradicts", "refines", "duplicates", "summarizes")
RELATED_PER_HIT = 5  # related memories shown with one hit, strongest first


def check_kind(relation: Any, allow_none: bool = False) -> str | None:
    if relation is None and allow_none:
        return None
    if not isinstance(relation, str) or relation.strip().lower() not in KINDS:
        raise InvalidInputError(f"unknown relation {relation!r}; use one of: {', '.join(KINDS)}")
    return relation.strip().lower()


def relate(memory: "Memory", user_id: str, source_id: str, target_id: str, relation: str,
           strength: float) -> dict[str, Any]:
    kind = check_kind(relation)
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not 0.0 <= float(strength) <= 1.0:
        raise InvalidInputError(f"strength must be a number from 0 to 1, got {strength!r}", field="strength")
    if source_id == target_id:
        raise InvalidInputError("a memory cannot be related to itself; give two different ids")
    for mid in (source_id, target_id):
        memory.get(mid, user_id)  # NotFoundError naming the id that is not in the namespace
    assert kind is not None
    memory.index.add_relation(user_id, source_id, target_id, kind, round(float(strength), 4))
    return next(r for r in memory.index.relations(user_id, source_id)
                if r["target_id"] == target_id and r["relation"] == kind)


def unrelate(memory: "Memory", user_id: str, source_id: str, target_id: str, relation: str | None) -> int:
    return memory.index.remove_relation(user_id, source_id, target_id, check_kind(relation, allow_none=True))


def related(index: Index, user_id: str, memory_id: str, limit: int = RELATED_PER_HIT) -> list[dict[str, Any]]:
    """The memories related to ``memory_id``: relation, direction (``to`` when this memory is the
    source), strength, and the other memory's id, words, type and whether it is still active."""
    rels = sorted(index.relations(user_id, memory_id), key=lambda r: -float(r["strength"]))
    others = {r["target_id"] if r["source_id"] == memory_id else r["source_id"] for r in rels}
    rows = {r.id: r for r in index.get(user_id, sorted(others))}
    out: list[dict[str, Any]] = []
    for r in rels:
        other = r["target_id"] if r["source_id"] == memory_id else r["source_id"]
        got = rows.get(other)
        if got is None:
            continue
        out.append({"relation": r["relation"], "direction": "to" if r["source_id"] == memory_id else "from",
                    "strength": float(r["strength"]), "id": other, "content": got.content, "kind": got.kind,
                    "is_active": got.is_active})
        if len(out) >= limit:
            break
    return out


def with_related(index: Index, user_id: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
    return [replace(h, related=tuple(related(index, user_id, h.record.id))) for h in hits]
