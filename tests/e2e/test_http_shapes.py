"""One HTTP shape, over real HTTP: every list is ``{"results", "next"}`` and pages to its end with
an opaque cursor; a memory is the same record in every answer (a search hit adds its scores);
``user_id`` goes in the body or the query; every request body has an example in the OpenAPI
description that its route accepts; a 422 lists every problem; one access log line per request."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from memfold import Memory
from memfold.server import access
from memfold.server.app import create_app
from memfold.server.keys import KeyStore
from memfold.server.routes import memories, sessions, system, tools

from ..support.live_server import LiveServer

FACTS = ["I like oolong tea", "I live in Lyon", "我喜欢喝乌龙茶", "My sister Lena is a nurse", "I play the cello",
         "I drink green tea in the morning", "My cat is called Tuanzi"]


@pytest.fixture
def srv(mem: Memory):
    with LiveServer(create_app(mem)) as s:
        s.mem = mem
        s.key = KeyStore(mem.index).create(["alice", "bob"], "write")[0]
        s.http = httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {s.key}"}, timeout=60)
        yield s
        s.http.close()


def every_page(c: httpx.Client, method: str, path: str, limit: int, **kw: Any) -> list[Any]:
    """Follow ``next`` to the end; each page has at most ``limit`` results."""
    rows: list[Any] = []
    cursor = None
    for _ in range(50):
        if method == "GET":
            r = c.get(path, params={**kw.get("params", {}), "limit": limit, **({"cursor": cursor} if cursor else {})})
        else:
            r = c.post(path, params=kw.get("params"), json={**kw["json"], "limit": limit, "cursor": cursor})
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) >= {"results", "next"} and len(body["results"]) <= limit, body
        rows += body["results"]
        cursor = body["next"]
        if cursor is None:
            return rows
    raise AssertionError("the pages never ended")


def test_every_list_is_results_and_next_and_pages_to_its_end(srv):
    c = srv.http
    ids = [c.post("/v1/memories", json={"text": t, "user_id": "alice"}).json()["added"][0]["id"] for t in FACTS]
    c.patch(f"/v1/memories/{ids[0]}", params={"user_id": "alice"}, json={"content": "I like oolong tea a lot"})
    c.patch(f"/v1/memories/{ids[0]}", params={"user_id": "alice"}, json={"importance": 0.9})
    for s in ("s1", "s2", "s3"):
        c.post("/v1/sessions", json={"session_id": s, "user_id": "alice"})
        c.post(f"/v1/sessions/{s}/messages", json={"role": "user", "content": "hello", "user_id": "alice"})
    for a in ("a1", "a2", "a3"):
        c.post("/v1/tools/save_memory", json={"content": f"{a} remembers the garden", "memory_type": "fact",
                                              "user_id": "alice", "agent_id": a})
    whole = c.get("/v1/memories", params={"user_id": "alice", "limit": 1000}).json()
    assert whole["next"] is None and len(whole["results"]) == len(FACTS) + 3
    for limit in (1, 2, 3):  # paged, the list is the whole list, in the same order, each row once
        paged = every_page(c, "GET", "/v1/memories", limit, params={"user_id": "alice"})
        assert [r["id"] for r in paged] == [r["id"] for r in whole["results"]]
    assert {r["id"] for r in every_page(c, "GET", "/v1/export", 2, params={"user_id": "alice"})} >= set(ids)
    assert every_page(c, "GET", "/v1/sessions", 2, params={"user_id": "alice"}) == ["s1", "s2", "s3"]
    assert [p["agent_id"] for p in every_page(c, "GET", "/v1/pins", 2, params={"user_id": "alice"})] == \
        ["a1", "a2", "a3"]
    history = every_page(c, "GET", f"/v1/memories/{ids[0]}/history", 1, params={"user_id": "alice"})
    assert [e["action"] for e in history] == ["add", "update", "update"]
    assert len(every_page(c, "GET", "/v1/tools", 3)) == len(c.get("/v1/tools").json()["results"])
    # search: the pages are the ranked hits of one search, in order
    one = c.post("/v1/memories/search", json={"query": "tea", "user_id": "alice", "limit": 6}).json()["results"]
    paged_hits = every_page(c, "POST", "/v1/memories/search", 2, json={"query": "tea", "user_id": "alice"})
    assert [h["id"] for h in paged_hits][:len(one)] == [h["id"] for h in one]
    assert len({h["id"] for h in paged_hits}) == len(paged_hits)

    # one record shape: a hit is the record of get/list plus its scores (and its related memories when asked)
    hit = one[0]
    got = c.get(f"/v1/memories/{hit['id']}", params={"user_id": "alice"}).json()
    listed = next(r for r in whole["results"] if r["id"] == hit["id"])
    assert set(hit) - set(got) == {"score", "similarity", "relevance", "related"} and set(got) == set(listed)
    updated = c.patch(f"/v1/memories/{hit['id']}", json={"importance": 0.4, "user_id": "alice"}).json()
    assert set(updated) == set(got)

    # a cursor is opaque and belongs to its list
    cursor = c.get("/v1/memories", params={"user_id": "alice", "limit": 1}).json()["next"]
    for bad in (cursor, "not-a-cursor"):
        r = c.get("/v1/sessions", params={"user_id": "alice", "cursor": bad})
        assert r.status_code == 422 and r.json()["error"]["field"] == "cursor", r.text
    r = c.get("/v1/memories", params={"user_id": "alice", "cursor": cursor, "offset": 1})
    assert r.status_code == 422 and r.json()["error"]["field"] == "offset"
    assert c.get("/v1/memories", params={"limit": 1001}).status_code == 422  # the bound of the limits table


def test_user_id_in_the_body_or_the_query_and_both_must_agree(srv):
    c = srv.http
    mid = c.post("/v1/memories", json={"text": "Bob keeps bees on the roof", "user_id": "bob"}).json()["added"][0]["id"]
    assert c.get(f"/v1/memories/{mid}", params={"user_id": "bob"}).status_code == 200
    routes: list[tuple[str, dict[str, Any]]] = [
        ("/v1/memories/search", {"query": "bees"}),
        ("/v1/memories/forget", {"query": "bees", "dry_run": True}),
        ("/v1/context", {"user_message": "what about bees?"}),
        ("/v1/sessions", {"session_id": "hive"}),
        ("/v1/sessions/hive/messages", {"role": "user", "content": "the bees swarmed"}),
        ("/v1/sessions/hive/context", {"user_message": "bees?"}),
        ("/v1/tools/memory_search", {"query": "bees"}),
    ]
    for path, body in routes:
        in_body = c.post(path, json={**body, "user_id": "bob"})
        in_query = c.post(path, params={"user_id": "bob"}, json=body)
        both = c.post(path, params={"user_id": "bob"}, json={**body, "user_id": "bob"})
        assert in_body.status_code == in_query.status_code == both.status_code == 200, (path, in_body.text)
        r = c.post(path, params={"user_id": "alice"}, json={**body, "user_id": "bob"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "user_id", (path, r.text)
        assert "'alice'" in r.json()["error"]["message"] and "'bob'" in r.json()["error"]["message"]
    assert c.post("/v1/memories/search", json={"query": "bees", "user_id": "bob"}).json()["results"][0]["id"] == mid
    r = c.patch(f"/v1/memories/{mid}", json={"content": "Bob keeps two hives on the roof", "user_id": "bob"})
    assert r.status_code == 200 and r.json()["content"] == "Bob keeps two hives on the roof"
    r = c.post("/v1/tools/save_memory", params={"agent_id": "x"},
               json={"content": "c", "memory_type": "fact", "agent_id": "y"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "agent_id"


def test_every_request_body_has_an_example_its_route_accepts(srv):
    spec = httpx.get(srv.url + "/openapi.json", timeout=60).json()
    schemas = spec["components"]["schemas"]
    with_body = 0
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if "requestBody" not in op:
                continue
            with_body += 1
            media = op["requestBody"]["content"]["application/json"]
            ref = media["schema"].get("$ref", "")
            schema = schemas[ref.rsplit("/", 1)[-1]] if ref else media["schema"]
            found = media.get("examples") or media.get("example") or schema.get("examples")
            assert found, f"{method.upper()} {path}: the request body has no example"
    assert with_body >= 15
    checked = 0
    for route in [r for mod in (memories, sessions, system, tools) for r in mod.router.routes]:
        body = route.body_field if isinstance(route, APIRoute) else None  # each example is a valid body of its route
        model = getattr(body, "type_", None) or getattr(getattr(body, "field_info", None), "annotation", None)
        for ex in (model.model_json_schema().get("examples") or []) if model is not None else []:
            model.model_validate_json(json.dumps(ex))
            checked += 1
    assert checked >= with_body


def test_a_422_lists_every_problem(srv):
    r = srv.http.post("/v1/memories/search", json={"query": 5, "limit": 0, "surprise": True})
    assert r.status_code == 422
    err = r.json()["error"]
    assert sorted(p["field"] for p in err["problems"]) == ["limit", "query", "surprise"]
    assert all(p["message"] and not p["message"].startswith(p["field"] + ":") for p in err["problems"])
    for field in ("query", "limit", "surprise"):
        assert f"{field}:" in err["message"]
    assert "more" not in err["message"]
    messages = [{"role": 1, "content": "x"}] * 60  # more problems than a message spells out: all are listed
    r = srv.http.post("/v1/memories", json={"messages": messages, "user_id": "alice"})
    assert r.status_code == 422 and len(r.json()["error"]["problems"]) == 60, r.text


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.guard = threading.Lock()  # not ``self.lock``: the handler's own lock is held while emit runs

    def emit(self, record: logging.LogRecord) -> None:
        with self.guard:
            self.records.append(record)


def test_one_access_line_per_request_without_the_key_or_the_words(srv):
    lines = _Lines()
    logger = logging.getLogger("memfold.access")
    old_level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    secret_words = "my locker code is 4711 behind the gym"
    try:
        c = srv.http
        key_id = KeyStore(srv.mem.index).verify(srv.key).key_id  # type: ignore[union-attr]
        c.post("/v1/memories", params={"user_id": "alice"}, json={"text": secret_words})
        c.post("/v1/memories/search", json={"query": "locker code", "user_id": "alice"})
        c.get("/v1/memories", params={"user_id": "alice", "limit": 5})
        httpx.get(srv.url + "/v1/whoami", headers={"Authorization": "Bearer mfk_nope_wrong"}, timeout=60)
        httpx.get(srv.url + "/healthz", timeout=60)
        # a line is written once its answer is sent: the last one may come a moment after the client has it
        deadline = time.monotonic() + 30
        while len(lines.records) < 5 and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.02)
    finally:
        logger.removeHandler(lines)
        logger.setLevel(old_level)
    got = [(r.method, r.path, r.status) for r in lines.records]  # type: ignore[attr-defined]
    assert got == [("POST", "/v1/memories", 200), ("POST", "/v1/memories/search", 200), ("GET", "/v1/memories", 200),
                   ("GET", "/v1/whoami", 401), ("GET", "/healthz", 200)]
    assert [r.key for r in lines.records] == [key_id] * 3 + ["-", "-"]  # type: ignore[attr-defined]
    assert all(isinstance(r.ms, float) and r.ms >= 0 for r in lines.records)  # type: ignore[attr-defined]
    text = logging.Formatter("%(message)s")
    as_json = access.JsonFormatter()
    for r in lines.records:
        for out in (text.format(r), as_json.format(r)):
            assert srv.key not in out and "locker" not in out and "4711" not in out and "alice" not in out
            assert "mfk_nope" not in out
        parsed = json.loads(as_json.format(r))
        assert {k: parsed[k] for k in access.FIELDS} == {k: getattr(r, k) for k in access.FIELDS}
        assert parsed["logger"] == "memfold.access" and "time" in parsed
    assert text.format(lines.records[0]).startswith("POST /v1/memories 200 ") and f"key={key_id}" in \
        text.format(lines.records[0])
