"""The bounds of ``memfold.limits`` over real HTTP: an amount over its bound is 413 naming the field,
a shape or a parameter out of range 422 naming the field; nothing is stored; the OpenAPI schema
states the bounds."""

from __future__ import annotations

import httpx
import pytest

from memfold import Memory
from memfold import limits as L
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..support.live_server import LiveServer


@pytest.fixture
def alice(mem: Memory):  # type: ignore[no-untyped-def]
    with LiveServer(create_app(mem)) as s:
        key = KeyStore(mem.index).create(["alice"], "write")[0]
        with httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as c:
            yield c


def _err(r: httpx.Response, status: int, code: str, field: str) -> str:
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert e["code"] == code and e["field"] == field, e
    assert "Traceback" not in r.text
    return str(e["message"])


def test_bounds_over_http(alice: httpx.Client, mem: Memory) -> None:
    assert alice.post("/v1/memories", json={"text": "I keep my bike in the garage"}).status_code == 200
    one_word = [{"role": "user", "content": "hi"}] * (L.MAX_MESSAGES + 1)
    msg = _err(alice.post("/v1/memories", json={"messages": one_word}), 413, "limit_exceeded", "messages")
    assert f"{L.MAX_MESSAGES:,}" in msg
    big = {"doc": "x" * L.MAX_STRUCTURED_BYTES}
    _err(alice.post("/v1/memories", json={"text": "with data", "structured_data": big}), 413, "limit_exceeded",
         "structured_data")
    deep: object = "leaf"
    for _ in range(L.MAX_STRUCTURED_DEPTH + 1):
        deep = [deep]
    _err(alice.post("/v1/memories", json={"text": "deep", "structured_data": {"a": deep}}), 422, "out_of_range",
         "structured_data")
    _err(alice.post("/v1/memories", json={"text": "y" * (L.MAX_CONTENT_CHARS + 1)}), 413, "limit_exceeded", "text")
    _err(alice.post("/v1/memories", json={"text": "an agent", "agent_id": "a" * (L.MAX_ID_CHARS + 1)}), 413,
         "limit_exceeded", "agent_id")
    rid = alice.get("/v1/memories").json()["results"][0]["id"]
    _err(alice.patch(f"/v1/memories/{rid}", json={"structured_data": big}), 413, "limit_exceeded", "structured_data")
    r = alice.post("/v1/memories/search", json={"query": "bike", "limit": L.MAX_RESULTS + 1})
    assert r.status_code == 422 and r.json()["error"]["field"] == "limit"
    assert alice.get("/v1/memories", params={"limit": L.MAX_RESULTS + 1}).status_code == 422
    _err(alice.post("/v1/memories/search", json={"query": "q" * (L.MAX_QUERY_CHARS + 1)}), 413, "limit_exceeded", "query")
    r = alice.post("/v1/tools/memory_search", json={"query": "bike", "limit": L.MAX_TOOL_RESULTS + 1})
    assert r.status_code == 422 and r.json()["error"]["field"] == "limit"
    # nothing of the refused requests was stored
    assert [m["content"] for m in alice.get("/v1/memories").json()["results"]] == ["I keep my bike in the garage"]
    # the schema states the bounds
    schema = alice.get("/openapi.json").json()["components"]["schemas"]
    assert schema["AddMemoryRequest"]["properties"]["messages"]["maxItems"] == L.MAX_MESSAGES
    # at the bound it is taken
    ok = alice.post("/v1/memories", json={"messages": [{"role": "user", "content": "my cat is called Miso"}] * 3,
                                          "structured_data": {"doc": "z" * 100}})
    assert ok.status_code == 200, ok.text


def test_error_codes_and_fields_over_http(alice: httpx.Client) -> None:
    """The code and the field of an error come from the error itself (``errors.CODES`` gives the
    status): a guard's refusal, a missing memory, a bound of the table met by a request model."""
    assert alice.post("/v1/memories", json={"text": "I keep my bike in the garage"}).status_code == 200
    _err(alice.get("/v1/memories/m-nosuchid"), 404, "not_found", "memory_id")
    _err(alice.patch("/v1/memories/m-nosuchid", json={"content": "x"}), 404, "not_found", "memory_id")
    msg = _err(alice.post("/v1/memories", json={"text": "an agent", "agent_id": "bad\u0001id"}), 422, "invalid_input",
               "agent_id")
    assert "control characters" in msg
    _err(alice.post("/v1/memories/search", json={"query": "bike", "filters": {"importance": {"gte": "high"}}}), 422,
         "invalid_input", "filters")
    _err(alice.post("/v1/memories", json={"text": "with a secret", "structured_data": {
        "token": "sk-live-abcdefabcdef0123456789abcd"}}), 422, "secret_refused", "structured_data")
    r = alice.post("/v1/memories/search", json={"query": "bike", "limit": L.MAX_RESULTS + 1, "surprise": 1})
    e = r.json()["error"]
    assert r.status_code == 422 and (e["code"], e["field"]) == ("out_of_range", "limit"), e
    assert [(p["field"], p["code"]) for p in e["problems"]] == [("limit", "out_of_range"), ("surprise", "invalid_input")]
    # a tool over HTTP: the same code and field as its call in Python, the status of the table
    _err(alice.post("/v1/tools/memory_search", json={"query": "q" * (L.MAX_QUERY_CHARS + 1)}), 413, "limit_exceeded",
         "query")
