"""Typed request and response bodies of the HTTP API (the OpenAPI schema at ``/docs`` is made
from them). Responses mirror the engine's value types (``MemoryRecord.to_dict`` and friends).

One shape throughout: a list is ``{"results": [...], "next": <cursor or null>}`` (give ``next``
back as ``cursor`` for the following page); a memory is always the same record, a search hit
being that record plus its scores. Every request body carries an example (``examples`` in its
schema), shown at ``/docs``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..limits import (
    CONTENT,
    ID,
    MAX_MESSAGES,
    MAX_RESULTS,
    MESSAGE,
    MESSAGES,
    QUERY,
    SKILL_FIELD,
    SKILL_STEPS,
    SKILL_TOOLS,
    schema,
)
from ..tools.models import MemoryTypeName  # one list of the memory types for the tools and the HTTP API
from .paging import MAX_CURSOR_CHARS


class Strict(BaseModel):
    """A request body: no unknown field, and no value of another JSON type converted (``"limit": "5"``
    is refused, as the Python API refuses it; an integer where a number is asked for is a number)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def examples(*bodies: dict[str, Any]) -> ConfigDict:
    """A request body's config with its examples (in the OpenAPI description)."""
    return ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": list(bodies)})


USER_ID = "Namespace (or ?user_id=, the same; default: the key's first namespace)"


class ChatMessage(Strict):
    role: str = Field(description="user | assistant | system | tool")
    content: str = Field(json_schema_extra=schema(MESSAGE))


class AddMemoryRequest(Strict):
    model_config = examples(
        {"user_id": "alice", "text": "I'm vegetarian and I love oolong tea", "metadata": {"topic": "food"}},
        {"user_id": "alice", "messages": [{"role": "user", "content": "我下个月搬去杭州"},
                                          {"role": "assistant", "content": "好的，我记住了。"}]},
        {"text": "Called the plumber about the leak", "note": True})
    user_id: str | None = Field(None, description=USER_ID)
    text: str | None = Field(None, description="One memory (give text or messages)", json_schema_extra=schema(CONTENT))
    messages: list[ChatMessage] | None = Field(
        None, description=f"Chat messages: episodic turns + extracted memories (at most {MAX_MESSAGES:,} per call; "
                          "more are refused with 413)", json_schema_extra=schema(MESSAGES))
    memory_type: MemoryTypeName | None = None
    importance: float | None = Field(None, ge=0, le=1)
    agent_id: str | None = Field(None, json_schema_extra=schema(ID))
    session_id: str | None = Field(None, json_schema_extra=schema(ID))
    structured_data: dict[str, Any] | None = Field(None, description="A JSON object (bounded: see the limits)")
    metadata: dict[str, Any] | None = Field(None, description="Keys added to the structured_data of every memory stored")
    infer: bool = True
    note: bool = Field(False, description="Append text to today's daily note instead of MEMORY.md")


class SearchRequest(Strict):
    model_config = examples({"user_id": "alice", "query": "what does she drink?", "limit": 5},
                            {"query": "旅行计划", "filters": {"topic": "travel"}, "memory_type": "event"})
    user_id: str | None = Field(None, description=USER_ID)
    query: str = Field(json_schema_extra=schema(QUERY))
    limit: int | None = Field(None, ge=1, le=MAX_RESULTS, description="Hits per page (default: the namespace's "
                              f"retrieve_limit); at most {MAX_RESULTS:,} hits in all pages together")
    cursor: str | None = Field(None, max_length=MAX_CURSOR_CHARS, description="The `next` of the previous page")
    memory_type: MemoryTypeName | None = None
    include_episodic: bool = True
    filters: dict[str, Any] | None = Field(None, description='Keep the hits that match, e.g. '
                                           '{"topic": "travel", "importance": {"gte": 0.7}} (see memfold.filters)')
    related: bool = Field(False, description="Give each hit its related memories (`related`)")


