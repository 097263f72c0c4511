"""The HTTP API over real HTTP: uvicorn on a loopback port, httpx as the client. Every route,
every error code, isolation between keys and users, revocation (also from another process)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memfold import Memory
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..conftest import run_cli
from ..support.hash_embedder import HashEmbedder
from ..support.live_server import LiveServer


@pytest.fixture
def srv(mem: Memory):
    with LiveServer(create_app(mem)) as s:
        s.keys = KeyStore(mem.index)
        s.mem = mem
        yield s


def client(srv, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=srv.url, headers=headers, timeout=60)


def key_for(srv, *users: str, scope: str = "write") -> str:
    return srv.keys.create(list(users), scope)[0]


def err(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    keys = {"code", "message", "field"} | ({"problems"} if status == 422 else set())  # a 422 lists every problem
    assert set(body) == {"error"} and set(body["error"]) == keys, body
    assert body["error"]["code"] == code, body
    assert "Traceback" not in r.text
    return body["error"]


def test_health_docs_and_page(srv):
    r = httpx.get(srv.url + "/healthz", timeout=60)  # the first call loads the embedder: slow on a busy machine
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["embedder"] == srv.mem.embedder.name
    docs = httpx.get(srv.url + "/docs").text
    assert "swagger" in docs.lower() and "cdn" not in docs and "/docs-assets/swagger-ui-bundle.js" in docs  # offline
    assert httpx.get(srv.url + "/docs-assets/swagger-ui-bundle.js").status_code == 200
    paths = httpx.get(srv.url + "/openapi.json").json()["paths"]
    for p in ("/v1/memories", "/v1/memories/search", "/v1/memories/{memory_id}", "/v1/memories/{memory_id}/history",
              "/v1/memories/forget", "/v1/export", "/v1/import", "/v1/sessions", "/v1/sessions/{session_id}/messages",
              "/v1/sessions/{session_id}/context", "/v1/sessions/{session_id}/summarize", "/v1/pins/{agent_id}",
              "/v1/stats", "/v1/policy", "/healthz"):
        assert p in paths, p
    page = httpx.get(srv.url + "/")
    assert page.status_code == 200 and "signin-form" in page.text
    assert httpx.get(srv.url + "/static/app.js").status_code == 200


def test_memories_every_route(srv, root: Path):
    c = client(srv, key_for(srv, "alice"))
    r = c.post("/v1/memories", json={"text": "我喜欢喝乌龙茶，不喜欢咖啡"})
    assert r.status_code == 200, r.text
    tea = r.json()["added"][0]
    assert tea["user_id"] == "alice" and tea["memory_type"] == "preference"
    r = c.post("/v1/memories", json={"messages": [{"role": "user", "content": "I work at the Lantern Bakery in Lyon"},
                                                  {"role": "assistant", "content": "Nice!"}]})
    assert r.status_code == 200 and r.json()["added"], r.text
    note = c.post("/v1/memories", json={"text": "met the plumber today", "note": True}).json()["added"][0]
    assert note["file"].startswith("memory/")
    hits = c.post("/v1/memories/search", json={"query": "乌龙茶"}).json()["results"]
    assert hits[0]["id"] == tea["id"] and hits[0]["score"] > 0
    listed = c.get("/v1/memories", params={"include_episodic": "false"}).json()["results"]
    assert {tea["id"], note["id"]} <= {m["id"] for m in listed} and all(m["file"] for m in listed)
    assert c.get("/v1/memories", params={"memory_type": "note"}).json()["results"][0]["id"] == note["id"]
    assert c.get(f"/v1/memories/{tea['id']}").json()["content"] == tea["content"]
    assert "乌龙茶" in c.get("/v1/memory-md").json()["text"]

    r = c.patch(f"/v1/memories/{tea['id']}", json={"content": "我喜欢喝普洱茶", "importance": 0.9})
    assert r.status_code == 200 and r.json()["importance"] == 0.9
    on_disk = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert "普洱茶" in on_disk and "乌龙茶" not in on_disk
    actions = [e["action"] for e in c.get(f"/v1/memories/{tea['id']}/history").json()["results"]]
    assert actions[0] == "add" and "update" in actions

    exported = c.get("/v1/export").json()["results"]
    assert tea["id"] in {r["id"] for r in exported}

    preview = c.post("/v1/memories/forget", json={"query": "Lantern Bakery", "dry_run": True}).json()
    assert preview["dry_run"] and preview["results"] and preview["next"] is None
    assert c.post("/v1/memories/search", json={"query": "Lantern Bakery"}).json()["results"]  # dry run: nothing deleted
    gone = c.post("/v1/memories/forget", json={"query": "Lantern Bakery"}).json()["results"]
    assert {m["id"] for m in gone} == {m["id"] for m in preview["results"]}
    assert not [h for h in c.post("/v1/memories/search", json={"query": "Lantern Bakery"}).json()["results"]
                if "Lantern" in h["content"]]

    deleted = c.delete(f"/v1/memories/{tea['id']}").json()
    assert deleted["id"] == tea["id"]
    err(c.get(f"/v1/memories/{tea['id']}"), 404, "not_found")
    assert "普洱茶" not in (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")

    r = c.post("/v1/import", json={"records": [r for r in exported if r["id"] == tea["id"]]})
    assert r.json() == {"imported": 1}
    assert c.get(f"/v1/memories/{tea['id']}").json()["content"] == "我喜欢喝普洱茶"

    stats = c.get("/v1/stats").json()
    assert stats["user_id"] == "alice" and stats["index"] == "sqlite"
    assert c.get("/v1/policy").json()["max_recent_memories"] > 0
    assert c.get("/v1/whoami").json()["namespaces"] == ["alice"]


def test_sessions_context_and_pins(srv):
    c = client(srv, key_for(srv, "alice"))
    v = c.post("/v1/sessions", json={"session_id": "s1", "agent_id": "helper"}).json()
    assert v["info"]["agent_id"] == "helper" and v["messages"] == []
    for i in range(3):
        u = c.post("/v1/sessions/s1/messages", json={"role": "user", "content": f"我在准备第{i}次马拉松训练"})
        assert u.status_code == 200 and u.json()["summarized"] is False
    c.post("/v1/sessions/s1/messages", json={"role": "assistant", "content": "加油！"})
    c.post("/v1/sessions/s1/messages", json={"role": "user", "content": "明天跑二十公里"})
    assert c.post("/v1/sessions", json={"session_id": "s1"}).json()["info"]["messages"] == 5  # resumed
    s = c.post("/v1/sessions/s1/summarize").json()
    assert s["summarized"] and s["reason"] == "manual" and s["folded"] == 1
    view = c.get("/v1/sessions/s1").json()
    assert view["summary"] and len(view["messages"]) == 4 and view["info"]["folds"] == 1
    assert c.get("/v1/sessions").json() == {"results": ["s1"], "next": None}

    c.post("/v1/memories", json={"text": "My dentist is Dr. Okafor", "agent_id": "helper"})
    assert c.get("/v1/pins/helper").json()["recent_memories"] == ["My dentist is Dr. Okafor"]
    # the folded session messages ("我在准备…马拉松训练" is a plan) were saved too, with their own pin list
    assert "helper" in [a["agent_id"] for a in c.get("/v1/pins").json()["results"]]
    ctx = c.post("/v1/sessions/s1/context", json={"user_message": "who is my dentist?"}).json()["messages"]
    assert ctx[0]["role"] == "system" and "Okafor" in ctx[0]["content"] and ctx[-1]["content"] == "who is my dentist?"
    plain = c.post("/v1/context", json={"user_message": "dentist?", "agent_id": "helper"}).json()["messages"]
    assert "Okafor" in plain[0]["content"]

    assert c.delete("/v1/sessions/s1").json() == {"results": [], "next": None}
    err(c.get("/v1/sessions/s1"), 404, "not_found")
    err(c.post("/v1/sessions/nope/summarize"), 404, "not_found")


def test_every_error_code(srv):
    alice = client(srv, key_for(srv, "alice"))
    reader = client(srv, key_for(srv, "alice", scope="read"))
    e = err(client(srv, None).get("/v1/memories"), 401, "unauthorized")
    assert "memfold keys create" in e["message"]
    err(client(srv, "mfk_nothere_secret").get("/v1/memories"), 401, "unauthorized")
    good = key_for(srv, "alice")
    err(client(srv, good[:-2] + "xx").get("/v1/memories"), 401, "unauthorized")
    # a bad key is refused before the body is read
    err(client(srv, "nonsense").post("/v1/memories", content=b"{not json", headers={"content-type": "application/json"}),
        401, "unauthorized")
    assert err(alice.get("/v1/memories", params={"user_id": "bob"}), 403, "forbidden")["field"] == "user_id"
    assert "scope" in err(reader.post("/v1/memories", json={"text": "x y z"}), 403, "forbidden")["message"]
    assert reader.post("/v1/memories/search", json={"query": "x"}).status_code == 200
    err(alice.get("/v1/memories/doesnotexist"), 404, "not_found")
    err(alice.get("/v1/no/such/route"), 404, "not_found")
    big = {"text": "长" * (srv.mem.settings.server.max_body_bytes // 3 + 10)}
    err(alice.post("/v1/memories", json=big), 413, "body_too_large")
    e = err(alice.post("/v1/memories", content=b'{"text": "unclosed', headers={"content-type": "application/json"}),
            422, "invalid_input")
    assert e["field"] == "body" and "JSON" in e["message"]
    assert err(alice.post("/v1/memories/search", json={}), 422, "invalid_input")["field"] == "query"
    assert err(alice.post("/v1/memories", json={"text": "a", "importance": "high"}), 422, "invalid_input")["field"] \
        == "importance"
    assert err(alice.post("/v1/memories", json={"text": "a", "colour": 1}), 422, "invalid_input")["field"] == "colour"
    assert err(alice.post("/v1/memories", json={}), 422, "invalid_input")["field"] == "text"
    e = err(alice.post("/v1/memories", json={"text": "my wifi password is hunter2xyz"}), 422, "secret_refused")
    assert "password" in e["message"]
    err(alice.post("/v1/memories", json={"text": "hi", "structured_data": {"token": "sk-live-abcdefabcdef0123456789abcd"}}),
        422, "secret_refused")
    err(alice.get("/v1/memories", params={"limit": 0}), 422, "invalid_input")
    e = err(alice.post("/v1/memories/search", content=b'{"query": "x"}', headers={"content-type": "text/plain"}),
            422, "invalid_input")
    assert "application/json" in e["message"]

    def boom(*a, **k):
        raise RuntimeError("secret internals /etc/passwd")

    real_embed = srv.mem.embedder.embed
    srv.mem.embedder.embed = boom  # the embedder fails: the health check says so with 503
    try:
        r = httpx.get(srv.url + "/healthz")
        assert r.status_code == 503 and r.json()["status"] == "unavailable" and "embedder" in r.json()["detail"]
        assert "/etc/passwd" not in r.text  # anyone may ask /healthz: no error text
    finally:
        srv.mem.embedder.embed = real_embed
    srv.mem.stats = boom  # an unexpected failure: a 500 in the same shape, no trace, no internals
    e = err(alice.get("/v1/stats"), 500, "internal_error")
    assert "/etc/passwd" not in e["message"]


def test_isolation_between_keys_and_users(srv):
    a1, a2 = client(srv, key_for(srv, "alice")), client(srv, key_for(srv, "alice"))
    bob = client(srv, key_for(srv, "bob"))
    admin = client(srv, key_for(srv, "*", scope="admin"))
    mine = a1.post("/v1/memories", json={"text": "Alice's locker code spot is behind the gym"}).json()["added"][0]
    bob.post("/v1/memories", json={"text": "Bob keeps bees on the roof"})
    assert a2.get(f"/v1/memories/{mine['id']}").status_code == 200  # another key of the same user
    err(bob.get(f"/v1/memories/{mine['id']}"), 404, "not_found")  # bob's namespace has no such memory
    err(bob.get(f"/v1/memories/{mine['id']}", params={"user_id": "alice"}), 403, "forbidden")
    err(bob.delete(f"/v1/memories/{mine['id']}", params={"user_id": "alice"}), 403, "forbidden")
    err(bob.patch(f"/v1/memories/{mine['id']}", json={"content": "x"}), 404, "not_found")
    found = bob.post("/v1/memories/search", json={"query": "locker gym"}).json()["results"]
    assert not [h for h in found if "locker" in h["content"]]
    assert {r["user_id"] for r in bob.get("/v1/export").json()["results"]} == {"bob"}
    err(bob.post("/v1/import", json={"records": [{**mine, "content": "hijacked"}]}), 403, "forbidden")
    assert a1.get(f"/v1/memories/{mine['id']}").json()["content"] == mine["content"]
    assert admin.get(f"/v1/memories/{mine['id']}", params={"user_id": "alice"}).status_code == 200
    assert admin.get("/v1/stats", params={"user_id": "bob"}).json()["user_id"] == "bob"
    with pytest.raises(Exception, match="only an admin key"):
        srv.keys.create(["*"], "write")


def test_revocation_from_another_process_is_seen_at_once(srv, root: Path):
    made = run_cli(root, "keys", "create", "--user", "alice", "--scope", "read", "--name", "ci", "--json")
    assert made.returncode == 0, made.stderr
    info = json.loads(made.stdout)
    assert info["key"].startswith("mfk_") and info["scope"] == "read" and "digest" not in info
    c = client(srv, info["key"])
    assert c.get("/v1/whoami").json()["key_id"] == info["key_id"]
    plain = run_cli(root, "keys", "create", "--user", "bob")
    last = plain.stdout.strip().splitlines()[-1]
    assert last.startswith("mfk_") and " " not in last
    listed = run_cli(root, "keys", "list", "--json")
    rows = {k["key_id"]: k for k in json.loads(listed.stdout)}
    assert rows[info["key_id"]]["revoked_at"] is None and all("digest" not in k for k in rows.values())
    stored = json.dumps(list(srv.mem.index.iter_states()), default=str)
    assert info["key"].split("_", 2)[2] not in stored and last.split("_", 2)[2] not in stored  # only hashes stored
    revoked = run_cli(root, "keys", "revoke", info["key_id"])
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    err(c.get("/v1/whoami"), 401, "unauthorized")
    assert "revoked" in run_cli(root, "keys", "list").stdout
    bad = run_cli(root, "keys", "revoke", "nosuchkey")
    assert bad.returncode == 1 and "no API key" in bad.stderr


def test_tools_over_http_give_the_tools_layer_results(srv):
    from memfold.tools import TOOLS, call

    c = client(srv, key_for(srv, "alice"))
    listed = c.get("/v1/tools", params={"language": "zh"}).json()["results"]
    assert [t["function"]["name"] for t in listed] == list(TOOLS)
    r = c.post("/v1/tools/memory_append", params={"agent_id": "coder"}, json={"content": "我的猫叫团子"})
    assert r.status_code == 200 and r.json()["ok"] and r.json()["stored"][0]["file"] == "MEMORY.md"
    assert c.get("/v1/pins/coder").json()["recent_memories"] == ["我的猫叫团子"]
    over_http = c.post("/v1/tools/memory_read", json={}).json()
    assert over_http == call(srv.mem, "memory_read", {}, user_id="alice") and "团子" in over_http["text"]
    hits = c.post("/v1/tools/memory_search", json={"query": "猫"}).json()["results"]
    assert hits[0]["content"] == "我的猫叫团子"
    r = c.post("/v1/tools/memory_edit", json={"path": "MEMORY.md", "old_text": "not there at all", "new_text": "x"})
    assert r.status_code == 422 and r.json()["ok"] is False and r.json()["error"]["code"] == "no_match"
    assert err(c.post("/v1/tools/memory_search", json={"query": "猫", "bogus": 1}), 422, "invalid_input")["field"] \
        == "bogus"
    r = c.post("/v1/tools/no_such_tool", json={})
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_tool"
    reader = client(srv, key_for(srv, "alice", scope="read"))
    assert reader.post("/v1/tools/memory_search", json={"query": "猫"}).status_code == 200
    err(reader.post("/v1/tools/memory_append", json={"content": "x"}), 403, "forbidden")
    err(c.post("/v1/tools/memory_read", params={"user_id": "bob"}, json={}), 403, "forbidden")
    srv.mem.set_memory_enabled(False, "alice")  # memory off: the tools answer 409 memory_off
    r = c.post("/v1/tools/memory_search", json={"query": "猫"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "memory_off"


def test_plugins_add_routes_and_background_tasks(mem: Memory, monkeypatch: pytest.MonkeyPatch):
    from memfold.server import plugins

    monkeypatch.setattr(plugins, "ROUTES", [])
    monkeypatch.setattr(plugins, "STARTUP", [])
    events: list[str] = []

    @plugins.add_routes
    def metrics(app, memory):
        @app.get("/metrics")
        def _metrics() -> dict:
            return {"users": len(memory.users())}

    @plugins.on_startup
    def maintenance(app, memory):
        events.append("started")
        return lambda: events.append("stopped")

    with LiveServer(create_app(mem)) as s:
        assert httpx.get(s.url + "/metrics").json() == {"users": 0}
        assert events == ["started"]
    assert events == ["started", "stopped"]


def test_the_server_runs_maintenance_in_the_background(root: Path):
    """`memfold serve`'s built-in startup task: the due jobs run without anyone calling maintain,
    and stop with the server."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.toml").write_text("[server]\nmaintenance_interval_minutes = 0.005\n", encoding="utf-8")
    with Memory(root=root, embedder=HashEmbedder()) as m:
        done = m.add("[x] Buy a birthday present for Anna", "alice", memory_type="todo").added[0]
        with LiveServer(create_app(m)) as s:
            c = client(s, KeyStore(m.index).create(["alice"], "read")[0])
            deadline = time.monotonic() + 60
            while m.get(done.id, "alice").is_active and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not m.get(done.id, "alice").is_active, "the finished todo was not archived in the background"
            assert "birthday present" not in c.get("/v1/memory-md").json()["text"]
            # GET /metrics (Prometheus text) shows the background jobs' runs
            fams = {f.name: f for f in text_string_to_metric_families(httpx.get(s.url + "/metrics").text)}
            jobs = {s.labels["job"]: s.value for s in fams["memfold_maintenance_job_duration_seconds"].samples
                    if s.name.endswith("_count") and s.labels["outcome"] == "ok"}
            assert jobs.get("tidy", 0) >= 1, jobs
        assert m.settings.server.maintenance_interval_minutes == 0.005
