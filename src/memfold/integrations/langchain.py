"""LangChain pieces over memfold (``pip install memfold[langchain]``): ``MemfoldRetriever`` (memfold's
hybrid search as a retriever) and ``memory_tools`` (memfold's agent tools as LangChain tools)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ConfigDict, Field

from ..facade.memory import Memory
from ..models import SearchHit
from ..tools.dispatch import MemoryTools
from ..tools.registry import TOOLS


def document(hit: SearchHit) -> Document:
    """A search hit as a LangChain ``Document``: the memory's words, its id, and what memfold knows of it."""
    r = hit.record
    return Document(page_content=r.content, id=r.id, metadata={
        "id": r.id, "user_id": r.user_id, "memory_type": r.memory_type.value, "score": round(hit.score, 6),
        "relevance": round(hit.relevance, 4), "importance": r.importance, "created_at": r.created_at.isoformat(),
        "updated_at": r.updated_at.isoformat(), "structured_data": dict(r.structured_data), "agent_id": r.agent_id})


class MemfoldRetriever(BaseRetriever):
    """memfold's search as a LangChain retriever: ``MemfoldRetriever(memory=m, user_id="alice", k=4)``;
    ``k`` and ``filters`` may also be given to ``invoke``. ``memory`` is a ``Memory`` (or an
    ``AsyncMemory``'s ``.memory``, or anything with the same ``search``, such as ``memfold.Client``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(description="A memfold Memory (or Client)")
    user_id: str = "default"
    k: int = Field(4, ge=1, le=1000)
    filters: dict[str, Any] | None = None
    include_episodic: bool = True

    def _search(self, query: str, k: int | None, filters: dict[str, Any] | None) -> list[Document]:
        hits = self.memory.search(query, self.user_id, limit=k or self.k,
                                  filters=filters if filters is not None else self.filters,
                                  include_episodic=self.include_episodic)
        return [document(h) for h in hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, filters: dict[str, Any] | None = None) -> list[Document]:
        return self._search(query, k, filters)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, filters: dict[str, Any] | None = None) -> list[Document]:
        return await asyncio.to_thread(self._search, query, k, filters)


def memory_tools(memory: Memory, user_id: str = "default", agent_id: str | None = None,
                 language: str | None = None) -> list[BaseTool]:
    """memfold's agent tools (``memory_search``, ``memory_append``, ``save_memory``, …) bound to one
    namespace, as LangChain tools: each takes its typed arguments and returns the tool's JSON result
    (an error result, not an exception, when a call fails, so the model can read it and correct
    itself). None when memory is off for the namespace."""
    bound = MemoryTools(memory, user_id=user_id, agent_id=agent_id, language=language)
    out: list[BaseTool] = []
    for name in bound.names:
        tool = TOOLS[name]

        def run(_name: str = name, **arguments: Any) -> str:
            return json.dumps(bound.call(_name, arguments), ensure_ascii=False)

        async def arun(_name: str = name, **arguments: Any) -> str:
            return await asyncio.to_thread(run, _name, **arguments)

        out.append(StructuredTool.from_function(func=run, coroutine=arun, name=name,
                                                description=tool.describe(bound.language), args_schema=tool.input))
    return out
