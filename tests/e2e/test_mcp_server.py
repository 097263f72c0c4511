"""``memfold mcp`` driven by the official MCP SDK's own client: the real command in a subprocess
over stdio (and one streamable-HTTP server), every tool called in English and in Chinese, the
files and the index checked afterwards through ``Memory`` on the same root, and one user's
memory never visible from another user's server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memfold import Memory
from memfold.limits import MAX_QUERY_CHARS, MAX_TOOL_RESULTS
from memfold.models import EPISODIC
from memfold.tools import TOOLS, input_schema

from ..conftest import run_cli

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

URI = "memfold://memory/MEMORY.md"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMFOLD_")}


def _server(root: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "memfold", "--root", str(root), "mcp", *args],
                                 env=_env())


async def _call(client: Any, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(is_error, the JSON of the text content), checking text and structured content agree."""
    res = await client.call_tool(name, args)
    assert len(res.content) == 1 and res.content[0].type == "text"
    data = json.loads(res.content[0].text)
    assert res.structured_content == data
    assert data["ok"] is (not res.is_error)
    return res.is_error, data


def _file_records(mem: Memory, user: str) -> dict[str, Any]:
    return {r.content: r for r in mem.get_all(user) if r.file != EPISODIC}


async def _english_session(client: Any) -> dict[str, str]:
    """Every tool once (and its errors) in an English namespace; returns ids for the checks."""
    ids: dict[str, str] = {}
    err, res = await _call(client, "memory_append", {"content": "I like green tea"})
    assert not err and res["stored"][0]["memory_type"] == "preference"
    err, res = await _call(client, "memory_append", {"content": "Booked the dentist for Friday", "slot": "today"})
    assert not err and res["slot"] == "today" and res["stored"][0]["file"].startswith("memory/")
    ids["note_file"] = res["stored"][0]["file"]
    err, res = await _call(client, "save_memory", {"content": "My sister Clara lives in Lisbon",
                                                   "memory_type": "fact", "importance": 0.9})
    assert not err and res["stored"][0]["importance"] == 0.9
    ids["clara"] = res["stored"][0]["id"]
    err, res = await _call(client, "memory_search", {"query": "what tea does the user like?", "limit": 3})
    assert not err and res["results"][0]["content"] == "I like green tea"
    err, res = await _call(client, "memory_search", {"query": "Clara", "memory_type": "fact"})
    assert not err and [r["id"] for r in res["results"]] == [ids["clara"]]
    err, res = await _call(client, "memory_read", {"section": "Preferences & Habits"})
    assert not err and "I like green tea" in res["text"] and "Clara" not in res["text"]
    assert "mf:" not in res["text"] and "Notes" in " ".join(res["sections"])
    err, res = await _call(client, "memory_edit", {"path": "MEMORY.md", "old_text": "I like green tea",
                                                   "new_text": "I like jasmine tea"})
    assert not err and (res["updated"] or res["added"]), res
    err, res = await _call(client, "write_file", {"path": "MEMORY.md",
                                                  "content": "## Notes\n- My bike is a red Gazelle\n"})
    assert not err and res["redirected_to"] == "MEMORY.md" and res["stored"][0]["content"] == "My bike is a red Gazelle"
    err, res = await _call(client, "memory_forget", {"query_or_id": "Gazelle", "dry_run": True})
    assert not err and res["dry_run"] and len(res["forgotten"]) == 1
    err, res = await _call(client, "memory_forget", {"query_or_id": "Gazelle"})
    assert not err and res["forgotten"][0]["content"] == "My bike is a red Gazelle"
    # error results the model can read (the code and the field at fault); the server goes on
    for name, args, code, field in (
            ("memory_edit", {"path": "MEMORY.md", "old_text": "no such words", "new_text": "x"}, "no_match", None),
            ("memory_edit", {"path": "../bob/MEMORY.md", "old_text": "a", "new_text": "b"}, "path_refused", None),
            ("write_file", {"path": "notes.txt", "content": "hello"}, "path_refused", None),
            ("memory_search", {}, "invalid_input", "query"),
            ("memory_search", {"query": "tea", "limit": "many"}, "invalid_input", "limit"),
            ("memory_search", {"query": "q" * (MAX_QUERY_CHARS + 1)}, "limit_exceeded", "query"),
            ("memory_search", {"query": "tea", "limit": MAX_TOOL_RESULTS + 1}, "out_of_range", "limit"),
            ("memory_relate", {"memory_id": "m-nosuchid"}, "not_found", "memory_id"),
            ("memory_forget", {"query_or_id": "zeppelin"}, "no_match", None),
            ("memory_fly", {}, "unknown_tool", "name")):
        err, res = await _call(client, name, args)
        assert err and res["error"]["code"] == code, (name, res)
        assert field is None or res["error"]["field"] == field, (name, res)
    return ids