class SkillRequest(Strict):
    model_config = examples({"user_id": "alice", "name": "Publish the docs", "when_to_use": "after a release",
                             "steps": ["make docs", "rsync -a site/ web:/srv/docs"], "tools": ["make", "rsync"],
                             "outcome": "the new docs are online"},
                            {"name": "给客户发周报", "when_to_use": "每周五下班前", "steps": ["汇总本周进度", "发邮件"]})
    user_id: str | None = Field(None, description=USER_ID)
    name: str = Field(description="What the skill does, in a few words", json_schema_extra=schema(SKILL_FIELD))
    when_to_use: str | None = Field(None, description="The kind of task it is for",
                                    json_schema_extra=schema(SKILL_FIELD))
    steps: list[str] | None = Field(None, description=f"The steps that worked, in order (at most {SKILL_STEPS.limit})",
                                    json_schema_extra=schema(SKILL_STEPS))
    tools: list[str] | None = Field(None, description=f"The tools the steps use (at most {SKILL_TOOLS.limit})",
                                    json_schema_extra=schema(SKILL_TOOLS))
    outcome: str | None = Field(None, description="What it achieved", json_schema_extra=schema(SKILL_FIELD))
    importance: float | None = Field(None, ge=0, le=1)
    agent_id: str | None = None


RelationName = Literal["supports", "contradicts", "refines", "duplicates", "summarizes"]


class RelationRequest(Strict):
    model_config = examples({"user_id": "alice", "source_id": "m-7f3a", "target_id": "m-2b91", "relation": "supports",
                             "strength": 0.8})
    user_id: str | None = Field(None, description=USER_ID)
    source_id: str = Field(description="The memory the relation is from", json_schema_extra=schema(ID))
    target_id: str = Field(description="The memory it is about", json_schema_extra=schema(ID))
    relation: RelationName
    strength: float = Field(1.0, ge=0, le=1)


class UpdateMemoryRequest(Strict):
    model_config = examples({"user_id": "alice", "content": "I'm vegan since March", "importance": 0.8},
                            {"structured_data": {"topic": "food"}})
    user_id: str | None = Field(None, description=USER_ID)
    content: str | None = Field(None, json_schema_extra=schema(CONTENT))
    importance: float | None = Field(None, ge=0, le=1)
    memory_type: MemoryTypeName | None = None
    structured_data: dict[str, Any] | None = None


class ForgetRequest(Strict):
    model_config = examples({"user_id": "alice", "query": "oolong tea", "dry_run": True})
    user_id: str | None = Field(None, description=USER_ID)
    query: str = Field(description="A memory id, or words describing what to forget", json_schema_extra=schema(QUERY))
    dry_run: bool = False


class ImportRequest(Strict):
    model_config = examples({"records": [{"id": "m-7f3a", "user_id": "alice", "memory_type": "preference",
                                          "content": "I love oolong tea", "importance": 0.6,
                                          "created_at": "2026-03-01T09:30:00+00:00",
                                          "structured_data": {"topic": "food"}}]})
    records: list[dict[str, Any]] = Field(description="Records as `GET /v1/export` lists them (its `results`): "
                                          "each a memory record; `user_id` (default `default`) must be a "
                                          "namespace of the key, `id` is kept")


class Memory(BaseModel):
    id: str
    user_id: str
    memory_type: str
    kind: str = ""  # "turn" for a conversation turn, else the memory type
    content: str
    created_at: str
    updated_at: str
    importance: float
    confidence: float
    access_count: int
    last_accessed_at: str | None
    is_active: bool
    structured_data: dict[str, Any]
    source_ids: list[str]
    agent_id: str | None
    source_session_id: str | None
    superseded_by: str | None
    file: str
    context: str = ""


class Related(BaseModel):
    relation: str
    direction: str = Field(description='"to": the hit is the source of the relation; "from": the other memory is')
    strength: float
    id: str
    content: str
    kind: str
    is_active: bool


