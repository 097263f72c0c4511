"""LangChain pieces against the real ``langchain-core``: the retriever passes ``langchain-tests``'
standard retriever tests, and memfold's agent tools work as LangChain tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memfold import Memory

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.tools import BaseTool  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from memfold.integrations.langchain import MemfoldRetriever, memory_tools  # noqa: E402

from ..conftest import _EMBEDDER  # noqa: E402

TEA = ["I prefer green tea over coffee", "My sister drinks oolong tea every morning",
       "Jasmine tea reminds me of my grandmother", "We bought a cast-iron tea pot in Kyoto",
       "我每天下午都喝一杯普洱茶", "The tea shop on Rue Mouffetard closes at seven"]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory):
    m = Memory(root=tmp_path_factory.mktemp("lc") / "ws", embedder=_EMBEDDER)
    for t in TEA:
        m.add(t, "alice", metadata={"topic": "tea"})
    m.add("I walk the dog at six", "alice", metadata={"topic": "dog"})
    yield m
    m.close()


@pytest.mark.asyncio  # its async test runs on pytest-asyncio (installed with langchain-tests)
@pytest.mark.filterwarnings("ignore:The test .* is marked with '@pytest.mark.asyncio' but it is not an async")
class TestMemfoldRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _memory(self, filled: Memory) -> None:
        type(self).memory = filled

    @property
    def retriever_constructor(self) -> type[MemfoldRetriever]:
        return MemfoldRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": type(self).memory, "user_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "what kind of tea do they drink"


def test_documents_carry_what_memfold_knows(filled: Memory):
    r = MemfoldRetriever(memory=filled, user_id="alice", k=3)
    docs = r.invoke("green tea")
    assert isinstance(docs[0], Document) and docs[0].page_content == TEA[0] and docs[0].id
    assert docs[0].metadata["memory_type"] and docs[0].metadata["structured_data"]["topic"] == "tea"
    assert [d.page_content for d in r.invoke("walk", filters={"topic": "dog"})] == ["I walk the dog at six"]
    assert asyncio.run(r.ainvoke("普洱茶", k=1))[0].page_content == TEA[4]


def test_the_memory_tools_as_langchain_tools(mem: Memory, root: Path):
    tools = {t.name: t for t in memory_tools(mem, user_id="bob")}
    assert {"memory_search", "memory_append", "save_memory", "memory_edit"} <= set(tools)
    assert all(isinstance(t, BaseTool) and t.description for t in tools.values())
    saved = json.loads(tools["save_memory"].invoke({"content": "Bob is allergic to peanuts", "memory_type": "fact",
                                                   "importance": 0.9}))
    assert "error" not in saved, saved
    found = json.loads(tools["memory_search"].invoke({"query": "allergies"}))
    assert "peanuts" in json.dumps(found)
    bad = json.loads(tools["memory_edit"].invoke({"path": "MEMORY.md", "old_text": "not there", "new_text": "x"}))
    assert bad["error"]["code"] == "no_match"
    out = asyncio.run(tools["memory_search"].ainvoke({"query": "peanuts"}))
    assert "peanuts" in out
    assert "peanuts" in mem.show("bob")