async def _chinese_session(client: Any) -> None:
    err, res = await _call(client, "memory_append", {"content": "我喜欢喝乌龙茶"})
    assert not err and res["stored"][0]["memory_type"] == "preference"
    err, res = await _call(client, "save_memory", {"content": "用户的女儿叫小美，九月一日开学", "memory_type": "fact",
                                                   "importance": 0.8})
    assert not err
    err, res = await _call(client, "memory_append", {"content": "今天下午三点开会", "slot": "today"})
    assert not err and res["slot"] == "today"
    err, res = await _call(client, "memory_search", {"query": "用户喜欢喝什么茶"})
    assert not err and res["results"][0]["content"] == "我喜欢喝乌龙茶"
    err, res = await _call(client, "memory_read", {"section": "偏好与习惯"})
    assert not err and "我喜欢喝乌龙茶" in res["text"]
    err, res = await _call(client, "memory_edit", {"path": "MEMORY.md", "old_text": "我喜欢喝乌龙茶",
                                                   "new_text": "我喜欢喝普洱茶"})
    assert not err, res
    err, res = await _call(client, "write_file", {"path": "MEMORY.md", "content": "- 用户的猫叫咪咪\n"})
    assert not err and res["stored"][0]["content"] == "用户的猫叫咪咪"
    err, res = await _call(client, "memory_forget", {"query_or_id": "咪咪"})
    assert not err and len(res["forgotten"]) == 1
    err, res = await _call(client, "memory_edit", {"path": "/etc/passwd", "old_text": "root", "new_text": "x"})
    assert err and res["error"]["code"] == "path_refused"


async def _isolation(client: Any) -> None:
    """bob's server sees nothing of alice's and cannot touch it."""
    for q in ("green tea", "jasmine tea", "Clara Lisbon", "dentist"):
        err, res = await _call(client, "memory_search", {"query": q})
        assert not err and not any(w in r["content"] for r in res["results"] for w in ("jasmine", "Clara", "dentist"))
    err, res = await _call(client, "memory_read", {})
    assert not err and "jasmine" not in res["text"] and "Clara" not in res["text"]
    err, res = await _call(client, "memory_forget", {"query_or_id": "Clara"})
    assert err and res["error"]["code"] == "no_match"
    for path in ("../alice/MEMORY.md", "alice/MEMORY.md"):
        err, res = await _call(client, "memory_edit", {"path": path, "old_text": "jasmine", "new_text": "coffee"})
        assert err and res["error"]["code"] in ("path_refused", "not_found", "no_match"), res
    contents = (await client.read_resource(URI)).contents
    assert "jasmine" not in contents[0].text and "普洱茶" in contents[0].text


