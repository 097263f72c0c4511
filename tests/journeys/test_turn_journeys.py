"""Short user journeys about conversation turns and the memories taken from them, in English and
Chinese, each a few calls through the library, the CLI, the tools, MCP or HTTP, each asserting what
the user (or the agent) sees: every fact once, every result saying what it is, a neighbouring
turn's words never outranking a turn that says the thing itself, and hand edits that take at once.
The real bundled embedder, real files, a real SQLite index, a real HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

from memfold import Memory
from memfold.server.app import create_app
from memfold.server.keys import KeyStore
from memfold.tools import dispatch

from ..conftest import run_cli
from ..support.live_server import LiveServer


def talk(mem: Memory, user: str, *lines: str, infer: bool = True) -> list:
    """A user says ``lines`` one after the other (no assistant replies in between); what was stored."""
    return list(mem.add([{"role": "user", "content": line} for line in lines], user, infer=infer).added)


def shown(hits: list) -> list[tuple[str, str]]:
    return [(h.record.kind, h.record.content) for h in hits]


def memory_md(root: Path, user: str) -> Path:
    return root / user / "MEMORY.md"


def context_text(mem: Memory, message: str, user: str) -> str:
    return mem.build_context(message, user)[0]["content"]


# ---- one fact once, and every result says what it is ------------------------------------------
def test_window_seat_preference_is_found_and_listed_once(mem: Memory) -> None:
    talk(mem, "ana", "I prefer window seats on long flights")
    hits = mem.search("window seat", "ana")
    assert [c for _, c in shown(hits)].count("I prefer window seats on long flights") == 1
    assert hits[0].record.kind == "preference" and hits[0].record.source_ids  # the turn's key, kept as a source
    listed = [r.content for r in mem.get_all("ana")]
    assert listed.count("I prefer window seats on long flights") == 1


def test_chinese_todo_is_listed_once_as_a_todo_not_as_an_event(mem: Memory) -> None:
    talk(mem, "xiaowang", "提醒我明天给王经理打电话")
    rows = [(r.kind, r.content) for r in mem.get_all("xiaowang")]
    assert rows == [("todo", "提醒我明天给王经理打电话")]
    assert shown(mem.search("王经理", "xiaowang")) == [("todo", "提醒我明天给王经理打电话")]


def test_a_turn_with_nothing_extracted_says_it_is_a_turn(mem: Memory) -> None:
    talk(mem, "lea", "We spent the whole afternoon at the flea market", infer=False)
    talk(mem, "lea", "I love jazz music")
    kinds = dict((c, k) for k, c in shown(mem.search("flea market jazz", "lea")))
    assert kinds["We spent the whole afternoon at the flea market"] == "turn"
    assert kinds["I love jazz music"] == "preference"
    assert "event" not in kinds.values()


def test_chinese_near_identical_words_count_once(mem: Memory) -> None:
    mem.add("我最喜欢的水果是芒果。", "amei")  # said to the agent as a memory…
    talk(mem, "amei", "我最喜欢的水果是芒果", infer=False)  # …and again in a conversation
    hits = mem.search("芒果", "amei")
    assert len([h for h in hits if "芒果" in h.record.content]) == 1
    assert hits[0].record.kind != "turn"  # the memory stands for the turn with its words


def test_context_injects_a_chinese_preference_once(mem: Memory) -> None:
    talk(mem, "amei", "我喜欢周末去爬山，特别是香山")
    text = context_text(mem, "这个周末我去哪儿玩？", "amei")
    assert text.count("我喜欢周末去爬山，特别是香山") == 1


def test_cli_search_and_list_label_turns_and_memories(root: Path) -> None:
    with Memory(root=root) as mem:
        talk(mem, "ben", "My dog is called Bob")
        talk(mem, "ben", "We walked along the river after dinner", infer=False)
    res = run_cli(root, "search", "dog Bob river", "--user", "ben", "--json")
    assert res.returncode == 0, res.stderr
    got = [(h["kind"], h["content"]) for h in json.loads(res.stdout)]
    assert ("fact", "My dog is called Bob") in got and ("turn", "We walked along the river after dinner") in got
    assert [c for _, c in got].count("My dog is called Bob") == 1
    listed = run_cli(root, "list", "--user", "ben")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("My dog is called Bob") == 1 and "[fact] My dog is called Bob" in listed.stdout
    assert "[turn] We walked along the river after dinner" in listed.stdout and "[event]" not in listed.stdout


def test_chinese_tool_search_returns_each_fact_once_with_its_kind(mem: Memory) -> None:
    talk(mem, "xiaoli", "我最喜欢的水果是芒果")
    talk(mem, "xiaoli", "我们在公园里散步，看到了很多鸽子", infer=False)
    res = dispatch.call(mem, "memory_search", {"query": "芒果 公园"}, user_id="xiaoli")
    assert res["ok"], res
    got = [(r["kind"], r["content"]) for r in res["results"]]
    assert [c for _, c in got].count("我最喜欢的水果是芒果") == 1
    assert ("preference", "我最喜欢的水果是芒果") in got
    assert ("turn", "我们在公园里散步，看到了很多鸽子") in got


def test_mcp_search_shows_an_english_preference_once(mem: Memory) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memfold.mcp_server import Namespace, build_server

    talk(mem, "cy", "I love jazz music")

    async def main() -> list[dict]:
        async with Client(build_server(mem, Namespace("cy"))) as c:
            res = await c.call_tool("memory_search", {"query": "jazz"})
            return json.loads(res.content[0].text)["results"]

    results = anyio.run(main)
    assert [(r["kind"], r["content"]) for r in results] == [("preference", "I love jazz music")]


def test_http_search_list_and_page_data_show_each_fact_once(mem: Memory) -> None:
    talk(mem, "xiaohong", "我的生日是五月二十号")
    with LiveServer(create_app(mem)) as srv:
        key = KeyStore(mem.index).create(["xiaohong"], "write")[0]
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            hits = c.post("/v1/memories/search", json={"query": "生日"}).json()["results"]
            listed = c.get("/v1/memories").json()["results"]
    assert [(h["kind"], h["content"]) for h in hits] == [("fact", "我的生日是五月二十号")]
    assert [(r["kind"], r["content"]) for r in listed] == [("fact", "我的生日是五月二十号")]


# ---- a neighbour's words help, never steer ------------------------------------------------------
def test_kyoto_is_found_by_the_turn_that_says_it(mem: Memory) -> None:
    talk(mem, "dee", "I'm planning a trip to Kyoto in April", "Remember that I like green tea")
    hits = mem.search("Kyoto", "dee")
    assert hits and "Kyoto" in hits[0].record.content
    assert all("Kyoto" in h.record.content for h in hits if "green tea" in h.record.content) or \
        hits.index(next(h for h in hits if "Kyoto" in h.record.content)) == 0


def test_password_does_not_bring_back_the_chinese_turn_after_it(mem: Memory) -> None:
    talk(mem, "xiaozhou", "I changed my router password yesterday", "我下个月要去上海出差")
    hits = mem.search("password", "xiaozhou")
    assert hits and "password" in hits[0].record.content
    assert not [h for h in hits if "上海" in h.record.content]


def test_chinese_password_does_not_bring_back_the_turn_after_it(mem: Memory) -> None:
    talk(mem, "xiaozhou", "我刚把路由器的密码改了", "我下个月要去上海出差", infer=False)
    hits = mem.search("密码", "xiaozhou")
    assert [h.record.content for h in hits] == ["我刚把路由器的密码改了"]
    trip = mem.search("上海出差", "xiaozhou")  # the turn is still found by its own words
    assert trip and trip[0].record.content == "我下个月要去上海出差"


# ---- the files are the truth, for turns too ------------------------------------------------------
def test_hand_edit_and_deletion_in_memory_md_take_at_once_for_context_and_search(root: Path) -> None:
    with Memory(root=root) as mem:
        talk(mem, "xiaoming", "我喜欢周末去爬山，特别是香山", "我的生日是五月二十号")
    path = memory_md(root, "xiaoming")
    text = path.read_text(encoding="utf-8").replace("香山", "八达岭长城")
    path.write_text("\n".join(line for line in text.split("\n") if "生日" not in line), encoding="utf-8")
    res = run_cli(root, "context", "我周末去哪儿爬山？我的生日快到了", "--user", "xiaoming")
    assert res.returncode == 0, res.stderr
    assert "八达岭长城" in res.stdout
    assert "香山" not in res.stdout and "五月二十号" not in res.stdout
    found = run_cli(root, "search", "生日", "--user", "xiaoming", "--json")
    assert found.returncode == 0, found.stderr
    assert not [h for h in json.loads(found.stdout) if "生日" in h["content"]]


def test_update_supersedes_the_english_turn_it_came_from(mem: Memory) -> None:
    talk(mem, "eve", "My favourite food is ramen")
    food = next(r for r in mem.get_all("eve") if r.kind != "turn")
    mem.update(food.id, "eve", content="My favourite food is pho")
    assert shown(mem.search("favourite food", "eve")) == [(food.kind, "My favourite food is pho")]
    assert "ramen" not in context_text(mem, "What is my favourite food?", "eve")
    old = mem.search("ramen", "eve", include_archived=True)  # still there, archived, for looking back
    assert any(h.record.kind == "turn" and not h.record.is_active for h in old)


def test_forget_tool_takes_the_chinese_turn_along(mem: Memory) -> None:
    talk(mem, "xiaozhang", "提醒我明天给王经理打电话")
    res = dispatch.call(mem, "memory_forget", {"query_or_id": "王经理"}, user_id="xiaozhang")
    assert res["ok"] and res["forgotten"], res
    assert not [h for h in mem.search("王经理 打电话", "xiaozhang") if "王经理" in h.record.content]
    assert "王经理" not in context_text(mem, "我明天要给谁打电话？", "xiaozhang")


def test_http_delete_takes_the_english_turn_along(mem: Memory) -> None:
    talk(mem, "finn", "Please remind me to call the dentist tomorrow")
    todo = next(r for r in mem.get_all("finn") if r.kind == "todo")
    with LiveServer(create_app(mem)) as srv:
        key = KeyStore(mem.index).create(["finn"], "write")[0]
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            assert c.delete(f"/v1/memories/{todo.id}").status_code == 200
            hits = c.post("/v1/memories/search", json={"query": "dentist"}).json()["results"]
            listed = c.get("/v1/memories").json()["results"]
    assert not [h for h in hits if "dentist" in h["content"]]
    assert not [r for r in listed if "dentist" in r["content"]]


def test_memory_edit_tool_changes_what_the_chinese_search_finds(mem: Memory) -> None:
    talk(mem, "xiaoliu", "我最喜欢的水果是芒果")
    res = dispatch.call(mem, "memory_edit", {"path": "MEMORY.md", "old_text": "芒果", "new_text": "荔枝"},
                        user_id="xiaoliu")
    assert res["ok"], res
    assert shown(mem.search("最喜欢的水果", "xiaoliu")) == [("preference", "我最喜欢的水果是荔枝")]
    assert not [h for h in mem.search("芒果", "xiaoliu") if "芒果" in h.record.content]


def test_deleting_a_line_by_hand_hides_the_english_turn_and_putting_it_back_works(root: Path) -> None:
    with Memory(root=root) as mem:
        talk(mem, "gus", "I love jazz music")
        path = memory_md(root, "gus")
        before = path.read_text(encoding="utf-8")
        path.write_text("\n".join(line for line in before.split("\n") if "jazz" not in line), encoding="utf-8")
        assert not [h for h in mem.search("jazz", "gus") if "jazz" in h.record.content]
        assert "jazz" not in context_text(mem, "What music do I like?", "gus")
        path.write_text(before, encoding="utf-8")  # undo: the line is back, and found again
        assert shown(mem.search("jazz", "gus")) == [("preference", "I love jazz music")]


def test_a_hand_edit_leaves_no_stale_hidden_data_zh(tmp_path: Path):
    """改了 MEMORY.md 里看得见的那句话（只改正文），行尾隐藏的数据不再引用旧的说法（香山），索引里也一样。"""
    mem = Memory(tmp_path)
    try:
        talk(mem, "xiaoming", "我喜欢周末去爬山，特别是香山")
        path = memory_md(tmp_path, "xiaoming")
        assert "香山" in path.read_text(encoding="utf-8")
        path.write_text(path.read_text(encoding="utf-8").replace("香山", "八达岭长城", 1), encoding="utf-8")
        hits = mem.search("周末爬山", "xiaoming")
        assert hits and "八达岭长城" in hits[0].record.content
        assert "香山" not in json.dumps(hits[0].record.structured_data, ensure_ascii=False)
        assert "香山" not in path.read_text(encoding="utf-8")
    finally:
        mem.close()


def test_a_hand_edited_date_drops_the_old_date_from_the_data(tmp_path: Path):
    """Moving a deadline by hand: the bullet's hidden data no longer says the old date."""
    mem = Memory(tmp_path)
    try:
        mem.add("Project A is due on March 15", "alice")
        path = memory_md(tmp_path, "alice")
        path.write_text(path.read_text(encoding="utf-8").replace("March 15", "April 30", 1), encoding="utf-8")
        [r] = [r for r in mem.get_all("alice") if "Project A" in r.content]
        assert "April 30" in r.content
        assert "March 15" not in json.dumps(r.structured_data)
        assert "March 15" not in path.read_text(encoding="utf-8")
    finally:
        mem.close()


def test_a_filtered_search_finds_its_own_copy_of_repeated_words(tmp_path: Path):
    """The same words saved under two topics: unfiltered they show once, a filter finds its own copy."""
    mem = Memory(tmp_path)
    try:
        mem.add("Lyon", "alice", metadata={"topic": "travel"}, infer=False, dedupe=False)
        mem.add("Lyon", "alice", metadata={"topic": "work"}, infer=False, dedupe=False)
        assert [h.record.content for h in mem.search("Lyon", "alice")] == ["Lyon"]
        for topic in ("travel", "work"):
            hits = mem.search("Lyon", "alice", filters={"topic": topic})
            assert [(h.record.content, h.record.structured_data["topic"]) for h in hits] == [("Lyon", topic)]
    finally:
        mem.close()
