"""``memfold.Client`` / ``AsyncClient`` against a live ``memfold serve`` app (uvicorn on a loopback
port): memfold's result types, typed errors from the HTTP error shape, a revoked key, a server
restarted while the client runs, retries of 503 and of refused connections, timeouts, one pooled
connection for many calls."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from memfold import AsyncClient, Client, Memory
from memfold.client import RetryTransport
from memfold.errors import (
    ArgumentError,
    AuthenticationError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    SecretRefusedError,
    ServerUnavailableError,
)
from memfold.models import AddResult, HistoryEntry, MemoryRecord, SearchHit
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..support.live_server import LiveServer, free_port


class Counting(httpx.BaseTransport):
    """The real HTTP transport, counting the requests it sends (retries included)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def srv(mem: Memory):
    with LiveServer(create_app(mem)) as s:
        s.keys = KeyStore(mem.index)
        yield s


def test_every_call_gives_memfold_types(srv):
    key = srv.keys.create(["alice", "bob"], "write")[0]
    with Client(srv.url, key) as c:
        added = c.add("I prefer green tea over coffee", "alice", metadata={"topic": "drinks"})
        assert isinstance(added, AddResult) and added.added[0].structured_data["topic"] == "drinks"
        tea = added.added[0]
        c.add([{"role": "user", "content": "我周末喜欢去爬山"}], "alice", metadata={"topic": "sport"})
        hits = c.search("green tea", "alice")
        assert isinstance(hits[0], SearchHit) and hits[0].record.id == tea.id and hits[0].score > 0
        assert [h.record.id for h in c.search("tea or hiking", "alice", filters={"topic": "drinks"})] == [tea.id]
        assert {r.id for r in c.get_all("alice", filters={"topic": "drinks"})} == {tea.id}
        assert all(isinstance(r, MemoryRecord) for r in c.get_all("alice"))
        assert c.get(tea.id, "alice") == tea.with_(access_count=c.get(tea.id, "alice").access_count,
                                                  last_accessed_at=c.get(tea.id, "alice").last_accessed_at)
        changed = c.update(tea.id, "alice", data="I prefer oolong tea")
        assert changed.content == "I prefer oolong tea"
        history = c.history(tea.id, "alice")
        assert isinstance(history[0], HistoryEntry) and [h.action for h in history] == ["add", "update"]
        assert "oolong" in c.show("alice")
        messages = c.build_context("what tea do I like?", "alice")
        assert "oolong" in messages[0]["content"]
        assert c.stats("alice")["user_id"] == "alice"
        assert c.whoami()["namespaces"] == ["alice", "bob"]
        c.add("Bob likes jazz", "bob")
        exported = c.export("bob")
        assert c.delete_all("bob")[0].content == "Bob likes jazz" and c.get_all("bob") == []
        assert c.import_records(exported) == 1 and c.get_all("bob")[0].content == "Bob likes jazz"
        assert c.forget("Bob likes jazz", "bob")[0].content == "Bob likes jazz"
        assert c.delete(tea.id, "alice").id == tea.id
        with pytest.raises(ArgumentError):
            c.delete_all()
        with pytest.raises(TypeError, match="was given as user_id"):
            c.update(tea.id, "I like dogs")


def test_errors_are_typed_from_the_http_error_shape(srv):
    key = srv.keys.create(["alice"], "read")[0]
    with Client(srv.url, key) as c:
        with pytest.raises(NotFoundError, match="no memory 'nope'") as nf:
            c.get("nope", "alice")
        assert nf.value.status == 404 and nf.value.code == "not_found"  # type: ignore[attr-defined]
        with pytest.raises(InvalidInputError, match="unknown operator") as bad:
            c.search("tea", "alice", filters={"topic": {"like": "x"}})
        assert bad.value.status == 422  # type: ignore[attr-defined]
        with pytest.raises(PermissionDeniedError, match="scope"):
            c.add("I like tea", "alice")
        with pytest.raises(PermissionDeniedError, match="namespace 'bob'") as pd:
            c.get_all("bob")
        assert pd.value.status == 403 and pd.value.field == "user_id"
    with Client(srv.url, srv.keys.create(["alice"], "write")[0]) as c:
        with pytest.raises(SecretRefusedError):
            c.add("my password is hunter2hunter2", "alice")
    with Client(srv.url, "mfk_nope_nope") as c, pytest.raises(AuthenticationError, match="unknown, wrong or revoked"):
        c.get_all("alice")


def test_a_revoked_key_is_refused_at_once_and_not_retried(srv):
    key, info = srv.keys.create(["alice"], "write")
    sent = Counting()
    with Client(srv.url, key, transport=sent, backoff=0.01) as c:
        c.add("I like tea", "alice")
        srv.keys.revoke(info.key_id)
        with pytest.raises(AuthenticationError) as exc:
            c.search("tea", "alice")
        assert exc.value.status == 401
    assert sent.sent == ["POST /v1/memories", "POST /v1/memories/search"]  # one try: a 401 is not retried