def test_stdio_server_tools_files_index_and_isolation(tmp_path: Path, embedder) -> None:
    root = tmp_path / "ws"
    with Memory(root=root, embedder=embedder) as m:
        m.init("bob", "zh")  # bob's memory is in Chinese: descriptions and headings follow it

    async def main() -> dict[str, str]:
        async with Client(_server(root, "--user", "alice", "--agent", "helper")) as alice, \
                Client(_server(root, "--user", "bob")) as bob:
            listed = (await alice.list_tools()).tools
            assert [t.name for t in listed] == list(TOOLS)
            for t in listed:  # the tools layer's schemas, not a second declaration
                assert t.input_schema == input_schema(TOOLS[t.name], "en")
                assert t.description == TOOLS[t.name].describe("en")
                assert t.annotations.read_only_hint is (not TOOLS[t.name].writes)
            zh = {t.name: t for t in (await bob.list_tools()).tools}
            assert zh["memory_search"].description == TOOLS["memory_search"].describe("zh")
            assert zh["memory_search"].input_schema == input_schema(TOOLS["memory_search"], "zh")
            ids = await _english_session(alice)
            await _chinese_session(bob)
            await _isolation(bob)
            resources = (await alice.list_resources()).resources
            assert [str(r.uri) for r in resources] == [URI]
            text = (await alice.read_resource(URI)).contents[0].text
            assert "I like jasmine tea" in text and "Clara" in text and "mf:" not in text
            with pytest.raises(mcp.MCPError, match="no resource") as refused:
                await alice.read_resource("memfold://memory/../bob/MEMORY.md")
            assert refused.value.error.code == -32002  # the MCP code of errors.CODES["not_found"]
            assert refused.value.error.data == {"code": "not_found", "field": "uri"}
            return ids

    ids = anyio.run(main)
    # the files on disk
    alice_md = (root / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert "I like jasmine tea" in alice_md and "I like green tea" not in alice_md and "Gazelle" not in alice_md
    assert "Booked the dentist for Friday" in (root / "alice" / ids["note_file"]).read_text(encoding="utf-8")
    bob_md = (root / "bob" / "MEMORY.md").read_text(encoding="utf-8")
    assert "## 偏好与习惯" in bob_md and "我喜欢喝普洱茶" in bob_md and "咪咪" not in bob_md
    assert "jasmine" not in bob_md and "Clara" not in bob_md
    # the index, through Memory on the same root
    with Memory(root=root, embedder=embedder) as m:
        alice = _file_records(m, "alice")
        assert "I like jasmine tea" in alice and "I like green tea" not in alice
        assert "My bike is a red Gazelle" not in alice
        assert alice["My sister Clara lives in Lisbon"].importance == 0.9
        assert m.get(ids["clara"], "alice").memory_type.value == "fact"
        edited = alice["I like jasmine tea"]
        edits = [h for h in m.history(edited.id, "alice") if h.action == "edit"]
        assert edits and "memory_edit" in json.dumps(edits[-1].detail), [h.to_dict() for h in edits]
        pinned = m.recent_memories("helper", "alice")  # saved through --agent helper: pinned, as edited since
        assert "I like jasmine tea" in pinned and "I like green tea" not in pinned
        bob = _file_records(m, "bob")
        assert "我喜欢喝普洱茶" in bob and "用户的女儿叫小美，九月一日开学" in bob and "用户的猫叫咪咪" not in bob
        assert all("jasmine" not in h.record.content for h in m.search("jasmine tea", "bob", record_access=False))
        assert all(h.record.user_id == "alice" for h in m.search("茶 tea", "alice", record_access=False))


def test_memory_off_lists_no_tools_and_writes_nothing(tmp_path: Path, embedder) -> None:
    root = tmp_path / "ws"
    with Memory(root=root, embedder=embedder) as m:
        m.add("I like green tea", "carol")
        m.set_memory_enabled(False, "carol")
        before = (root / "carol" / "MEMORY.md").read_text(encoding="utf-8")

    async def main() -> None:
        async with Client(_server(root, "--user", "carol")) as c:
            assert (await c.list_tools()).tools == []
            assert (await c.list_resources()).resources == []
            err, res = await _call(c, "memory_append", {"content": "I like black coffee"})
            assert err and res["error"]["code"] == "memory_off"
            err, res = await _call(c, "memory_search", {"query": "tea"})
            assert err and res["error"]["code"] == "memory_off"

    anyio.run(main)
    assert (root / "carol" / "MEMORY.md").read_text(encoding="utf-8") == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_server(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "config.toml").write_text('[server]\nallowed_hosts = "memory.example.com"\n', encoding="utf-8")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "memfold", "--root", str(root), "mcp", "--http", "--port",
                             str(port), "--user", "dora"], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # wait until it listens (loading the embedder comes first)
            assert proc.poll() is None, proc.communicate()[1]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                assert [t.name for t in (await c.list_tools()).tools] == list(TOOLS)
                err, res = await _call(c, "memory_append", {"content": "Remember that I take the 7:40 train"})
                assert not err
                err, res = await _call(c, "memory_search", {"query": "which train"})
                assert not err and "7:40" in res["results"][0]["content"]
                err, res = await _call(c, "memory_edit", {"path": "../x/MEMORY.md", "old_text": "a", "new_text": "b"})
                assert err and res["error"]["code"] == "path_refused"
                assert "7:40" in (await c.read_resource(URI)).contents[0].text

        anyio.run(main)
        # Host and Origin: the rule memfold serve applies (loopback names and [server] allowed_hosts)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        hdrs = {"Accept": "application/json, text/event-stream"}
        url = f"http://127.0.0.1:{port}/mcp"
        assert httpx.post(url, json=ping, headers={**hdrs, "Host": "evil.example"}).status_code == 421
        assert httpx.post(url, json=ping, headers={**hdrs, "Origin": "http://evil.example"}).status_code == 403
        for host in ("memory.example.com", f"memory.example.com:{port}", "localhost"):
            assert httpx.post(url, json=ping, headers={**hdrs, "Host": host}).status_code not in (403, 421), host
        assert httpx.post(url, json=ping, headers={**hdrs, "Origin": "https://memory.example.com"}).status_code \
            not in (403, 421)
    finally:
        proc.terminate()
        out, errs = proc.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/mcp" in errs and out == ""
    assert "7:40" in (root / "dora" / "MEMORY.md").read_text(encoding="utf-8")


