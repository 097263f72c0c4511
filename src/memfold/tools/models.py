"""The typed input and result of every tool (pydantic v2). The input models are the single source
of the JSON schemas given to models (OpenAI, Anthropic, MCP); each field's description is in
English, with the Chinese one under ``json_schema_extra={"zh": ...}`` (``schemas.py`` picks one)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..limits import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_SECTION_CHARS,
    MAX_TOOL_RESULTS,
    SKILL_FIELD,
    SKILL_STEPS,
    SKILL_TOOLS,
)
from ..models import MemoryRecord, SearchHit

MemoryTypeName = Literal["event", "preference", "fact", "pattern", "todo", "note", "skill"]


def _f(default: Any, en: str, zh: str, **kw: Any) -> Any:
    return Field(default, description=en, json_schema_extra={"zh": zh}, **kw)


class ToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class MemorySearchInput(ToolInput):
    query: str = _f(..., "Keywords or a question about what to look up.", "要查找的关键词或问题。",
                    min_length=1, max_length=MAX_QUERY_CHARS)
    limit: int = _f(10, f"How many memories to return (1-{MAX_TOOL_RESULTS}).",
                    f"返回的记忆条数（1-{MAX_TOOL_RESULTS}）。", ge=1, le=MAX_TOOL_RESULTS)
    memory_type: MemoryTypeName | None = _f(None, "Only memories of this type.", "只返回这种类型的记忆。")


class MemoryAppendInput(ToolInput):
    content: str = _f(..., "What to remember, one self-contained statement.", "要记住的内容，一条完整的陈述。",
                      min_length=1, max_length=MAX_CONTENT_CHARS)
    slot: Literal["long_term", "today"] = _f(
        "long_term", "long_term: MEMORY.md (lasting facts, preferences, events, todos); today: today's daily note.",
        "long_term：写入 MEMORY.md（长期的事实、偏好、事件、待办）；today：写入今天的每日笔记。")
    memory_type: MemoryTypeName | None = _f(None, "The kind of memory (long_term only; guessed when omitted).",
                                            "记忆类型（仅 long_term；不填则自动判断）。")
    importance: float | None = _f(None, "How important it is, 0 to 1 (long_term only).", "重要程度，0 到 1（仅 long_term）。",
                                  ge=0.0, le=1.0)


class SaveMemoryInput(ToolInput):
    content: str = _f(..., "The memory, one self-contained statement (for a skill: its name, what it does).",
                      "记忆内容，一条完整的陈述（技能：它的名称，做什么）。", min_length=1, max_length=MAX_CONTENT_CHARS)
    memory_type: MemoryTypeName = _f(..., "The kind of memory.", "记忆类型。")
    importance: float = _f(0.5, "How important it is, 0 to 1.", "重要程度，0 到 1。", ge=0.0, le=1.0)
    when_to_use: str | None = _f(None, "skill only: the kind of task it is for.", "仅技能：适用于什么任务。",
                                 max_length=SKILL_FIELD.limit)
    steps: list[str] | None = _f(None, "skill only: the steps that worked, in order.", "仅技能：有效的步骤，按顺序。",
                                 max_length=SKILL_STEPS.limit)
    tools: list[str] | None = _f(None, "skill only: the tools the steps use.", "仅技能：这些步骤用到的工具。",
                                 max_length=SKILL_TOOLS.limit)
    outcome: str | None = _f(None, "skill only: what it achieved.", "仅技能：达成的结果。", max_length=SKILL_FIELD.limit)


class SkillSuccessInput(ToolInput):
    memory_id: str = _f(..., "The id of the skill that was just used successfully.", "刚刚成功使用的技能的 id。",
                        min_length=1, max_length=MAX_ID_CHARS)


class MemoryRelateInput(ToolInput):
    action: Literal["add", "remove", "list"] = _f(
        "list", "add: record that memory_id relates to other_id; remove: delete such relations; list: the relations "
        "of memory_id with the other memories' words.",
        "add：记录 memory_id 与 other_id 的关系；remove：删除这种关系；list：列出 memory_id 的关系及相关记忆的内容。")
    memory_id: str = _f(..., "The memory the relation is from (list: the memory to look at).",
                        "关系的出发记忆（list：要查看的记忆）。", min_length=1, max_length=MAX_ID_CHARS)
    other_id: str | None = _f(None, "add/remove: the memory it is about.", "add/remove：关系指向的记忆。",
                              max_length=MAX_ID_CHARS)
    relation: Literal["supports", "contradicts", "refines", "duplicates", "summarizes"] | None = _f(
        None, "add: the kind of relation (remove: only this kind; default every kind).",
        "add：关系类型（remove：只删除这一种，默认全部）。")
    strength: float = _f(1.0, "add: how strong, 0 to 1.", "add：强度，0 到 1。", ge=0.0, le=1.0)


class MemoryEditInput(ToolInput):
    path: str = _f(..., "MEMORY.md, learnings.md or memory/YYYYMM/YYYYMMDD.md (your own files only).",
                   "MEMORY.md、learnings.md 或 memory/YYYYMM/YYYYMMDD.md（只能是你自己的文件）。",
                   min_length=1, max_length=MAX_PATH_CHARS)
    old_text: str = _f(..., "The exact text to replace; it must occur exactly once in the file.",
                       "要替换的原文，必须与文件中的文字完全一致且只出现一次。", min_length=1, max_length=MAX_CONTENT_CHARS)
    new_text: str = _f(..., "The text to put in its place (empty to delete it).", "替换后的文字（为空则删除原文）。",
                       max_length=MAX_CONTENT_CHARS)


class MemoryForgetInput(ToolInput):
    query_or_id: str = _f(..., "A memory id, or words that every memory to delete contains.",
                          "记忆 id，或要删除的记忆包含的词语。", min_length=1, max_length=MAX_QUERY_CHARS)
    dry_run: bool = _f(False, "Only list what would be deleted.", "只列出会被删除的记忆，不真正删除。")


class MemoryReadInput(ToolInput):
    path: str | None = _f(None, "MEMORY.md (default), learnings.md or memory/YYYYMM/YYYYMMDD.md.",
                          "MEMORY.md（默认）、learnings.md 或 memory/YYYYMM/YYYYMMDD.md。", max_length=MAX_PATH_CHARS)
    section: str | None = _f(None, "Only this section, by its heading (e.g. 'Todos & Commitments').",
                             "只读这一节，按标题（如 '待办与承诺'）。", max_length=MAX_SECTION_CHARS)


class WriteFileInput(ToolInput):
    path: str = _f(..., "Must be MEMORY.md: the new lines are appended as memories (nothing is overwritten).",
                   "必须是 MEMORY.md：新的内容会作为记忆追加（不会覆盖原文件）。", min_length=1, max_length=MAX_PATH_CHARS)
    content: str = _f(..., "The text to write.", "要写入的文字。", min_length=1, max_length=MAX_CONTENT_CHARS)


# ---- results ----------------------------------------------------------------------------
class ToolResult(BaseModel):
    ok: bool = True


class MemoryItem(BaseModel):
    id: str
    content: str
    memory_type: str
    kind: str  # what the item is: "turn" (a conversation turn), else its memory type
    importance: float
    created_at: str
    file: str  # MEMORY.md, learnings.md, memory/YYYYMM/YYYYMMDD.md, or "" for a conversation turn

    @classmethod
    def of(cls, r: MemoryRecord) -> "MemoryItem":
        return cls(id=r.id, content=r.content, memory_type=r.memory_type.value, kind=r.kind, importance=r.importance,
                   created_at=r.created_at.isoformat(), file=r.file)


class SearchItem(MemoryItem):
    score: float

    @classmethod
    def hit(cls, h: SearchHit) -> "SearchItem":
        return cls(**MemoryItem.of(h.record).model_dump(), score=round(float(h.score), 4))


class SearchResult(ToolResult):
    results: list[SearchItem]


class SkillResult(ToolResult):
    id: str
    name: str
    successes: int
    last_success: str | None


class RelatedItem(BaseModel):
    relation: str
    direction: str  # "to": memory_id is the source; "from": the other memory is
    strength: float
    id: str
    content: str
    kind: str
    is_active: bool


class RelateResult(ToolResult):
    memory_id: str
    added: bool = False
    removed: int = 0
    related: list[RelatedItem] = []


class StoredResult(ToolResult):
    stored: list[MemoryItem]  # new memories
    merged: list[MemoryItem] = []  # existing memories that absorbed the content
    completed: list[MemoryItem] = []  # open todos the content said are done (closed, not stored again)
    slot: str = "long_term"
    redirected_to: str | None = None  # write_file: the file its lines were appended to, as memories
    notes: list[str] = []  # skipped or redacted pieces, warnings


class EditResult(ToolResult):
    path: str
    added: list[str]
    updated: list[str]
    removed: list[str]
    redacted: bool = False


class ForgetResult(ToolResult):
    dry_run: bool
    forgotten: list[MemoryItem]


class ReadResult(ToolResult):
    path: str
    exists: bool
    section: str | None
    text: str
    truncated: bool
    sections: list[str]


class ErrorInfo(BaseModel):
    code: str
    message: str
    field: str | None = None  # the argument at fault, when one is


class ErrorResult(BaseModel):
    ok: bool = False
    error: ErrorInfo