class Hit(Memory):
    score: float
    similarity: float
    relevance: float = 1.0
    related: list[Related] | None = None


class Relation(BaseModel):
    source_id: str
    target_id: str
    relation: str
    strength: float
    created_at: str


class Skill(BaseModel):
    id: str
    name: str
    when_to_use: str
    steps: list[str]
    tools: list[str]
    outcome: str
    successes: int
    last_success: str | None
    importance: float
    file: str


class AddResult(BaseModel):
    added: list[Memory]
    merged: list[Memory]
    skipped: list[str]
    refused: list[str]
    warnings: list[str]
    forgotten: list[Memory]
    redacted: list[str]
    completed: list[Memory] = []  # open todos the input said are done


class HistoryEntry(BaseModel):
    memory_id: str
    user_id: str
    action: str
    at: str
    old_content: str | None
    new_content: str | None
    detail: dict[str, Any]


class Page(BaseModel):
    next: str | None = Field(description="Give it as `cursor` for the next page; null: this was the last")


class MemoryPage(Page):
    results: list[Memory]


class HitPage(Page):
    results: list[Hit]


class HistoryPage(Page):
    results: list[HistoryEntry]


class SkillPage(Page):
    results: list["Skill"]


class RelatedPage(Page):
    results: list["Related"]


class ForgetResult(Page):
    results: list[Memory] = Field(description="The memories deleted (with dry_run: those that would be); "
                                  "all in one answer (next is null)")
    dry_run: bool


class ImportResult(BaseModel):
    imported: int


class ExportPage(Page):
    results: list[Memory]


class MemoryFile(BaseModel):
    user_id: str
    text: str


class SessionRequest(Strict):
    model_config = examples({"user_id": "alice", "session_id": "chat-2026-03-01", "agent_id": "helper"})
    user_id: str | None = Field(None, description=USER_ID)
    session_id: str = Field(json_schema_extra=schema(ID))
    agent_id: str | None = Field(None, json_schema_extra=schema(ID))


class SessionMessageRequest(Strict):
    model_config = examples({"user_id": "alice", "role": "user", "content": "Remind me what I said about Lyon"})
    user_id: str | None = Field(None, description=USER_ID)
    role: str
    content: str = Field(json_schema_extra=schema(MESSAGE))


class ContextRequest(Strict):
    model_config = examples({"user_id": "alice", "user_message": "What should I cook tonight?",
                             "base_prompt": "You are a helpful cook.", "agent_id": "helper"})
    user_id: str | None = Field(None, description=USER_ID)
    user_message: str = Field(description="The user's new message: the memory is searched with it, and it "
                              "ends the context")
    base_prompt: str | None = None
    agent_id: str | None = None
    memory_enabled: bool = True


class SessionInfo(BaseModel):
    session_id: str
    user_id: str
    agent_id: str | None
    messages: int
    summary_chars: int
    folds: int
    folded_messages: int
    dropped_messages: int
    total_messages: int
    tokens: int
    context_window: int
    created_at: str
    updated_at: str


class SessionView(BaseModel):
    info: SessionInfo
    summary: str
    messages: list[ChatMessage]


class SessionUpdate(BaseModel):
    summarized: bool
    reason: str
    folded: int
    dropped: int
    method: str
    notice: str | None
    errors: list[str]


class ContextMessages(BaseModel):
    messages: list[ChatMessage]


class SessionPage(Page):
    results: list[str] = Field(description="Session ids")


class Pins(BaseModel):
    agent_id: str
    recent_memories: list[str]


class PinPage(Page):
    results: list[Pins]


class ToolPage(Page):
    results: list[dict[str, Any]] = Field(description="The tools as an OpenAI `tools` list (pass it as is)")


class KeyInfo(BaseModel):
    key_id: str
    namespaces: list[str]
    scope: str
    name: str
    created_at: str
    revoked_at: str | None


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    index: str
    embedder: str
    detail: str = ""
