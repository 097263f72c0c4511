"""Every HTTP route × every key scope, from one table: a key below the route's scope gets 403 and
changes nothing; a key at or above it gets its answer. The table must name every ``/v1/`` route of
the app (a new route without a row fails here), so no route goes out without its scope check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from memfold import Memory
from memfold.server.app import create_app
from memfold.server.keys import SCOPES, KeyStore
from memfold.tools import TOOLS

from ..support.live_server import LiveServer

USER = "alice"
MD = "MEMORY.md"


@dataclass
class Ids:
    memory: str
    session: str = "s1"
    agent: str = "helper"
    exported: list[dict[str, Any]] = field(default_factory=list)
    skill: str = ""
    other: str = ""


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # with {memory_id}, {session_id}, {agent_id}, {skill_id}, {name}
    scope: str  # the lowest scope that may call it
    body: Callable[[Ids], Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    label: str = ""

    def __str__(self) -> str:
        return self.label or f"{self.method} {self.path}"


def _tool_body(name: str) -> dict[str, Any]:
    return {"memory_search": {"query": "tea"},
            "memory_append": {"content": "I water the plants on Sundays"},
            "save_memory": {"content": "I am learning the cello", "memory_type": "fact"},
            "memory_edit": {"path": MD, "old_text": "green tea", "new_text": "white tea"},
            "memory_forget": {"query_or_id": "green tea"},
            "memory_read": {"path": MD},
            "write_file": {"path": MD, "content": "- I collect stamps"}}.get(name) or {}


def _tool_call(name: str, i: Ids) -> dict[str, Any]:
    if name == "skill_success":
        return {"memory_id": i.skill}
    if name == "memory_relate":
        return {"action": "add", "memory_id": i.other, "other_id": i.memory, "relation": "supports"}
    return _tool_body(name)


CASES = [
    Case("GET", "/v1/whoami", "read"),
    Case("GET", "/v1/stats", "read"),
    Case("GET", "/v1/policy", "read"),
    Case("GET", "/v1/memories", "read"),
    Case("POST", "/v1/memories", "write", lambda i: {"text": "I ride a red bicycle"}),
    Case("POST", "/v1/memories/search", "read", lambda i: {"query": "tea"}),
    Case("GET", "/v1/memory-md", "read"),
    Case("GET", "/v1/memories/{memory_id}", "read"),
    Case("PATCH", "/v1/memories/{memory_id}", "write", lambda i: {"importance": 0.9}),
    Case("DELETE", "/v1/memories/{memory_id}", "write"),
    Case("POST", "/v1/memories/forget", "write", lambda i: {"query": "green tea"}),
    Case("POST", "/v1/memories/forget", "read", lambda i: {"query": "green tea", "dry_run": True},
         label="POST /v1/memories/forget (dry run)"),
    Case("GET", "/v1/memories/{memory_id}/history", "read"),
    Case("GET", "/v1/export", "read"),
    Case("POST", "/v1/import", "write", lambda i: {"records": i.exported}),
    Case("GET", "/v1/sessions", "read"),
    Case("POST", "/v1/sessions", "write", lambda i: {"session_id": "s2"}),
    Case("GET", "/v1/sessions/{session_id}", "read"),
    Case("POST", "/v1/sessions/{session_id}/messages", "write", lambda i: {"role": "user", "content": "hello"}),
    Case("POST", "/v1/sessions/{session_id}/context", "read", lambda i: {"user_message": "what do I drink?"}),
    Case("POST", "/v1/sessions/{session_id}/summarize", "write"),
    Case("DELETE", "/v1/sessions/{session_id}", "write"),
    Case("POST", "/v1/context", "read", lambda i: {"user_message": "what do I drink?"}),
    Case("GET", "/v1/pins", "read"),
    Case("GET", "/v1/pins/{agent_id}", "read"),
    Case("GET", "/v1/skills", "read"),
    Case("POST", "/v1/skills", "write", lambda i: {"name": "Water the plants", "steps": ["fill the can"]}),
    Case("POST", "/v1/skills/{skill_id}/success", "write"),
    Case("GET", "/v1/memories/{memory_id}/relations", "read"),
    Case("POST", "/v1/relations", "write", lambda i: {"source_id": i.other, "target_id": i.memory,
                                                      "relation": "supports"}),
    Case("DELETE", "/v1/relations", "write", params={"source_id": "x1", "target_id": "x2"}),
    Case("GET", "/v1/usage", "read"),
    Case("GET", "/v1/tools", "read"),
    *[Case("POST", f"/v1/tools/{name}", "write" if tool.writes else "read", lambda i, n=name: _tool_call(n, i))
      for name, tool in TOOLS.items()],
]


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder_module):
    root = tmp_path_factory.mktemp("scopes") / "ws"
    mem = Memory(root=root, embedder=embedder_module)
    with LiveServer(create_app(mem)) as s:
        keys = KeyStore(mem.index)
        yield s, mem, {scope: keys.create([USER], scope)[0] for scope in SCOPES}
    mem.close()


@pytest.fixture(scope="module")
def embedder_module():
    from ..conftest import _EMBEDDER

    return _EMBEDDER


def _fresh(mem: Memory) -> Ids:
    """The namespace in a known state: one memory, one session with messages, one agent's pin."""
    for r in mem.get_all(USER, include_archived=True):
        mem.delete(r.id, USER)
    for sid in mem.sessions(USER):
        mem.session(sid, USER).clear()
    rid = mem.add("I like green tea", USER, agent_id="helper", infer=False).added[0].id
    s = mem.session("s1", USER, "helper")
    for i in range(3):
        s.add_message("user", f"message {i} about my garden")
    skill = mem.add_skill("Brew green tea", USER, steps=["heat water to 80 °C", "steep two minutes"]).added[0].id
    other = mem.add("My teapot is blue", USER, infer=False).added[0].id
    return Ids(rid, exported=[r for r in mem.export(USER) if r["id"] == rid], skill=skill, other=other)


