"""The LangGraph store kept in memfold, against the real ``langgraph`` package: put / get / search /
delete / list_namespaces, sync and async, and as a compiled graph's ``store=``."""

from __future__ import annotations

import asyncio
from typing import TypedDict

import pytest

from memfold import Memory
from memfold.errors import InvalidInputError

pytest.importorskip("langgraph")

from langgraph.config import get_store  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from memfold.integrations.langgraph import MemfoldStore  # noqa: E402


@pytest.fixture
def store(mem: Memory):
    s = MemfoldStore(mem)
    yield s
    s.close()


def test_put_get_search_delete(store: MemfoldStore, mem: Memory):
    store.put(("alice", "memories"), "tea", {"text": "I prefer green tea over coffee", "kind": "preference", "n": 3})
    store.put(("alice", "memories"), "hike", {"text": "我喜欢在周末去爬山", "kind": "hobby", "n": 7})
    store.put(("alice", "profile"), "name", {"text": "My name is Alice Chen"})
    store.put(("bob", "memories"), "tea", {"text": "Bob likes green tea too", "kind": "preference"})
    got = store.get(("alice", "memories"), "tea")
    assert got is not None and got.value == {"text": "I prefer green tea over coffee", "kind": "preference", "n": 3}
    assert got.namespace == ("alice", "memories") and got.key == "tea"
    assert store.get(("alice", "memories"), "nope") is None
    hits = store.search(("alice",), query="which tea does she prefer")
    assert hits[0].key == "tea" and hits[0].namespace == ("alice", "memories") and hits[0].score is not None
    assert {h.namespace[0] for h in store.search(("alice",), query="green tea")} == {"alice"}
    assert [h.key for h in store.search(("alice", "memories"), query="爬山")][0] == "hike"
    assert [h.key for h in store.search(("alice",), filter={"kind": "hobby"})] == ["hike"]
    assert [h.key for h in store.search(("alice",), filter={"n": {"$gte": 5}})] == ["hike"]
    assert len(store.search(("alice",))) == 3 and len(store.search(("alice",), limit=1, offset=1)) == 1
    # a put of the same key replaces the item; near-duplicate values of two keys stay two items
    store.put(("alice", "memories"), "tea", {"text": "I prefer oolong tea now", "kind": "preference", "n": 4})
    store.put(("bob", "memories"), "tea2", {"text": "Bob likes green tea too", "kind": "preference"})
    assert store.get(("alice", "memories"), "tea").value["text"] == "I prefer oolong tea now"  # type: ignore[union-attr]
    assert len(store.search(("bob",))) == 2
    assert "I prefer oolong tea now" in mem.show("langgraph")  # a line of MEMORY.md, readable and editable
    store.delete(("alice", "memories"), "tea")
    assert store.get(("alice", "memories"), "tea") is None
    assert sorted(store.list_namespaces()) == [("alice", "memories"), ("alice", "profile"), ("bob", "memories")]
    assert store.list_namespaces(prefix=("alice",)) == [("alice", "memories"), ("alice", "profile")]
    assert store.list_namespaces(suffix=("memories",)) == [("alice", "memories"), ("bob", "memories")]
    assert store.list_namespaces(max_depth=1) == [("alice",), ("bob",)]
    assert store.list_namespaces(prefix=("*", "profile")) == [("alice", "profile")]


def test_index_fields_choose_the_words(mem: Memory):
    s = MemfoldStore(mem, user_id="docs", index_fields=["summary"])
    s.put(("docs",), "a", {"summary": "How to brew oolong tea", "body": "unrelated words about trains"})
    s.put(("docs",), "b", {"summary": "Train timetables", "body": "oolong"}, index=["body"])
    assert mem.get_all("docs")[0].content == "How to brew oolong tea"
    assert mem.get_all("docs")[1].content == "oolong"
    with pytest.raises(InvalidInputError, match="_lg_"):
        s.put(("docs",), "c", {"_lg_key": "x"})
    s.close()


def test_async_methods(store: MemfoldStore):
    async def main() -> None:
        await asyncio.gather(*(store.aput(("u", str(i % 3)), f"k{i}", {"text": f"fact number {i} about tea"})
                               for i in range(9)))
        assert (await store.aget(("u", "1"), "k4")).value == {"text": "fact number 4 about tea"}  # type: ignore[union-attr]
        assert len(await store.asearch(("u",), limit=20)) == 9
        assert (await store.asearch(("u", "2"), query="fact number 5 about tea"))[0].key == "k5"
        await store.adelete(("u", "0"), "k0")
        assert await store.alist_namespaces(prefix=("u",)) == [("u", "0"), ("u", "1"), ("u", "2")]
        assert len(await store.asearch(("u", "0"))) == 2
    asyncio.run(main())


class State(TypedDict):
    user: str
    message: str
    recalled: list[str]


def remember(state: State) -> dict:
    get_store().put((state["user"], "memories"), str(len(state["message"])), {"text": state["message"]})
    return {}


def recall(state: State) -> dict:
    found = get_store().search((state["user"], "memories"), query=state["message"], limit=3)
    return {"recalled": [i.value["text"] for i in found]}


async def arecall(state: State) -> dict:
    found = await get_store().asearch((state["user"], "memories"), query=state["message"], limit=3)
    return {"recalled": [i.value["text"] for i in found]}


def _graph(recall_node) -> StateGraph:  # type: ignore[no-untyped-def]
    g = StateGraph(State)
    g.add_node("remember", remember)
    g.add_node("recall", recall_node)
    g.add_edge(START, "remember")
    g.add_edge("remember", "recall")
    g.add_edge("recall", END)
    return g


def test_a_compiled_graph_uses_it_as_its_store(store: MemfoldStore):
    app = _graph(recall).compile(store=store)
    app.invoke({"user": "alice", "message": "I moved to Lyon last spring", "recalled": []})
    out = app.invoke({"user": "alice", "message": "Where did I move to?", "recalled": []})
    assert "I moved to Lyon last spring" in out["recalled"]
    aapp = _graph(arecall).compile(store=store)
    out = asyncio.run(aapp.ainvoke({"user": "alice", "message": "Lyon", "recalled": []}))
    assert "I moved to Lyon last spring" in out["recalled"]
    assert asyncio.run(aapp.ainvoke({"user": "bob", "message": "Lyon", "recalled": []}))["recalled"] == ["Lyon"]
