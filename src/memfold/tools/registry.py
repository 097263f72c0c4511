"""The one place a tool is defined: name, input model, result model, description (en, zh), handler.
The OpenAI and Anthropic schemas, the dispatcher, the chat and the MCP server all read ``TOOLS``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from . import handlers as h
from . import models as mo


@dataclass(frozen=True)
class Tool:
    name: str
    input: type[mo.ToolInput]
    result: type[BaseModel]
    description: dict[str, str]  # language -> text
    handler: Callable[[Any, Any, h.ToolContext], BaseModel]
    writes: bool  # changes memory (False: only reads)

    def describe(self, language: str = "en") -> str:
        return self.description.get(language) or self.description["en"]

    def summary(self, language: str = "en") -> str:
        """The first sentence of the description (the injected instructions list one per tool)."""
        text = self.describe(language)
        for stop in ("。", ". "):
            if stop in text:
                return text.split(stop, 1)[0] + stop.strip()
        return text


_ALL = [
    Tool("memory_search", mo.MemorySearchInput, mo.SearchResult, {
        "en": "Search long-term memory for what you need to know about the user. Returns the most relevant "
              "memories with their ids, types and scores.",
        "zh": "在长期记忆中查找关于用户的信息。返回最相关的记忆及其 id、类型和得分。",
    }, h.memory_search, False),
    Tool("memory_append", mo.MemoryAppendInput, mo.StoredResult, {
        "en": "Remember something now: append it to MEMORY.md (slot long_term) or to today's daily note "
              "(slot today). Use it as soon as the user asks you to remember something.",
        "zh": "立即记住一件事：追加到 MEMORY.md（slot 为 long_term）或今天的每日笔记（slot 为 today）。"
              "用户让你记住什么时马上使用。",
    }, h.memory_append, True),
    Tool("save_memory", mo.SaveMemoryInput, mo.StoredResult, {
        "en": "Save one typed memory (event, preference, fact, pattern, todo, note, skill) with its importance. "
              "A near-duplicate of an existing memory updates it instead of adding a copy. To save what you "
              "learned to do, use memory_type skill with its name as content, when_to_use, steps, tools and outcome.",
        "zh": "保存一条带类型（event、preference、fact、pattern、todo、note、skill）和重要程度的记忆。"
              "与已有记忆几乎相同时会更新原记忆，而不是重复添加。要保存学会的做法，用 memory_type skill，"
              "content 写技能名称，并填 when_to_use、steps、tools 和 outcome。",
    }, h.save_memory, True),
    Tool("skill_success", mo.SkillSuccessInput, mo.SkillResult, {
        "en": "Record that a skill from memory worked again: its success count goes up and today becomes its "
              "last success. Give the skill's id.",
        "zh": "记录记忆中的某个技能又一次成功：成功次数加一，最近成功日期记为今天。传入技能的 id。",
    }, h.skill_success, True),
    Tool("memory_relate", mo.MemoryRelateInput, mo.RelateResult, {
        "en": "Follow or record how memories relate: list the memories related to one (supports, contradicts, "
              "refines, duplicates, summarizes), add a relation between two, or remove one.",
        "zh": "查看或记录记忆之间的关系：列出与某条记忆相关的记忆（supports、contradicts、refines、duplicates、"
              "summarizes），在两条记忆之间添加关系，或删除关系。",
    }, h.memory_relate, True),
    Tool("memory_edit", mo.MemoryEditInput, mo.EditResult, {
        "en": "Edit your memory file by exact text replacement: old_text must occur exactly once in MEMORY.md, "
              "learnings.md or a daily note. Use it to correct, update or remove an entry (read the file first).",
        "zh": "按原文精确替换来编辑记忆文件：old_text 必须在 MEMORY.md、learnings.md 或每日笔记中恰好出现一次。"
              "用于更正、更新或删除一条记忆（先读取文件）。",
    }, h.memory_edit, True),
    Tool("memory_forget", mo.MemoryForgetInput, mo.ForgetResult, {
        "en": "Delete memories when the user asks you to forget something: by id, or every memory containing "
              "the given words. dry_run lists them without deleting.",
        "zh": "用户让你忘掉某事时删除记忆：按 id，或删除包含这些词语的所有记忆。dry_run 只列出不删除。",
    }, h.memory_forget, True),
    Tool("memory_read", mo.MemoryReadInput, mo.ReadResult, {
        "en": "Read your memory file (MEMORY.md by default), or one section of it, as it is now.",
        "zh": "读取当前的记忆文件（默认 MEMORY.md）或其中一节。",
    }, h.memory_read, False),
    Tool("write_file", mo.WriteFileInput, mo.StoredResult, {
        "en": "Write to MEMORY.md. The file is never overwritten: each new line is appended as a memory in the "
              "memory format. Any other path is refused.",
        "zh": "写入 MEMORY.md。文件不会被覆盖：每一行新内容都按记忆格式追加为一条记忆。其他路径会被拒绝。",
    }, h.write_file, True),
]
TOOLS: dict[str, Tool] = {t.name: t for t in _ALL}


def tool_names() -> list[str]:
    """Every tool's name, in the order they are offered."""
    return list(TOOLS)