def _state(mem: Memory, root_md: str) -> tuple[Any, ...]:
    recs = sorted((r["id"], r["content"], r["importance"], r["is_active"]) for r in mem.export(USER))
    return recs, mem.show(USER), tuple(mem.sessions(USER)), len(mem.session("s1", USER).messages)


def test_the_table_names_every_route(served):
    s, mem, keys = served
    table = {(c.method, c.path) for c in CASES}
    spec = httpx.get(s.url + "/openapi.json").json()["paths"]
    routes = {(m.upper(), p) for p, ops in spec.items() if p.startswith("/v1/") for m in ops}
    assert routes - table == set(), "routes without a row in the scope table"
    assert table - routes == set()


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("scope", SCOPES)
def test_route_by_scope(served, case: Case, scope: str):
    s, mem, keys = served
    ids = _fresh(mem)
    path = case.path.format(memory_id=ids.memory, session_id=ids.session, agent_id=ids.agent, skill_id=ids.skill)
    before = _state(mem, MD)
    with httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {keys[scope]}"}, timeout=120) as c:
        r = c.request(case.method, path, params={**case.params, "user_id": USER},
                      json=case.body(ids) if case.body else None)
    allowed = SCOPES.index(scope) >= SCOPES.index(case.scope)
    if allowed:
        assert r.status_code < 400, f"{case} with a {scope} key: {r.status_code} {r.text}"
    else:
        assert r.status_code == 403, f"{case} with a {scope} key: {r.status_code} {r.text}"
        body = r.json()
        assert body["error"]["code"] == "forbidden" and repr(case.scope) in body["error"]["message"], body
        assert _state(mem, MD) == before, f"{case}: a refused request changed the namespace"


def test_no_key_is_401_on_every_route(served):
    s, mem, keys = served
    ids = _fresh(mem)
    for case in CASES:
        path = case.path.format(memory_id=ids.memory, session_id=ids.session, agent_id=ids.agent, skill_id=ids.skill)
        r = httpx.request(case.method, s.url + path, json=case.body(ids) if case.body else None, timeout=60)
        assert r.status_code == 401, f"{case}: {r.status_code}"
