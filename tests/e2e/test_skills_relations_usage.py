"""Skills, relations and the usage record through the CLI (its ``main()`` in the test process) and the HTTP API
(uvicorn on a loopback port, httpx)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from memfold import Memory
from memfold.client import Client
from memfold.server.app import create_app
from memfold.server.keys import KeyStore

from ..conftest import run_cli
from ..support.live_server import LiveServer


def cli_json(root: Path, *args: str):  # type: ignore[no-untyped-def]
    out = run_cli(root, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_skills_relations_and_usage_from_the_command_line(root: Path) -> None:
    assert run_cli(root, "init", "--user", "alice").returncode == 0
    added = cli_json(root, "skill", "add", "Publish the docs site", "--when", "the user asks to publish the docs",
                     "--step", "mkdocs build --strict", "--step", "rsync -a site/ web:/var/www/docs",
                     "--tool", "mkdocs", "--tool", "rsync", "--user", "alice")
    sid = added["added"][0]["id"]
    used = cli_json(root, "skill", "used", sid, "--user", "alice")
    assert used["successes"] == 1 and used["steps"] == ["mkdocs build --strict", "rsync -a site/ web:/var/www/docs"]
    listing = run_cli(root, "skill", "list", "--user", "alice")
    assert "Publish the docs site (1 success, last " in listing.stdout and "2. rsync -a site/" in listing.stdout
    context = run_cli(root, "context", "how do I publish the docs?", "--user", "alice")
    assert "1. mkdocs build --strict" in context.stdout, context.stdout

    home = cli_json(root, "add", "I live in Lisbon", "--user", "alice")["added"][0]["id"]
    office = cli_json(root, "add", "My office is by the Tagus river", "--user", "alice")["added"][0]["id"]
    rel = cli_json(root, "relation", "add", office, "supports", home, "--strength", "0.8", "--user", "alice")
    assert (rel["relation"], rel["strength"]) == ("supports", 0.8)
    assert [r["id"] for r in cli_json(root, "relation", "list", home, "--user", "alice")] == [office]
    hits = cli_json(root, "search", "where do I live", "--related", "--user", "alice")
    assert hits[0]["id"] == home and hits[0]["related"][0]["id"] == office
    shown = run_cli(root, "search", "where do I live", "--related", "--user", "alice")
    assert "supports ← " + office in shown.stdout and "Tagus" in shown.stdout
    bad = run_cli(root, "relation", "add", office, "likes", home, "--user", "alice")
    assert bad.returncode != 0 and "unknown relation 'likes'" in bad.stderr
    assert cli_json(root, "relation", "remove", office, home, "--user", "alice") == {"removed": 1}
    assert cli_json(root, "relation", "list", home, "--user", "alice") == []

    run_cli(root, "search", "quantum chromodynamics", "--user", "alice")
    stats = run_cli(root, "stats", "--user", "alice").stdout
    assert "most used memories:" in stats and "I live in Lisbon" in stats
    assert "queries that found nothing:" in stats and "quantum chromodynamics" in stats
    assert run_cli(root, "delete", home, "--user", "alice").returncode == 0
    after = cli_json(root, "stats", "--user", "alice")["usage"]
    assert home not in {u["id"] for u in after["most_used"]}
    assert all(home not in json.dumps(u) for u in after["most_used"])


def test_skills_relations_and_usage_over_http(mem: Memory) -> None:
    mem.init("alice", "zh")
    write, _ = KeyStore(mem.index).create(["alice"], "write", "agent")
    read, _ = KeyStore(mem.index).create(["alice"], "read", "viewer")
    with LiveServer(create_app(mem)) as srv:
        c = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {write}"}, timeout=120)
        viewer = httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {read}"}, timeout=120)
        r = c.post("/v1/skills", json={"name": "给客户发周报", "when_to_use": "每周五下班前",
                                       "steps": ["汇总本周的工单", "用模板写周报", "发邮件给客户"], "tools": ["邮件"]})
        assert r.status_code == 200, r.text
        sid = r.json()["added"][0]["id"]
        r = c.post(f"/v1/skills/{sid}/success")
        assert r.status_code == 200 and "成功次数：1" in r.json()["content"], r.text
        (skill,) = viewer.get("/v1/skills").json()["results"]
        assert skill["steps"] == ["汇总本周的工单", "用模板写周报", "发邮件给客户"] and skill["successes"] == 1
        r = c.post("/v1/tools/save_memory", json={"content": "续签 TLS 证书", "memory_type": "skill",
                                                   "steps": ["certbot renew", "重新加载 nginx"]})
        assert r.status_code == 200 and r.json()["ok"], r.text
        ctx = c.post("/v1/context", json={"user_message": "帮我把这周的周报发给客户"}).json()
        assert "3. 发邮件给客户" in json.dumps(ctx, ensure_ascii=False)
        too_many = c.post("/v1/skills", json={"name": "x", "steps": ["s"] * 51})
        assert too_many.status_code == 413 and too_many.json()["error"]["field"] == "steps"

        home = c.post("/v1/memories", json={"text": "我住在杭州"}).json()["added"][0]["id"]
        lake = c.post("/v1/memories", json={"text": "我家离西湖很近"}).json()["added"][0]["id"]
        r = c.post("/v1/relations", json={"source_id": lake, "target_id": home, "relation": "supports",
                                          "strength": 0.9})
        assert r.status_code == 200 and r.json()["strength"] == 0.9, r.text
        assert viewer.post("/v1/relations", json={"source_id": lake, "target_id": home,
                                                   "relation": "supports"}).status_code == 403
        assert c.post("/v1/relations", json={"source_id": lake, "target_id": home,
                                             "relation": "likes"}).status_code == 422
        assert c.post("/v1/relations", json={"source_id": lake, "target_id": "nope",
                                             "relation": "supports"}).status_code == 404
        (rel,) = viewer.get(f"/v1/memories/{home}/relations").json()["results"]
        assert (rel["relation"], rel["direction"], rel["id"], rel["content"]) == ("supports", "from", lake, "我家离西湖很近")
        hits = viewer.post("/v1/memories/search", json={"query": "我住在哪里", "related": True}).json()["results"]
        assert hits[0]["id"] == home and hits[0]["related"][0]["id"] == lake
        assert viewer.post("/v1/memories/search", json={"query": "我住在哪里"}).json()["results"][0].get("related") is None
        with Client(srv.url, read) as py:  # the Python HTTP client asks for them too
            assert py.search("我住在哪里", related=True)[0].related[0]["id"] == lake
            assert py.search("我住在哪里")[0].related is None
        tool = c.post("/v1/tools/memory_relate", json={"memory_id": home}).json()
        assert tool["ok"] and tool["related"][0]["id"] == lake
        r = c.delete("/v1/relations", params={"source_id": lake, "target_id": home, "relation": "supports"})
        assert r.json() == {"removed": 1}
        assert viewer.get(f"/v1/memories/{home}/relations").json() == {"results": [], "next": None}

        viewer.post("/v1/memories/search", json={"query": "量子色动力学"})
        usage = viewer.get("/v1/usage").json()
        assert home in {u["id"] for u in usage["most_used"]}
        assert "量子色动力学" in {q["query"] for q in usage["no_results"]}
        assert viewer.get("/v1/stats").json()["usage"]["searches"] == usage["searches"]
        assert c.delete(f"/v1/memories/{home}").status_code == 200
        assert home not in {u["id"] for u in viewer.get("/v1/usage").json()["most_used"]}
        assert all(home not in r["ids"] for r in mem.index.usage("alice", 1000))