def test_a_server_restarted_mid_run_is_waited_for(mem: Memory):
    """Calls made while the server is down are retried with backoff until it is back; the client
    keeps working across the restart without being rebuilt."""
    port = free_port()
    app = create_app(mem)
    key = KeyStore(mem.index).create(["alice"], "write")[0]
    first = LiveServer(app, port=port).__enter__()
    c = Client(first.url, key, retries=8, backoff=0.1, max_wait=1.0)
    tea = c.add("I prefer green tea", "alice").added[0]
    first.__exit__(None, None, None)
    second: list[LiveServer] = []
    restart = threading.Timer(0.8, lambda: second.append(LiveServer(create_app(mem), port=port).__enter__()))
    restart.start()
    try:
        assert c.get(tea.id, "alice").content == "I prefer green tea"  # sent while the server was down
        assert c.add("I also like jasmine tea", "alice").added
        assert second, "the call returned before the server came back"
    finally:
        restart.join()
        c.close()
        for s in second:
            s.__exit__(None, None, None)


def test_a_server_that_stays_down_is_reported_after_the_retries():
    port = free_port()
    with Client(f"http://127.0.0.1:{port}", "k", retries=2, backoff=0.01) as c:
        with pytest.raises(ServerUnavailableError, match=f"127.0.0.1:{port} unreachable: ConnectError"):
            c.get_all("alice")


def test_503_is_retried_with_backoff_honouring_retry_after():
    answers = [httpx.Response(503, headers={"Retry-After": "0"}, json={"error": {"code": "index_unavailable",
                                                                                 "message": "busy", "field": None}}),
               httpx.Response(503, json={"error": {"code": "index_unavailable", "message": "busy", "field": None}}),
               httpx.Response(200, json={"results": [], "next": None})]
    waits: list[float] = []
    transport = RetryTransport(httpx.MockTransport(lambda request: answers.pop(0)), retries=3, backoff=0.5,
                               sleep=waits.append)
    with httpx.Client(base_url="http://memfold.test", transport=transport) as http:
        assert http.get("/v1/memories").status_code == 200
    assert len(waits) == 2 and waits[0] == 0.0 and 0.5 <= waits[1] <= 1.0  # 0.5 s × 2 for the second try, with jitter
    always = RetryTransport(httpx.MockTransport(lambda request: httpx.Response(
        503, json={"error": {"code": "index_unavailable", "message": "the index is down", "field": None}})),
        retries=2, backoff=0.0)
    with Client("http://memfold.test", "k", transport=always) as c, pytest.raises(Exception, match="the index is down"):
        c.get_all("alice", limit=5)


