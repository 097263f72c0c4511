"""LlamaIndex pieces over memfold (``pip install memfold[llamaindex]``): ``MemfoldMemoryBlock``, a
long-term block of LlamaIndex's ``Memory`` for its agents and chat engines, and ``MemfoldRetriever``,
memfold's search as a retriever (for ``ContextChatEngine``, query engines)."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import BaseMemoryBlock
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import Field

from ..models import SearchHit

_ROLES = {MessageRole.USER: "user", MessageRole.ASSISTANT: "assistant", MessageRole.SYSTEM: "system"}


def _node(hit: SearchHit) -> NodeWithScore:
    r = hit.record
    return NodeWithScore(node=TextNode(id_=r.id, text=r.content, metadata={
        "memory_type": r.memory_type.value, "created_at": r.created_at.isoformat(), "importance": r.importance,
        "user_id": r.user_id}), score=hit.score)


class MemfoldMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for LlamaIndex's ``Memory``: messages the short-term memory lets go are
    stored in memfold (turns and what memfold extracts from them); each ``get`` searches memfold
    with the latest user message and lists what it found. ``memory``: a memfold ``Memory`` (or
    ``Client``)."""

    name: str = "memfold"
    description: str | None = "What is remembered about the user from earlier conversations"
    memory: Any = Field(description="A memfold Memory (or Client)")
    user_id: str = "default"
    limit: int = Field(5, ge=1, le=100)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = next((m.content for m in reversed(messages or []) if m.role == MessageRole.USER and m.content), None)
        if not query:
            return ""
        hits = await asyncio.to_thread(self.memory.search, query, self.user_id, limit=self.limit)
        return "\n".join(f"- {h.record.content}" for h in hits)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        turns = [{"role": _ROLES[m.role], "content": m.content} for m in messages
                 if m.role in _ROLES and isinstance(m.content, str) and m.content.strip()]
        if turns:
            await asyncio.to_thread(self.memory.add, turns, self.user_id)


class MemfoldRetriever(BaseRetriever):
    """memfold's search as a LlamaIndex retriever (nodes scored by memfold's ranking score)."""

    def __init__(self, memory: Any, user_id: str = "default", similarity_top_k: int = 4,
                 filters: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.memory, self.user_id, self.similarity_top_k, self.filters = memory, user_id, similarity_top_k, filters

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.memory.search(query_bundle.query_str, self.user_id, limit=self.similarity_top_k,
                                  filters=self.filters)
        return [_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)