def test_bad_arguments_are_refused_before_serving(tmp_path: Path) -> None:
    for args, words in ((["--user", "../bob"], "user"), (["--http", "--port", "0"], "--port"),
                        (["--agent", "a\nb"], "agent")):
        res = run_cli(tmp_path / "ws", "mcp", *args)
        assert res.returncode == 1 and res.stderr.startswith("error:") and words in res.stderr, res.stderr
        assert res.stdout == ""


def test_a_running_server_compresses_a_due_namespace_in_the_background(tmp_path: Path, embedder) -> None:
    """``memfold mcp`` left running: old memories of a namespace (another one than the server's) are
    compressed by the server's own maintenance thread, no tool call waiting for it; with
    ``[maintenance] background = false`` the same server changes nothing."""
    from datetime import datetime, timedelta, timezone

    from memfold.engine.storage.records import new_id
    from memfold.models import MemoryRecord, MemoryType

    root = tmp_path / "ws"
    at = datetime.now(timezone.utc) - timedelta(days=200)
    old = ["The user drinks coffee: an espresso every morning before work",
           "The user drinks coffee: a latte after lunch on weekdays",
           "The user drinks coffee: a decaf in the evening when reading",
           "The user drinks coffee: a cold brew on hot summer days"]
    with Memory(root=root, embedder=embedder, background=False) as m:
        m.import_records([MemoryRecord(id=new_id(), user_id="dora", memory_type=MemoryType.FACT, content=t,
                                       created_at=at, updated_at=at).to_dict() for t in old])
    memory_md = root / "dora" / "MEMORY.md"
    before = memory_md.read_text(encoding="utf-8")
    assert before.count("The user drinks coffee") == 4

    async def served(background: bool, wait: float) -> None:
        (root / "config.toml").write_text(f"[maintenance]\nbackground = {str(background).lower()}\n"
                                          "first_run_seconds = 0.2\npause_seconds = 0\n", encoding="utf-8")
        async with Client(_server(root, "--user", "alice")) as client:
            err, res = await _call(client, "memory_search", {"query": "coffee"})  # alice's: nothing, at once
            assert not err and res["results"] == []
            end = time.monotonic() + wait
            while time.monotonic() < end and memory_md.read_text(encoding="utf-8").count("drinks coffee") == 4:
                await anyio.sleep(0.2)

    anyio.run(served, False, 3.0)
    assert memory_md.read_text(encoding="utf-8") == before  # switched off: nothing ran
    anyio.run(served, True, 90.0)
    after = memory_md.read_text(encoding="utf-8")
    assert after.count("The user drinks coffee") == 1 and "latte after lunch" in after, after
    assert "espresso every morning before work" in (root / "dora" / "archive.md").read_text(encoding="utf-8")
    with Memory(root=root, embedder=embedder, background=False) as m:
        state = m.index.get_state("dora", "maintenance", "compress_old_memories")
        assert state and state["last_status"] == "done"