def test_a_request_that_takes_too_long_times_out():
    """A server that accepts the connection and never answers: the timeout bounds the wait, and a
    POST that may have reached the server is not sent again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        sent = Counting()
        start = time.monotonic()
        with Client(f"http://127.0.0.1:{s.getsockname()[1]}", "k", timeout=0.3, transport=sent) as c:
            with pytest.raises(ServerUnavailableError, match="ReadTimeout"):
                c.add("I like tea", "alice")
        assert time.monotonic() - start < 5 and sent.sent == ["POST /v1/memories"]


def test_one_connection_serves_many_calls(srv):
    key = srv.keys.create(["alice"], "write")[0]
    with Client(srv.url, key) as c:
        for i in range(5):
            c.add(f"note number {i} about tea", "alice")
        c.get_all("alice")
        pool = c._http._transport._inner._pool  # type: ignore[attr-defined]
        assert len(pool.connections) == 1


def test_the_async_client_under_many_tasks(srv):
    key = srv.keys.create(["alice"], "write")[0]

    async def main() -> tuple[list[Any], list[MemoryRecord]]:
        async with AsyncClient(srv.url, key, user_id="alice") as c:
            added = await asyncio.gather(*(c.add(f"fact {i}: the {i}th tea is oolong number {i}") for i in range(12)))
            hits = await asyncio.gather(*(c.search(f"oolong number {i}") for i in range(12)))
            with pytest.raises(NotFoundError):
                await c.get("nope")
            return [a.added[0].id for a in added] + [h[0].record.id for h in hits], await c.get_all()
    ids, rows = asyncio.run(main())
    assert len(rows) == 12 and set(ids) == {r.id for r in rows}


def test_the_namespace_in_the_body_and_every_validation_problem_named(srv):
    key = srv.keys.create(["alice", "bob"], "write")[0]
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        r = http.post("/v1/memories", json={"text": "Bob likes jazz", "user_id": "bob"})
        assert r.status_code == 200 and r.json()["added"][0]["user_id"] == "bob"
        hits = http.post("/v1/memories/search", json={"query": "jazz", "user_id": "bob"}).json()["results"]
        assert hits[0]["content"] == "Bob likes jazz"
        assert http.post("/v1/context", json={"user_message": "music?", "user_id": "bob"}).status_code == 200
        clash = http.post("/v1/memories/search", params={"user_id": "alice"}, json={"query": "jazz", "user_id": "bob"})
        assert clash.status_code == 422 and "in the query and 'bob' in the body" in clash.json()["error"]["message"]
        r = http.post("/v1/memories", json={"text": "a", "importance": "high", "infer": "maybe", "colour": 1})
        message = r.json()["error"]["message"]
        assert r.status_code == 422 and all(f in message for f in ("importance", "infer", "colour")), message


def test_lists_come_whole_through_the_servers_pages(srv, mem: Memory, monkeypatch):
    """The server answers lists a page at a time (``{"results", "next"}``); the client follows
    ``next`` so that ``get_all``, ``export`` and ``history`` return what ``Memory`` returns."""
    import memfold.client as client_mod

    monkeypatch.setattr(client_mod, "PAGE", 2)  # pages of two rows: every list spans several
    key = srv.keys.create(["alice"], "write")[0]
    with Client(srv.url, key, user_id="alice") as c, Counting() as counting:
        for t in ("I like oolong tea", "I live in Lyon", "我喜欢喝乌龙茶", "My sister Lena is a nurse", "I play cello"):
            c.add(t)
        first = c.get_all()[0]
        for n in range(4):
            c.update(first.id, importance=0.1 + n / 10)
        paged = Client(srv.url, key, user_id="alice", transport=counting)
        assert [r.id for r in paged.get_all()] == [r.id for r in mem.get_all("alice")]
        assert sorted(r["id"] for r in paged.export()) == sorted(r["id"] for r in mem.export("alice"))
        assert [h.action for h in paged.history(first.id)] == [h.action for h in mem.history(first.id, "alice")]
        assert [r.id for r in paged.get_all(limit=2, offset=1)] == [r.id for r in mem.get_all("alice")][1:3]
        paged.close()
    assert counting.sent.count("GET /v1/memories") >= 3 and counting.sent.count("GET /v1/export") >= 3
    with Client(srv.url, key) as c, pytest.raises(InvalidInputError) as caught:
        c.search("tea", "alice", limit=0)
    assert [p["field"] for p in caught.value.problems] == ["limit"]  # type: ignore[attr-defined]


def test_skills_relations_and_usage_through_the_client(srv):
    key = srv.keys.create(["alice"], "write")[0]
    with Client(srv.url, key, user_id="alice") as c:
        saved = c.add_skill("Publish the docs", when_to_use="after a release", steps=["make docs", "rsync site"],
                            tools=["make", "rsync"], outcome="the docs are online")
        skill = saved.added[0]
        assert "Successes: 1" in c.skill_succeeded(skill.id).content
        listed = c.skills()
        assert [s["name"] for s in listed] == ["Publish the docs"] and listed[0]["steps"] == ["make docs", "rsync site"]
        assert listed[0]["successes"] == 1
        a = c.add("I live in Lisbon").added[0]
        b = c.add("I moved to Lisbon from Porto in 2021").added[0]
        rel = c.relate(b.id, a.id, "supports", strength=0.7)
        assert (rel["source_id"], rel["target_id"], rel["relation"]) == (b.id, a.id, "supports")
        seen = c.related(a.id)
        assert [(r["id"], r["relation"]) for r in seen] == [(b.id, "supports")] and "Porto" in seen[0]["content"]
        assert c.unrelate(b.id, a.id) == 1 and c.related(a.id) == []
        with pytest.raises(InvalidInputError):
            c.relate(a.id, b.id, "loves")
        c.search("where do I live")
        c.search("zzqx nothing matches this")
        used = c.usage()
        assert used["searches"] >= 2 and any(u["id"] == a.id for u in used["most_used"])
        assert [q["query"] for q in used["no_results"]] == ["zzqx nothing matches this"]


def test_the_async_client_reaches_skills_relations_and_usage(srv):
    key = srv.keys.create(["alice"], "write")[0]

    async def run() -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        async with AsyncClient(srv.url, key, user_id="alice") as c:
            skill = (await c.add_skill("给客户发周报", when_to_use="每周五", steps=["汇总进度", "发邮件"])).added[0]
            await c.skill_succeeded(skill.id)
            a = (await c.add("我住在杭州")).added[0]
            b = (await c.add("我去年搬到了杭州")).added[0]
            await c.relate(b.id, a.id, "refines")
            related = await c.related(a.id)
            removed = await c.unrelate(b.id, a.id, "refines")
            return await c.skills() + related, removed, await c.usage()

    rows, removed, used = asyncio.run(run())
    assert rows[0]["name"] == "给客户发周报" and rows[0]["successes"] == 1
    assert rows[1]["relation"] == "refines" and removed == 1 and used["searches"] == 0
