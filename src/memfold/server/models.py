"""Typed request and response bodies of the HTTP API (the OpenAPI schema at ``/docs`` is made
from them). Responses mirror the engine's value types (``MemoryRecord.to_dict`` and friends)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..limits import MAX_MESSAGES, MAX_RESULTS
from ..tools.models import MemoryTypeName  # one list of the memory types for the tools and the HTTP API


class Strict(BaseModel):
    """A request body: no unknown field, and no value of another JSON type converted (``"limit": "5"``
    is refused, as the Python API refuses it; an integer where a number is asked for is a number)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ChatMessage(Strict):
    role: str = Field(description="user | assistant | system | tool")
    content: str


class AddMemoryRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    text: str | None = Field(None, description="One memory (give text or messages)")
    messages: list[ChatMessage] | None = Field(
        None, description=f"Chat messages: episodic turns + extracted memories (at most {MAX_MESSAGES:,} per call; "
                          "more are refused with 413)", json_schema_extra={"maxItems": MAX_MESSAGES})
    memory_type: MemoryTypeName | None = None
    importance: float | None = Field(None, ge=0, le=1)
    agent_id: str | None = None
    session_id: str | None = None
    structured_data: dict[str, Any] | None = Field(None, description="A JSON object (bounded: see the limits)")
    metadata: dict[str, Any] | None = Field(None, description="Keys added to the structured_data of every memory stored")
    infer: bool = True
    note: bool = Field(False, description="Append text to today's daily note instead of MEMORY.md")


class SearchRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    query: str
    limit: int | None = Field(None, ge=1, le=MAX_RESULTS)
    memory_type: MemoryTypeName | None = None
    include_episodic: bool = True
    filters: dict[str, Any] | None = Field(None, description='Keep the hits that match, e.g. '
                                           '{"topic": "travel", "importance": {"gte": 0.7}} (see memfold.filters)')
    related: bool = Field(False, description="Give each hit its related memories (`related`)")


class SkillRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    name: str = Field(description="What the skill does, in a few words")
    when_to_use: str | None = Field(None, description="The kind of task it is for")
    steps: list[str] | None = Field(None, description="The steps that worked, in order (at most 50)")
    tools: list[str] | None = Field(None, description="The tools the steps use (at most 20)")
    outcome: str | None = Field(None, description="What it achieved")
    importance: float | None = Field(None, ge=0, le=1)
    agent_id: str | None = None


RelationName = Literal["supports", "contradicts", "refines", "duplicates", "summarizes"]


class RelationRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    source_id: str = Field(description="The memory the relation is from")
    target_id: str = Field(description="The memory it is about")
    relation: RelationName
    strength: float = Field(1.0, ge=0, le=1)


class UpdateMemoryRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    content: str | None = None
    importance: float | None = Field(None, ge=0, le=1)
    memory_type: MemoryTypeName | None = None
    structured_data: dict[str, Any] | None = None


class ForgetRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    query: str = Field(description="A memory id, or words describing what to forget")
    dry_run: bool = False


class ImportRequest(Strict):
    records: list[dict[str, Any]] = Field(description="Records as written by export")


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


class MemoryList(BaseModel):
    memories: list[Memory]
    limit: int | None
    offset: int


class ForgetResult(BaseModel):
    dry_run: bool
    memories: list[Memory]


class ImportResult(BaseModel):
    imported: int


class ExportResult(BaseModel):
    records: list[dict[str, Any]]


class MemoryFile(BaseModel):
    user_id: str
    text: str


class SessionRequest(Strict):
    session_id: str
    agent_id: str | None = None


class SessionMessageRequest(Strict):
    role: str
    content: str


class ContextRequest(Strict):
    user_id: str | None = Field(None, description="Namespace (or ?user_id=; default: the key's first namespace)")
    user_message: str
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


class SessionList(BaseModel):
    sessions: list[str]


class Pins(BaseModel):
    agent_id: str
    recent_memories: list[str]


class PinLists(BaseModel):
    agents: list[Pins]


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
