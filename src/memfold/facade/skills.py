"""Skills as use cases: save one with its steps, record that it worked, list them
(``text/skills.py`` holds their format in ``learnings.md``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..models import AddResult, MemoryRecord, MemoryType, utcnow
from ..text import skills as sk

if TYPE_CHECKING:
    from .memory import Memory


def add_skill(memory: "Memory", user_id: str, name: str, *, when_to_use: str | None = None, steps: Any = None,
              tools: Any = None, outcome: str | None = None, importance: float | None = None,
              agent_id: str | None = None) -> AddResult:
    """Store a skill in the skills section of ``learnings.md`` (a near-duplicate skill is updated
    instead of copied)."""
    skill = sk.make(name, when_to_use=when_to_use, steps=steps, tools=tools, outcome=outcome)
    text = sk.render(skill, memory.language(user_id))
    return memory.add(text, user_id, memory_type=MemoryType.SKILL, importance=importance, agent_id=agent_id,
                      infer=False)


def skill_succeeded(memory: "Memory", memory_id: str, user_id: str | None, when: datetime | None = None) -> MemoryRecord:
    """Count one more success of a skill (its ``Successes`` line: count and last day)."""
    r = memory.get(memory_id, user_id, include_archived=False)
    if r.memory_type is not MemoryType.SKILL:
        raise InvalidInputError(f"memory {memory_id!r} is a {r.memory_type.value}, not a skill; only a skill's "
                                "successes are counted")
    day = (when or utcnow()).date().isoformat()
    text = sk.with_success(r.content, day, memory.language(r.user_id))
    # the structure stays as it was: the new day in the text is no date of the skill's
    return memory.update(r.id, r.user_id, content=text, structured_data=dict(r.structured_data))


def skills(memory: "Memory", user_id: str) -> list[dict[str, Any]]:
    """Every skill of the namespace with its fields, most successful first."""
    rows = memory.get_all(user_id, memory_type=MemoryType.SKILL.value, include_episodic=False, limit=None)
    out = [{"id": r.id, **sk.parse(r.content).to_dict(), "importance": r.importance, "file": r.file} for r in rows]
    out.sort(key=lambda d: d["last_success"] or "", reverse=True)
    out.sort(key=lambda d: -d["successes"])
    return out
